# Sourced by bin/test and bin/tuna: create .venv and install Tuna into it when needed.
#
#   ensure_venv_for EXTRAS      e.g. ensure_venv_for "[test]"  or  ensure_venv_for ""
#
# Expects REPO to be set and note/die functions to exist. The install is redone only when
# pyproject.toml changes (or more extras are asked for); two runs never pip-install at once.

VENV="$REPO/.venv"
STAMP="$VENV/.tuna-install-stamp"

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
    if [[ ! -x $VENV/bin/python ]]; then
        python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
            die "Python >= 3.10 is needed, python3 is $(python3 --version 2>&1)"
        note "creating .venv with $(python3 --version 2>&1)"
        python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    fi
    # The stamp records pyproject.toml's sha256, where the editable install points, and the extras.
    local base have=""
    base="$(sha256sum "$REPO/pyproject.toml" | cut -d' ' -f1) $REPO"
    [[ -f $STAMP ]] && have=$(cat "$STAMP")
    if [[ $have == "$base $extras" || $have == "$base [test]" ]]; then
        [[ ${VENV_QUIET:-0} == 1 ]] || note "up to date (pyproject.toml unchanged)"
        return 0
    fi
    note "pip install -e '.$extras'"
    # (drops the machine's harmless "Location '...' is ignored" notices about a local index directory)
    if ! (cd "$REPO" && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -e ".$extras" </dev/null 2>&1) | { grep -v "^WARNING: Location '.*' is ignored" || true; }; then
        die "pip install -e '.$extras' failed"
    fi
    printf '%s\n' "$base $extras" >"$STAMP.tmp"
    mv -f "$STAMP.tmp" "$STAMP"
}
