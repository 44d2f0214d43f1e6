"""The fleet's errors: one family under :class:`FleetError`."""

from __future__ import annotations

from tuna.errors import TunaError


class FleetError(TunaError):
    """Raised when work on the fleet's machines fails: a host over SSH
    (:class:`~tuna.fleet.ssh.SshError`), some hosts of a fan-out, reported once
    (:class:`~tuna.fleet.fanout.HostsFailedError`), or the site's Slurm
    (:class:`~tuna.fleet.slurm_client.SlurmError`)."""
