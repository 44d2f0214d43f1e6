# Sourced by bin/test-cluster: Slurm on the test cluster, for go_fish --slurm's tests.
#
# munged and slurmctld on the head (10.77.0.1), one slurmd per worker host: each in the host's network
# namespace (`nsenter --net`: `ip netns exec` remounts /sys, and slurmd then finds no cgroup mount) and
# a UTS namespace of its own, so that node tuna-wN has its own address and host name, as a real node.
# Everything lives in DIR/slurm (config, munge key and socket, state, spool) and DIR/logs; commands find
# it through SLURM_CONF=DIR/slurm/slurm.conf (cluster.json's slurm.conf). Each node offers 4 CPUs and
# two "GPUs" (GRES), stand-in character devices (mknod c 1 3: /dev/null's numbers): Slurm hands them out
# (CUDA_VISIBLE_DEVICES) like real ones. Partitions: cpu (the default) and gpu on tuna-w2..N, all on
# every node, each placing a task on the least loaded node (LLN: a small array spreads over the nodes).
#
# Facts behind this (packages, the /sys trap, munged's socket directory mode) are in the project's
# reference/slurm.md. Uses bin/test-cluster's variables and helpers (DIR, HEAD_IP, host_name, ...).

SLURM_NEEDED=(munged:munge slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client nsenter:util-linux)
SLURM_CPUS=4
SLURM_GPUS=2

slurm_conf() { printf '%s/slurm/slurm.conf\n' "$DIR"; }
scontrol_() { SLURM_CONF=$(slurm_conf) scontrol "$@"; }
sinfo_() { SLURM_CONF=$(slurm_conf) sinfo "$@"; }

slurm_config() { # N
    local n=$1 s=$DIR/slurm i g
    mkdir -p "$s"/{state,spool,dev}
    # munged refuses a socket directory without execute permission for all (0700).
    mkdir -p -m 0755 "$s/munge"
    (umask 077 && head -c 1024 /dev/urandom >"$s/munge/munge.key")
    chmod 0400 "$s/munge/munge.key"
    for ((i = 1; i <= n; i++)); do
        for ((g = 0; g < SLURM_GPUS; g++)); do mknod "$s/dev/w$i-gpu$g" c 1 3; done
        mkdir -p "$s/spool/$(host_name "$i")"
    done
    cat >"$s/slurm.conf" <<CONF
# bin/test-cluster's Slurm (bin/lib/cluster/slurm.sh)
ClusterName=tuna-test
SlurmctldHost=$(hostname -s)($HEAD_IP)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$s/munge/munge.socket.2
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$DIR/logs/slurmctld.log
SlurmdLogFile=$DIR/logs/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
# A node down for not responding comes back when it answers again; one set DOWN by hand (a test) stays
# down until resumed (with 2 it came back within seconds, when its slurmd registered again).
ReturnToService=1
# The nodes offer what is configured here, not what the namespace sees (the machine's 2 cores).
SlurmdParameters=config_overrides
KillWait=30
NodeName=DEFAULT CPUs=$SLURM_CPUS RealMemory=2000 Gres=gpu:$SLURM_GPUS State=UNKNOWN
CONF
    : >"$s/gres.conf"
    for ((i = 1; i <= n; i++)); do
        echo "NodeName=$(host_name "$i") NodeAddr=$(host_ip "$i")" >>"$s/slurm.conf"
        echo "NodeName=$(host_name "$i") Name=gpu File=$s/dev/w$i-gpu[0-$((SLURM_GPUS - 1))]" >>"$s/gres.conf"
    done
    # The tests' partitions leave tuna-w1 out: the SSH tests cut it off and kill its containers while
    # the Slurm tests run beside them (bin/test). `all` (every node) is the benchmarks'.
    local nodes=ALL
    ((n >= 3)) && nodes="tuna-w[2-$n]"
    cat >>"$s/slurm.conf" <<CONF
PartitionName=cpu Nodes=$nodes Default=YES MaxTime=INFINITE State=UP LLN=YES
PartitionName=gpu Nodes=$nodes MaxTime=INFINITE State=UP LLN=YES
PartitionName=all Nodes=ALL MaxTime=INFINITE State=UP LLN=YES
CONF
}

munged_start() {
    local s=$DIR/slurm
    # --force: DIR (mktemp -d) is 0700, and munged wants every directory above its socket open to all;
    # only root uses this munged.
    munged --foreground --force --socket="$s/munge/munge.socket.2" --pid-file="$s/munge/munged.pid" \
        --key-file="$s/munge/munge.key" --seed-file="$s/munge/munge.seed" \
        --log-file="$DIR/logs/munged.log" </dev/null >>"$DIR/logs/munged.log" 2>&1 &
    echo $! >"$DIR/pids/munged"
}

slurmctld_start() {
    # No -c: a restart recovers the queue from StateSaveLocation, as a site's slurmctld does.
    SLURM_CONF=$(slurm_conf) slurmctld -D </dev/null >>"$DIR/logs/slurmctld.out" 2>&1 &
    echo $! >"$DIR/pids/slurmctld"
}

slurmctld_pid() { pid_from "$DIR/pids/slurmctld" slurmctld; }

slurmd_start() { # I
    local i=$1 name
    name=$(host_name "$i")
    # $! is slurmd itself: nsenter, unshare and sh each exec the next.
    SLURM_CONF=$(slurm_conf) nsenter --net="/run/netns/$name" unshare --uts \
        sh -c 'hostname "$1" && exec slurmd -D -N "$1"' _ "$name" \
        </dev/null >>"$DIR/logs/slurmd-$name.out" 2>&1 &
    echo $! >"$DIR/pids/slurmd-w$i"
}

slurm_up() { # N: the daemons (the nodes register while the rest of the cluster comes up)
    local n=$1 i
    slurm_config "$n"
    munged_start
    wait_until 10 munged test -S "$DIR/slurm/munge/munge.socket.2" || {
        show_log "$DIR/logs/munged.log"
        die "munged did not come up (log above)"
    }
    slurmctld_start
    for ((i = 1; i <= n; i++)); do slurmd_start "$i"; done
}

slurm_ready() { # N: every node idle
    [[ $(sinfo_ -h -N -p all -t idle -o %N 2>/dev/null | sort -u | grep -c .) -eq $1 ]]
}

slurm_wait() { # N
    wait_until 60 "slurm nodes" slurm_ready "$1" || {
        show_log "$DIR/logs/slurmctld.log"
        sinfo_ -N -l >&2 || true
        die "the Slurm nodes did not all come up idle (log above)"
    }
}

slurmctld_restart() {
    local pid
    if pid=$(slurmctld_pid); then stop_pids 30 "$pid" || die "slurmctld (pid $pid) would not stop"; fi
    slurmctld_start
    wait_until 30 slurmctld scontrol_ ping || {
        show_log "$DIR/logs/slurmctld.log"
        die "slurmctld did not come back (log above)"
    }
}

# Part of teardown: slurmd first (its slurmstepd end the jobs' processes), then slurmctld and munged.
slurm_down() {
    local n=$1 i pid pids=()
    for ((i = 1; i <= n; i++)); do
        pid=$(pid_from "$DIR/pids/slurmd-w$i" "slurmd -D -N $(host_name "$i")") && pids+=("$pid")
    done
    if ((${#pids[@]})); then stop_pids 15 "${pids[@]}" || note "some slurmd did not stop"; fi
    pids=()
    pid=$(slurmctld_pid) && pids+=("$pid")
    pid=$(pid_from "$DIR/pids/munged" "$DIR/slurm/munge") && pids+=("$pid")
    if ((${#pids[@]})); then stop_pids 15 "${pids[@]}" || note "slurmctld or munged did not stop"; fi
}

slurm_status() { # N; prints a line per daemon, returns 1 if any is down
    local n=$1 ok=0 i state
    if slurmctld_pid >/dev/null && scontrol_ ping >/dev/null 2>&1; then
        echo "slurmctld   up    pid $(slurmctld_pid), SLURM_CONF=$(slurm_conf)"
    else
        echo "slurmctld   DOWN"
        ok=1
    fi
    for ((i = 1; i <= n; i++)); do
        state=$(sinfo_ -h -N -n "$(host_name "$i")" -o %T 2>/dev/null | head -n 1)
        if pid_from "$DIR/pids/slurmd-w$i" "slurmd -D -N $(host_name "$i")" >/dev/null; then
            printf '%-11s %-5s slurmd, node %s\n' "$(host_name "$i")" up "${state:-unknown}"
        else
            printf '%-11s %-5s slurmd\n' "$(host_name "$i")" DOWN
            ok=1
        fi
    done
    return "$ok"
}
