#!/bin/sh
# Boot one worker "host" of the test cluster. bin/test-cluster runs it as
#
#   ip netns exec tuna-wN unshare --uts sh worker_boot.sh DIR NAME BIP LOGDIR
#
# i.e. already inside the host's network namespace, a fresh UTS namespace (its own hostname) and the
# private mount namespace that `ip netns exec` makes. It gives the host its own /run (so a plain
# `docker` in an SSH session talks to this host's engine, and the engine's containerd does not collide
# with the others'), its own /var/lib/docker, its own dockerd, and ends as sshd in the foreground: the PID
# bin/test-cluster recorded for this script is sshd's.
#
#   DIR     the host's directory (sshd_config, var-lib-docker/, docker.sock, dockerd.pid)
#   NAME    hostname, e.g. tuna-w1
#   BIP     the engine's bridge address, e.g. 172.30.1.1/24
#   LOGDIR  where dockerd-NAME.log goes
set -eu
W=$1
NAME=$2
BIP=$3
LOGDIR=$4

hostname "$NAME"
# Mounts made here must not propagate back to the machine's namespace.
mount --make-rprivate /
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/sshd # sshd's privilege separation directory, required
mkdir -p /var/lib/docker # docker.io normally makes it; the bind mount needs it
mount --bind "$W/var-lib-docker" /var/lib/docker
# `ip netns exec` remounts /sys for the namespace, which hides the cgroup hierarchies dockerd needs.
cgroupfs-mount

# Its own iptables rules (NAT for containers on its bridge) live in this namespace only and vanish with it.
/usr/sbin/dockerd --bip "$BIP" --pidfile "$W/dockerd.pid" \
    -H unix:///run/docker.sock -H "unix://$W/docker.sock" \
    </dev/null >"$LOGDIR/dockerd-$NAME.log" 2>&1 &
echo $! >"$W/dockerd.bgpid"

exec /usr/sbin/sshd -D -e -f "$W/sshd_config"
