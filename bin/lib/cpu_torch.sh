# Sourced by bin/lib/venv.sh: install a CPU build of PyTorch into .venv before Tuna's extras.
#
#   ensure_cpu_torch [UV]       UV: the path of uv, or empty (pip then does it)
#
# The gp strategy (Optuna's Gaussian-process sampler) needs PyTorch, and [test] asks for it through
# tuna[gp]. PyPI's torch for Linux x86_64 is the CUDA build, which pulls about 4 GB of nvidia-*
# wheels; the CPU build is the same version with the local label "+cpu", and lies in two places:
#   1. a directory in pip's own configuration's find-links (on this project's machines
#      /opt/wheels holds torch-2.13.0+cpu for Python 3.11); uv does not read pip's configuration,
#      so those directories are handed to it by name;
#   2. PyTorch's own CPU index, https://download.pytorch.org/whl/cpu (where it can be reached).
# The pin's "+cpu" matches no PyPI release, so neither try can fall back on the CUDA build. torch
# goes in without its dependencies (--no-deps); the install of Tuna's extras that follows sees it
# installed (2.13.0+cpu satisfies torch>=2.1), keeps it, and brings its dependencies from PyPI.
# A .venv that has any torch already (a CUDA one someone installed on purpose) is left as it is.

TORCH_CPU="torch==2.13.0+cpu"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

ensure_cpu_torch() {
    local uv=$1 t0=$SECONDS
    if "$VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' \
        </dev/null >/dev/null 2>&1; then
        return 0
    fi
    note "$TORCH_CPU (the CPU build, for the gp strategy's tests)"
    if { [[ -n $uv ]] && _uv_cpu_torch "$uv"; } || _pip_cpu_torch; then
        note "installed in $((SECONDS - t0))s"
        return 0
    fi
    local dirs
    dirs=$(_pip_find_links | paste -sd ' ')
    die "no CPU build of PyTorch for the gp tests ($TORCH_CPU): not in pip's find-links" \
        "(${dirs:-none configured}) nor on $TORCH_CPU_INDEX (unreachable, or no such release);" \
        "put its wheel in a find-links directory, or install a torch into .venv yourself" \
        "(.venv/bin/pip install torch), then run bin/test again"
}

# The find-links directories of pip's configuration (files and PIP_FIND_LINKS), one a line.
_pip_find_links() {
    python3 -m pip config list 2>/dev/null |
        sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p" | tr ' ' '\n' | sed '/^$/d' | sort -u
}

_uv_cpu_torch() {
    local uv=$1 dir links=()
    while read -r dir; do
        [[ -d ${dir#file://} ]] && links+=(--find-links "${dir#file://}")
    done < <(_pip_find_links)
    if ((${#links[@]})) && "$uv" pip install --quiet --python "$VENV/bin/python" --no-deps \
        --no-index "${links[@]}" "$TORCH_CPU" </dev/null >/dev/null 2>&1; then
        return 0
    fi
    "$uv" pip install --quiet --python "$VENV/bin/python" --no-deps --index-url "$TORCH_CPU_INDEX" \
        "$TORCH_CPU" </dev/null >/dev/null 2>&1
}

# pip reads its find-links itself; the CPU index is an extra one (pip warns and goes on where it
# cannot be reached).
_pip_cpu_torch() {
    _quiet_pip "$VENV/bin/python" --no-deps --extra-index-url "$TORCH_CPU_INDEX" "$TORCH_CPU" \
        >/dev/null 2>&1
}
