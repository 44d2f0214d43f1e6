# Sourced by bin/test-cluster: finding and stopping the daemons it started.
#
# The daemons outlive the script that starts them and are re-parented to a PID 1 that is not an init
# (it reaps late), so a PID alone proves little: a process counts as ours only while it is alive, not a
# zombie, and its command line still names the cluster's directory.

# A zombie counts as gone.
alive() {
    local pid=$1
    [[ $pid =~ ^[0-9]+$ && -e /proc/$pid ]] || return 1
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# running NAME: a live (not zombie) process of that name exists, ours or not.
running() {
    local pid
    for pid in $(pgrep -x "$1"); do alive "$pid" && return 0; done
    return 1
}

cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# pid_from FILE MATCH: the PID recorded in FILE, if that process is alive and its command line contains
# MATCH (so a recycled PID is never taken for ours).
pid_from() {
    local file=$1 match=$2 pid
    [[ -f $file ]] || return 1
    pid=$(<"$file") || return 1
    alive "$pid" || return 1
    [[ $(cmdline "$pid") == *"$match"* ]] || return 1
    printf '%s\n' "$pid"
}

# stop_pids TIMEOUT PID...: TERM them all, wait up to TIMEOUT seconds, then KILL the survivors.
stop_pids() {
    local timeout=$1 pid any
    shift
    (($#)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    local deadline=$((SECONDS + timeout))
    while ((SECONDS < deadline)); do
        any=0
        for pid in "$@"; do alive "$pid" && any=1 && break; done
        ((any)) || return 0
        sleep 0.1
    done
    for pid in "$@"; do
        if alive "$pid"; then
            note "pid $pid ($(cmdline "$pid" | cut -c1-80)) ignored SIGTERM for ${timeout}s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    deadline=$((SECONDS + 10))
    while ((SECONDS < deadline)); do
        any=0
        for pid in "$@"; do alive "$pid" && any=1 && break; done
        ((any)) || return 0
        sleep 0.1
    done
    return 1
}

# wait_until TIMEOUT WHAT CMD...: run CMD every 0.1 s until it succeeds; fail after TIMEOUT seconds.
wait_until() {
    local timeout=$1 what=$2
    shift 2
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || {
            note "$what: not ready after ${timeout}s"
            return 1
        }
        sleep 0.1
    done
}

# A TCP connect from the machine's namespace (no ping/nc on these machines).
tcp_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }
