#!/usr/bin/env bash
# Build Tuna's worker image (docker/Dockerfile.worker) from this checkout, with no registry needed.
#
#   bin/build_docker.sh [--tag T] [--base B] [--refresh-base] [--python PY] [--examples] [--cuda]
#   bin/build_docker.sh --rootfs-only          # only make (or find) the cached base rootfs; print its path
#   bin/build_docker.sh --base-only            # only import tuna-base:local into the engine
#
# Run with --help for the details. Talks to the engine the docker CLI would (DOCKER_HOST, default socket).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOCAL_BASE=tuna-base:local
# What the base rootfs holds, besides Debian's minbase: Python for Tuna, a C toolchain for cpuconv.
BASE_PACKAGES=python3,gcc,libc6-dev
# What examples/server_tuning runs, with --examples: a MariaDB server under sysbench.
EXAMPLE_PACKAGES="mariadb-server sysbench"
SUITE=bookworm # Python 3.11 / glibc 2.36: the ABI of the wheels in pylib (see python_tags below)
ROOTFS_FORMAT=1 # bump when the way the rootfs is made changes, so old cached tarballs are not used

usage() {
    cat <<'EOF'
usage: bin/build_docker.sh [--tag T] [--base B] [--refresh-base] [--python PY] [--examples] [--cuda]
       bin/build_docker.sh --rootfs-only [--refresh-base]
       bin/build_docker.sh --base-only [--refresh-base]

Builds the Tuna worker image: Tuna (a wheel built from this checkout) and all its runtime
dependencies installed under /opt/tuna/pylib, a `tuna` command, Python 3.11 and gcc.

  --tag T          image tag to build (default: tuna-worker:latest)
  --base B         base image (default: tuna-base:local). tuna-base:local is made here when the
                   engine lacks it: a Debian bookworm minbase rootfs with python3, gcc and
                   libc6-dev, built with mmdebstrap (or debootstrap) from this machine's apt
                   mirror and `docker import`ed; the build then needs no network at all.
                   Any other base (e.g. debian:bookworm-slim) is pulled by the engine.
  --refresh-base   rebuild the cached rootfs and re-import tuna-base:local
  --rootfs-only    only make sure the base rootfs tarball exists; print its path
  --base-only      only make sure the engine has tuna-base:local (imported from that tarball)
  --python PY      interpreter whose pip builds the wheel (default: .venv/bin/python, else python3)
  --examples       also install the tools examples/server_tuning runs (Debian's mariadb-server and
                   sysbench). With tuna-base:local their .deb files (those the base lacks) are
                   fetched here with apt-get, cached beside the rootfs, and installed from those files
                   in the (still offline) build; another base installs them with apt-get.
  --cuda           the CUDA worker image (default tag tuna-worker-cuda:latest): also the cuda
                   extra's wheels (cuda-bindings, NVIDIA's NVRTC), so its workers compile cubins
                   with no CUDA install and evaluate them on the host's GPUs (go_fish runs them with
                   `--gpus device=N`; the driver, libcuda, comes from the host). Still offline.
  -h, --help       this help

Environment:
  DOCKER_HOST          engine to build in (e.g. unix:///tmp/tc.x/host/docker.sock)
  TUNA_CI_CACHE        where base rootfs tarballs are cached (default /var/cache/tuna-ci as root,
                       else ~/.cache/tuna-ci); one tarball per package list + mirror + suite
  TUNA_DEBIAN_MIRROR   Debian mirror for the rootfs (default: the first non-security URI of
                       /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list)

Examples:
  bin/build_docker.sh --tag tuna-worker:dev
  DOCKER_HOST=unix:///tmp/tc.ab12/host/docker.sock bin/build_docker.sh --tag tuna-worker:ci
  docker run --rm tuna-worker:dev tuna worker --help
EOF
}

ts() { printf '[%s] build_docker: %s\n' "$(date +%T)" "$*" >&2; }
die() {
    printf 'build_docker: error: %s\n' "$*" >&2
    exit 1
}

TAG=""
BASE=$LOCAL_BASE
REFRESH=0
ROOTFS_ONLY=0
BASE_ONLY=0
PYTHON=""
EXAMPLES=0
EXTRAS=""
while (($#)); do
    case $1 in
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --base) BASE=${2:?--base needs a value}; shift 2 ;;
    --python) PYTHON=${2:?--python needs a value}; shift 2 ;;
    --refresh-base) REFRESH=1; shift ;;
    --rootfs-only) ROOTFS_ONLY=1; shift ;;
    --base-only) BASE_ONLY=1; shift ;;
    --examples) EXAMPLES=1; shift ;;
    --cuda) EXTRAS=cuda; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
if [[ -z $TAG ]]; then
    TAG=tuna-worker${EXTRAS:+-$EXTRAS}:latest
fi

# --- base rootfs (cached) -----------------------------------------------------------------------------------

debian_mirror() {
    if [[ -n ${TUNA_DEBIAN_MIRROR:-} ]]; then
        printf '%s\n' "$TUNA_DEBIAN_MIRROR"
        return
    fi
    local m=""
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        m=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
    fi
    if [[ -z $m && -f /etc/apt/sources.list ]]; then
        # `deb [options] URI suite components`: the first http(s) field of a non-security line
        m=$(awk '$1 == "deb" && !/security/ {
                    for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)
    fi
    printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

cache_dir() {
    if [[ -n ${TUNA_CI_CACHE:-} ]]; then
        printf '%s\n' "$TUNA_CI_CACHE"
    elif [[ $(id -u) -eq 0 ]]; then
        printf '/var/cache/tuna-ci\n'
    else
        printf '%s/tuna-ci\n' "${XDG_CACHE_HOME:-$HOME/.cache}"
    fi
}

# The tarball a given tool + packages + mirror + suite produce; a warm machine finds it and skips the
# minute-long bootstrap.
rootfs_tool() {
    if command -v mmdebstrap >/dev/null 2>&1; then
        echo mmdebstrap
    elif command -v debootstrap >/dev/null 2>&1 || [[ -x /usr/sbin/debootstrap ]]; then
        echo debootstrap
    else
        die "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)"
    fi
}

rootfs_path() { # tool mirror
    local key
    key=$(printf 'format=%s tool=%s suite=%s variant=minbase packages=%s mirror=%s\n' \
        "$ROOTFS_FORMAT" "$1" "$SUITE" "$BASE_PACKAGES" "$2" | sha256sum | cut -c1-16)
    printf '%s/rootfs-%s-%s.tar\n' "$(cache_dir)" "$SUITE" "$key"
}

make_rootfs() { # tool mirror out
    local tool=$1 mirror=$2 out=$3 tmp
    tmp="$out.tmp.$$"
    rm -f -- "$tmp"
    # Stopped half-way (a failed `bin/test-cluster up` sends TERM): leave no partial tarball.
    trap 'rm -rf -- "$tmp" "$out.root.$$"; exit 143' TERM INT
    if [[ $tool == mmdebstrap ]]; then
        # Writes the tarball directly. Docs, man pages and translations are left out (leaner image);
        # apt lists and caches are cleaned by mmdebstrap itself.
        mmdebstrap --variant=minbase --format=tar --include="$BASE_PACKAGES" \
            --aptopt='APT::Install-Recommends "false"' \
            --dpkgopt='path-exclude=/usr/share/man/*' \
            --dpkgopt='path-exclude=/usr/share/doc/*' \
            --dpkgopt='path-include=/usr/share/doc/*/copyright' \
            --dpkgopt='path-exclude=/usr/share/info/*' \
            --dpkgopt='path-exclude=/usr/share/locale/*' \
            --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"' \
            "$SUITE" "$tmp" "$mirror" </dev/null || {
            rm -f -- "$tmp"
            return 1
        }
    else
        [[ $(id -u) -eq 0 ]] || die "debootstrap needs root (or install mmdebstrap, which does not)"
        local root="$out.root.$$"
        rm -rf -- "$root"
        if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$root" "$mirror" \
            </dev/null; then
            rm -rf -- "$root"
            return 1
        fi
        chroot "$root" apt-get clean
        # resolv.conf is a copy of this machine's resolver; docker provides its own
        rm -rf -- "$root"/var/lib/apt/lists/* "$root/etc/resolv.conf" \
            "$root"/usr/share/{doc,man,info,locale}/*
        tar --numeric-owner -C "$root" -cf "$tmp" . || {
            rm -rf -- "$root" "$tmp"
            return 1
        }
        rm -rf -- "$root"
    fi
    mv -f -- "$tmp" "$out"
}

# Prints the path of the (possibly just built) rootfs tarball.
ensure_rootfs() {
    local tool mirror out lock
    tool=$(rootfs_tool)
    mirror=$(debian_mirror)
    out=$(rootfs_path "$tool" "$mirror")
    mkdir -p -- "$(dirname "$out")"
    # Two builds at once would both bootstrap; the second waits and then finds the tarball.
    exec {lock}>"$out.lock"
    flock "$lock"
    # Holding the lock, any half-written tarball is from a build that died.
    rm -f -- "$out".tmp.*
    if [[ $REFRESH == 1 || ! -s $out ]]; then
        ts "building the base rootfs with $tool ($SUITE minbase + $BASE_PACKAGES from $mirror)"
        local t0=$SECONDS
        make_rootfs "$tool" "$mirror" "$out" >&2 || die "$tool failed (output above)"
        printf 'tool=%s\nsuite=%s\npackages=%s\nmirror=%s\nbuilt=%s\n' \
            "$tool" "$SUITE" "$BASE_PACKAGES" "$mirror" "$(date -Is)" >"${out%.tar}.info"
        ts "base rootfs built in $((SECONDS - t0))s: $out ($(du -h "$out" | cut -f1))"
    else
        ts "base rootfs cached: $out"
    fi
    exec {lock}>&-
    printf '%s\n' "$out"
}

# The examples' packages that the base rootfs lacks, as .deb files: apt-get resolves them against the
# rootfs's own dpkg status (this machine's apt sources and lists), so dpkg can install them offline.
ensure_example_debs() { # rootfs -> prints the directory of .deb files
    local rootfs=$1 dir lock status
    dir="${rootfs%.tar}.debs-$(printf '%s\n' "$EXAMPLE_PACKAGES" | sha256sum | cut -c1-12)"
    exec {lock}>"$dir.lock"
    flock "$lock"
    if ! compgen -G "$dir/*.deb" >/dev/null; then
        ts "fetching $EXAMPLE_PACKAGES (and what the base lacks of their dependencies) with apt-get"
        rm -rf -- "$dir.tmp"
        mkdir -p -- "$dir.tmp/partial" "$dir.tmp/state"
        tar -xOf "$rootfs" ./var/lib/dpkg/status >"$dir.tmp/state/status" ||
            die "no dpkg status in $rootfs"
        # shellcheck disable=SC2086 # a list of package names
        apt-get install --download-only -y -q --no-install-recommends \
            -o Dir::State::status="$dir.tmp/state/status" -o Dir::Cache::archives="$dir.tmp" \
            -o Debug::NoLocking=1 $EXAMPLE_PACKAGES >&2 ||
            die "apt-get could not fetch $EXAMPLE_PACKAGES (apt-get update first?)"
        rm -rf -- "$dir.tmp/partial" "$dir.tmp/state" "$dir.tmp/lock" "$dir"
        mv -- "$dir.tmp" "$dir"
    fi
    exec {lock}>&-
    printf '%s\n' "$dir"
}

if [[ $ROOTFS_ONLY == 1 ]]; then
    ensure_rootfs
    exit 0
fi

# --- the image ----------------------------------------------------------------------------------------------

command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    die "no Docker engine answers at ${DOCKER_HOST:-the default socket}"

import_base() {
    local rootfs
    rootfs=$(ensure_rootfs)
    ts "importing $rootfs as $LOCAL_BASE"
    # An imported image has no config at all: give it the usual PATH.
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' \
        "$rootfs" "$LOCAL_BASE" >/dev/null
}

need_import=0
if [[ $BASE == "$LOCAL_BASE" || $BASE_ONLY == 1 ]]; then
    if [[ $REFRESH == 1 ]] || ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then need_import=1; fi
fi
if [[ $BASE_ONLY == 1 ]]; then
    ((need_import)) && import_base
    exit 0
fi
# The import runs while the wheel and the context are made; the build waits for it.
import_pid=""
if ((need_import)); then
    import_base &
    import_pid=$!
fi

if [[ -z $PYTHON ]]; then
    if [[ -x $REPO/.venv/bin/python ]]; then PYTHON=$REPO/.venv/bin/python; else PYTHON=python3; fi
fi

CTX=$(mktemp -d "${TMPDIR:-/tmp}/tuna-image.XXXXXX")
trap 'rm -rf -- "$CTX"' EXIT
trap 'exit 143' TERM # so that the EXIT trap runs when a failed `bin/test-cluster up` stops us
trap 'exit 130' INT
# pip's temporary directories too, so that nothing is left in /tmp when we are stopped half-way.
mkdir "$CTX/tmp"
export TMPDIR="$CTX/tmp"

# pip's "Location '...' is ignored" notices about a local index directory on some machines are noise.
quiet_pip() {
    "$PYTHON" -m pip --disable-pip-version-check -q "$@" 2>&1 |
        { grep -v "^WARNING: Location '.*' is ignored" || true; }
}

# Tuna's wheel, built with hatchling from a cached --target directory (no build isolation): pip's
# isolated build installs hatchling into a fresh environment every time, 10-20 s of the build.
ensure_build_backend() { # -> prints a directory to put on PYTHONPATH
    local requires key dir lock
    requires=$("$PYTHON" - "$REPO/pyproject.toml" <<'PY'
import sys
try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))
PY
    ) || die "cannot read build-system.requires from $REPO/pyproject.toml"
    key=$(printf '%s %s\n' "$requires" "$("$PYTHON" -c 'import sys; print(sys.version_info[:2])')" |
        sha256sum | cut -c1-12)
    dir="$(cache_dir)/build-backend-$key"
    mkdir -p -- "$(cache_dir)"
    exec {lock}>"$dir.lock"
    flock "$lock"
    if [[ ! -d $dir ]]; then
        rm -rf -- "$dir.tmp"
        # shellcheck disable=SC2086 # a list of requirements
        quiet_pip install --target "$dir.tmp" $requires >&2 || die "pip could not install $requires"
        mv -- "$dir.tmp" "$dir"
    fi
    exec {lock}>&-
    printf '%s\n' "$dir"
}

# Wheels for the image's interpreter (CPython 3.11 on glibc 2.36), whatever Python runs this script:
# pip needs every manylinux level spelled out, it does not expand manylinux_2_36 to the older ones.
python_tags=(--python-version 3.11 --implementation cp --abi cp311 --only-binary=:all:)
for minor in $(seq 36 -1 17); do python_tags+=(--platform "manylinux_2_${minor}_x86_64"); done
python_tags+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

# Tuna's runtime dependencies for the image (`pip install --target`), cached per dependency list, pip
# configuration (its index, find-links and constraints) and platform: a warm machine runs no pip for
# them, and the image's dependency layer stays the same from build to build. Like a lock file, a
# cached set is kept when the index gains newer versions; --refresh-base makes it again.
ensure_deps() { # -> prints the directory
    local deps key dir lock constraint
    deps=$("$PYTHON" - "$REPO/pyproject.toml" $EXTRAS <<'PY'
import sys
try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = [d for e in sys.argv[2:] for d in project["optional-dependencies"][e]]
print("\n".join(project["dependencies"] + extras))
PY
    ) || die "cannot read project.dependencies from $REPO/pyproject.toml"
    key=$({
        printf 'format=1\n%s\n%s\n' "$deps" "${python_tags[*]}"
        "$PYTHON" -m pip config list 2>/dev/null || true
        env | grep '^PIP_' | sort || true
        for constraint in $("$PYTHON" -m pip config list 2>/dev/null |
            sed -n "s/^[a-z:.]*constraint='\(.*\)'$/\1/p") ${PIP_CONSTRAINT:-}; do
            cat -- "$constraint" 2>/dev/null || true
        done
    } | sha256sum | cut -c1-12)
    dir="$(cache_dir)/pylib-deps-$key"
    mkdir -p -- "$(cache_dir)"
    exec {lock}>"$dir.lock"
    flock "$lock"
    [[ $REFRESH == 1 ]] && rm -rf -- "$dir"
    if [[ ! -d $dir ]]; then
        ts "installing Tuna's dependencies for the image ($(echo "$deps" | paste -sd' '))"
        rm -rf -- "$dir.tmp"
        mapfile -t deps < <(printf '%s\n' "$deps")
        quiet_pip install --target "$dir.tmp" "${python_tags[@]}" "${deps[@]}" >&2 ||
            die "pip could not install Tuna's dependencies"
        # pip's console scripts point at this machine's interpreter: of no use in the image.
        rm -rf -- "$dir.tmp/bin"
        mv -- "$dir.tmp" "$dir"
    else
        ts "Tuna's dependencies cached: $dir"
    fi
    exec {lock}>&-
    printf '%s\n' "$dir"
}

ts "building Tuna's wheel from $REPO"
backend=$(ensure_build_backend)
(cd "$REPO" && PYTHONPATH="$backend" "$PYTHON" -c \
    'import sys, hatchling.build as b; b.build_wheel(sys.argv[1])' "$CTX/dist") >&2 ||
    die "building Tuna's wheel failed (output above)"
wheels=("$CTX"/dist/tuna-*.whl)
[[ -f ${wheels[0]} ]] || die "hatchling produced no tuna wheel"

# The context: deps/ (dependencies) and tuna/ (Tuna alone), two layers of the image.
deps_dir=$(ensure_deps)
cp -al -- "$deps_dir" "$CTX/deps" 2>/dev/null || cp -a -- "$deps_dir" "$CTX/deps"
quiet_pip install --no-deps --target "$CTX/tuna" "${wheels[0]}" >&2
rm -rf -- "$CTX/tuna/bin"
cp "$REPO/docker/Dockerfile.worker" "$CTX/Dockerfile"
mkdir "$CTX/debs"
example_packages=""
if ((EXAMPLES)); then
    if [[ $BASE == "$LOCAL_BASE" ]]; then
        cp -- "$(ensure_example_debs "$(ensure_rootfs)")"/*.deb "$CTX/debs/"
    else
        example_packages=$EXAMPLE_PACKAGES
    fi
fi

if [[ -n $import_pid ]]; then
    wait "$import_pid" || die "importing $LOCAL_BASE failed (output above)"
fi

network=()
# tuna-base:local already holds everything the Dockerfile's RUN steps need.
[[ $BASE == "$LOCAL_BASE" ]] && network=(--network none)
revision=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
ts "docker build $TAG (FROM $BASE)"
t0=$SECONDS
# The legacy builder is what the Debian engine offers without buildx (it prints a deprecation notice).
DOCKER_BUILDKIT=0 docker build "${network[@]}" \
    --build-arg "BASE=$BASE" --build-arg "TUNA_REVISION=$revision" \
    --build-arg "EXAMPLE_PACKAGES=$example_packages" \
    -t "$TAG" "$CTX" >&2 || die "docker build failed (output above)"
size=$(docker image inspect --format '{{.Size}}' "$TAG" | awk '{ printf "%d MB", $1 / 1e6 }')
ts "built $TAG in $((SECONDS - t0))s ($size)"
