# Sourced by bin/test-cluster: taking a cluster down, also one that is half built or damaged (an engine
# killed, a host cut off, containers left running). Uses bin/test-cluster's variables and helpers.
#
# Order: Slurm, engines (they stop their containers and containerd), sshd and whatever else runs in the hosts'
# namespaces, MariaDB, strays; then mounts, the network, and DIR itself.

# True when the machine's cluster network is this DIR's: the owner file names it, or this DIR made the
# network and the owner file is gone (or names a cluster that no longer exists). A network this DIR
# never made is never touched, whoever made it.
owns_network() {
    local owner
    owner=$(cat "$OWNER_FILE" 2>/dev/null || true)
    [[ $owner == "$DIR" ]] && return 0
    [[ -f $DIR/network-claimed ]] && [[ -z $owner || ! -f $owner/$MARKER ]]
}

# Daemons (and their helpers) whose command line names DIR: what is left if an engine had to be killed.
stray_pids() {
    local p exe
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [[ $p == "$$" ]] && continue
        exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
        case ${exe##*/} in
        dockerd | containerd | containerd-shim* | runc | sshd | mariadbd) ;;
        *) continue ;;
        esac
        [[ $(cmdline "$p") == *"$DIR/"* ]] && alive "$p" && echo "$p"
    done
    return 0
}

# The cgroup directories of this cluster's containers (cgroupfs driver, parent /docker; v1 or v2), by the
# container IDs in the engines' data roots.
container_cgroups() {
    local d id
    for d in "$DIR"/w*/var-lib-docker/containers "$DIR"/host/data/containers; do
        [[ -d $d ]] || continue
        for id in $(ls -- "$d"); do
            compgen -G "/sys/fs/cgroup/*/docker/$id" || true
            compgen -G "/sys/fs/cgroup/docker/$id" || true
        done
    done
}

# A container whose engine had to be killed lives on (its shim is in the host's namespace, but the
# container has its own): kill what is left in its cgroups and remove them.
kill_orphaned_containers() {
    local cgs=() pids=() cg
    mapfile -t cgs < <(container_cgroups)
    ((${#cgs[@]})) || return 0
    mapfile -t pids < <(cat "${cgs[@]/%//cgroup.procs}" 2>/dev/null | sort -u)
    if ((${#pids[@]})); then
        note "killing ${#pids[@]} process(es) of containers whose engine is gone"
        kill -KILL "${pids[@]}" 2>/dev/null || true
        stop_pids 10 "${pids[@]}" || true
    fi
    for cg in "${cgs[@]}"; do
        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
}

teardown() {
    local n i pids=() pid w
    n=$(hosts_of_dir)
    n=${n:-0}

    # 1. Slurm (its slurmstepd end the jobs' processes), then the engines: they stop their containers and
    #    their containerd.
    slurm_down "$n"
    for ((i = 1; i <= n; i++)); do
        pid=$(pid_from "$(host_dir "$i")/dockerd.bgpid" "$(host_dir "$i")/docker.sock") && pids+=("$pid")
    done
    pid=$(pid_from "$DIR/pids/dockerd-head" "$DIR/host/docker.sock") && pids+=("$pid")
    if ((${#pids[@]})); then
        stop_pids 40 "${pids[@]}" || note "some Docker engine did not stop"
        ts "down: ${#pids[@]} Docker engine(s) stopped"
    fi

    # 2. sshd, then whatever still runs inside the hosts' namespaces (SSH sessions, a killed engine's shims).
    pids=()
    for ((i = 1; i <= n; i++)); do
        pid=$(pid_from "$DIR/pids/sshd-w$i" "$(host_dir "$i")/sshd_config") && pids+=("$pid")
    done
    if ((${#pids[@]})); then stop_pids 10 "${pids[@]}" || true; fi
    if owns_network; then
        for ((i = 1; i <= n; i++)); do
            mapfile -t pids < <(ip netns pids "$(host_name "$i")" 2>/dev/null || true)
            if ((${#pids[@]})); then
                note "$(host_name "$i"): stopping ${#pids[@]} leftover process(es)"
                stop_pids 3 "${pids[@]}" || true
            fi
        done
    fi

    # 3. The database, then anything else of ours that survived.
    db_stop || true
    kill_orphaned_containers
    mapfile -t pids < <(stray_pids)
    if ((${#pids[@]})); then
        note "stopping leftover processes: ${pids[*]}"
        stop_pids 3 "${pids[@]}" || true
    fi

    ts "down: sshd, MariaDB and leftovers stopped"

    # 4. Mounts under DIR (the head engine's netns file and overlays), deepest first.
    local m
    while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || note "cannot unmount $m"
    done < <(awk -v d="$DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)

    # 5. The network.
    if owns_network; then
        if [[ -f $DIR/iptables-forward-rule ]]; then
            iptables -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment tuna-test-cluster \
                -j ACCEPT 2>/dev/null || true
        fi
        local ns
        while read -r ns; do
            [[ -n $ns ]] && ip netns del "$ns" 2>/dev/null || true
        done < <(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E '^tuna-w[0-9]+$' || true)
        while read -r w; do
            [[ -n $w ]] && ip link del "$w" 2>/dev/null || true
        done < <(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
            grep -E '^veth-w[0-9]+$' || true)
        ip link del "$BRIDGE" 2>/dev/null || true
        # `ip netns add` bind-mounts /run/netns onto itself; with no namespace left it is ours to undo.
        if [[ -z $(ip netns list 2>/dev/null) ]] && mountpoint -q /run/netns; then
            umount /run/netns 2>/dev/null || true
        fi
        rm -f "$OWNER_FILE"
    elif [[ -n $(cluster_links) ]]; then
        note "the cluster network is not this cluster's (owner: $(cat "$OWNER_FILE" 2>/dev/null ||
            echo unknown)); left alone"
    fi
    # What every engine leaves on the machine, once no engine runs at all (ours use --bridge=none; an
    # engine that ran with its defaults leaves docker0): the run directories and the `docker` cgroups.
    if ! running dockerd && ! running containerd; then
        ip link del docker0 2>/dev/null || true
        rmdir /run/docker/plugins /run/docker /run/containerd/s /run/containerd 2>/dev/null || true
        rmdir /sys/fs/cgroup/*/docker 2>/dev/null || true
    fi

    # 6. DIR itself, unless something is still mounted there (rm would descend into it).
    if [[ -d $DIR ]]; then
        if grep -qF " $DIR/" /proc/mounts; then
            note "still mounted under $DIR, not removing it:"
            grep -F " $DIR/" /proc/mounts >&2
            return 1
        fi
        rm -rf -- "$DIR"
    fi
}
