"""Running workers: on this machine now; over SSH and Docker on a fleet (next)."""
