# Sourced by bin/test and bin/tuna: create .venv and install Tuna into it when needed.
#
#   ensure_venv_for EXTRAS      e.g. ensure_venv_for "[test]"  or  ensure_venv_for ""
#
# Expects REPO to be set and note/die functions to exist. The install is redone only when
# pyproject.toml changes (or more extras are asked for); two runs never pip-install at once.
#
# Extras that bring torch ([test], through tuna[gp]; or [gp]) first get its CPU build
# (bin/lib/cpu_torch.sh), instead of PyPI's CUDA build of several GB.
#
# uv makes the venv and installs into it where it can (8-15 s on a fresh clone instead of pip's
# 45-100 s): it is pip-installed once into .tuna-test/uv (`pip install --target`). Where that
# fails (no PyPI, only a mirror that pip's own configuration names, a python3 without pip) or
# uv does, `python3 -m venv` and pip do the work as before. TUNA_VENV_PIP=1 skips uv.

VENV="$REPO/.venv"
STAMP="$VENV/.tuna-install-stamp"

# shellcheck source=bin/lib/cpu_torch.sh
source "$REPO/bin/lib/cpu_torch.sh"

ensure_venv_for() {
    local extras=$1 venv_lock
    mkdir -p "$REPO/.tuna-test"
    exec {venv_lock}>"$REPO/.tuna-test/venv.lock"
    if command -v flock >/dev/null 2>&1; then flock "$venv_lock"; fi
    _ensure_venv_locked "$extras"
    exec {venv_lock}>&-
}

_ensure_venv_locked() {
    local extras=$1
    command -v python3 >/dev/null 2>&1 || die "python3 not found"
    if [[ -x $VENV/bin/python ]] && ! "$VENV/bin/python" -c 'pass' >/dev/null 2>&1; then
        note "existing .venv is broken (its interpreter moved?): recreating it"
        rm -rf -- "$VENV"
    fi
    local uv=""
    if [[ ! -x $VENV/bin/python ]]; then
        python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
            die "Python >= 3.10 is needed, python3 is $(python3 --version 2>&1)"
        note "creating .venv with $(python3 --version 2>&1)"
        uv=$(_uv) || uv=""
        if [[ -z $uv ]] || ! "$uv" venv --quiet --seed --python "$(command -v python3)" "$VENV" \
            </dev/null >/dev/null 2>&1; then
            rm -rf -- "$VENV"
            python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
        fi
    fi
    # The stamp records pyproject.toml's sha256, where the editable install points, the torch pin
    # and the extras.
    local base have=""
    base="$(sha256sum "$REPO/pyproject.toml" | cut -d' ' -f1) $REPO $TORCH_CPU"
    [[ -f $STAMP ]] && have=$(cat "$STAMP")
    if [[ $have == "$base $extras" || $have == "$base [test]" ]]; then
        [[ ${VENV_QUIET:-0} == 1 ]] || note "up to date (pyproject.toml unchanged)"
        return 0
    fi
    [[ -n $uv ]] || uv=$(_uv) || uv=""
    if [[ $extras == *test* || $extras == *gp* ]]; then ensure_cpu_torch "$uv"; fi
    if [[ -z $uv ]] || ! _uv_install "$uv" "$extras"; then
        note "pip install -e '.$extras'"
        _quiet_pip "$VENV/bin/python" -e ".$extras" || die "pip install -e '.$extras' failed"
    fi
    printf '%s\n' "$base $extras" >"$STAMP.tmp"
    mv -f "$STAMP.tmp" "$STAMP"
}

# pip install, quiet (drops the machine's harmless "Location '...' is ignored" notices about a local
# index directory): _quiet_pip PYTHON PIP-INSTALL-ARGS...
_quiet_pip() {
    local python=$1
    shift
    (cd "$REPO" && "$python" -m pip install --quiet --disable-pip-version-check "$@" </dev/null 2>&1) |
        { grep -v "^WARNING: Location '.*' is ignored" || true; }
    return "${PIPESTATUS[0]}"
}

# Prints the path of the uv in .tuna-test/uv, pip-installing it there first if need be; fails
# quietly where it cannot be had (pip then does the work).
_uv() {
    local dir="$REPO/.tuna-test/uv"
    [[ ${TUNA_VENV_PIP:-0} != 1 ]] || return 1
    if [[ ! -x $dir/bin/uv ]] || ! "$dir/bin/uv" --version >/dev/null 2>&1; then
        rm -rf -- "$dir"
        _quiet_pip python3 --target "$dir" uv >/dev/null 2>&1 && [[ -x $dir/bin/uv ]] || {
            rm -rf -- "$dir"
            note "uv could not be installed (pip install --target $dir uv): using pip" >&2
            return 1
        }
    fi
    printf '%s\n' "$dir/bin/uv"
}

# uv pip install -e ".EXTRAS" into .venv: _uv_install UV EXTRAS. Fails, saying why, where pip must
# do it instead.
_uv_install() {
    local uv=$1 extras=$2 log
    note "uv pip install -e '.$extras'"
    log=$(mktemp "${TMPDIR:-/tmp}/tuna-uv.XXXXXX")
    if (cd "$REPO" && "$uv" pip install --quiet --python "$VENV/bin/python" -e ".$extras" \
        </dev/null >"$log" 2>&1); then
        rm -f -- "$log"
        return 0
    fi
    tail -n 5 "$log" | sed 's/^/      /' >&2
    rm -f -- "$log"
    note "uv pip install failed (above): using pip"
    return 1
}
