#!/usr/bin/env bash
# The cuda backend on a GPU, in one prepared run: under 5 minutes on one H100/H200.
#
#   bench/cuda_device.sh wheels    # here: Tuna's runtime dependencies as wheels for the GPU host's
#                                  #   Python 3.12 (.whl/; its image has cuda-bindings, NVRTC, PyTorch, CuPy)
#   bench/cuda_device.sh prepare   # here, no GPU: the carried session, its cubins compiled on this host
#                                  #   (.cuda-bench/carried.sqlite)
#   bench/cuda_device.sh run       # on the GPU host (below); what it prints is also in $OUT/cuda_device.txt
#   bench/cuda_device.sh dry-run   # here, no GPU: prepare and run on 2 layers with a small budget, the
#                                  #   evaluations on FakeGpu (a fake), cuDNN and cuBLAS not timed
#
# `run` does, in order:
#   1. versions: Python, GPU and driver (read as the evaluate phase reads them), cuda-bindings, NVRTC,
#      PyTorch with cuDNN, CuPy;
#   2. the cross-host test: the carried session's cubins, compiled on the CPU host by `prepare`, are
#      loaded, verified and timed there by `tuna worker --phase eval` on the carried SQLite database;
#   3. ResNet-50's 20 distinct forward layers at batch 32, and BACKWARD (default 2) of its layers (3x3
#      and 1x1 in turn) in each backward direction (data, weights), tuned on the GPU host: one strategy search
#      per (layer, solver) (STRATEGY, default genetic; BUDGET measurements each, default 24), queued by
#      `load_jobs --strategy` and drained by `go_fish --local` (compiles on every core, one evaluation
#      worker: it owns the GPU), on SQLite, at most SEARCH_LIMIT_S seconds (default 120);
#   4. per layer, the winner against the solver's default parameters, cuDNN (PyTorch, FP32,
#      allow_tf32=False, benchmark=True; torch.nn.grad for the backward layers) and, for forward 1x1
#      layers, cuBLAS (CuPy, FP32), in turns: tuned ms, cuDNN ms, ratio, TFLOP/s and % of the FP32
#      peak (66.9 TFLOP/s, H100 SXM).
#
# With the device tool: `bench/cuda_device.sh wheels && bench/cuda_device.sh prepare` here first, then
# run(command="bench/cuda_device.sh run", carry=[".whl", ".cuda-bench"], timeout_s=420).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
MODE=${1:-}
WORK=${CUDA_BENCH_DIR:-/tmp/tuna-cuda-bench}
CARRIED=$REPO/.cuda-bench/carried.sqlite
STRATEGY=${STRATEGY:-genetic}
BUDGET=${BUDGET:-24}
SEARCH_LIMIT_S=${SEARCH_LIMIT_S:-120}
CARRIED_CANDIDATES=${CARRIED_CANDIDATES:-6}
BACKWARD=${BACKWARD:-2}
T0=$(date +%s)

step() { printf '\n== %s  [+%ss]\n' "$*" "$(($(date +%s) - T0))"; }
die() {
    printf 'cuda_device.sh: %s\n' "$*" >&2
    exit 1
}

if [[ -x $REPO/.venv/bin/python ]]; then
    PY=$REPO/.venv/bin/python
else
    PY=python3
fi
if [[ -d $REPO/.whl && $MODE == run ]]; then # the GPU host: Tuna's dependencies from the carried wheels
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$REPO"/.whl/*.whl
    export PYTHONPATH=/tmp/site:$REPO
    PY=python3
fi
tuna() { "$PY" -m tuna.cli "$@"; }
bench() { "$PY" "$REPO/bench/cuda_device.py" "$@"; }

# new_db PATH: an empty database at the head revision; sets TUNA_DB_URL.
new_db() {
    rm -f "$1"
    mkdir -p "$(dirname "$1")"
    export TUNA_DB_URL=sqlite:///$1
    tuna db upgrade >/dev/null
}

# session LAYERS ENV...: import the layers, create session 1 of the cuda backend with ENV (KEY=VALUE).
session() {
    local layers=$1 args=()
    shift
    tuna import_configs -t resnet50-b32 -f "$layers" >/dev/null
    for kv in "$@"; do args+=(--env "$kv"); done
    tuna session create --arch sm_90 --num-cu 132 --backend cuda -l "bench/cuda_device.sh" "${args[@]}"
}

prepare() { # [COUNT] [ENV...]: the carried session, compiled here
    local count=${1:-0}
    shift || true
    step "prepare: the carried session, compiled on $(hostname) ($(nproc) CPUs, no GPU)"
    bench layers --count "$count" --backward "$BACKWARD" >"$WORK/layers.txt"
    new_db "$CARRIED"
    session "$WORK/layers.txt" "CUDA_MAX_CANDIDATES=$CARRIED_CANDIDATES" "$@"
    tuna load_jobs -t resnet50-b32 -s 1 --strategy none
    local t=$SECONDS
    tuna go_fish -s 1 --compile --local -w "$(nproc)" | tail -n 3
    bench summary --db "$TUNA_DB_URL" --session 1
    printf 'compiled in %ss\n' "$((SECONDS - t))"
}

run() { # [COUNT] [ENV...]
    local count=${1:-0} limit
    shift || true
    step "1. versions"
    bench versions
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

    step "2. cubins compiled on the CPU host, evaluated here by tuna worker"
    [[ -f $CARRIED ]] || die "no $CARRIED: run 'bench/cuda_device.sh prepare' on the CPU host and carry .cuda-bench"
    cp "$CARRIED" "$WORK/carried.sqlite"
    export TUNA_DB_URL=sqlite:///$WORK/carried.sqlite
    local t=$SECONDS
    tuna worker -s 1 --phase eval --burst 2>&1 | tail -n 2
    bench summary --db "$TUNA_DB_URL" --session 1
    printf 'evaluated in %ss\n' "$((SECONDS - t))"

    step "3. ResNet-50 at batch 32 (forward, and $BACKWARD layers backward): $STRATEGY," \
        "budget $BUDGET per layer and solver"
    bench layers --count "$count" --backward "$BACKWARD" >"$WORK/layers.txt"
    new_db "$WORK/tuned.sqlite"
    session "$WORK/layers.txt" CUDA_REPEATS=10 CUDA_WARMUP_MS=5 "$@"
    tuna load_jobs -t resnet50-b32 -s 1 --strategy "$STRATEGY" --budget "$BUDGET" --round-size 16 |
        tail -n 2
    t=$SECONDS
    limit=$SEARCH_LIMIT_S
    timeout --signal=TERM "$limit" "$PY" -m tuna.cli go_fish -s 1 --run_perf --local -w "$(nproc)" |
        tail -n 4 || printf 'go_fish stopped after %ss (SEARCH_LIMIT_S): what was found so far counts\n' "$limit"
    bench summary --db "$TUNA_DB_URL" --session 1
    printf 'searched in %ss\n' "$((SECONDS - t))"

    step "4. tuned vs default, cuDNN and cuBLAS, in turns"
    if [[ $MODE == dry-run ]]; then
        bench compare --db "$TUNA_DB_URL" --session 1 --dry-run
    else
        bench compare --db "$TUNA_DB_URL" --session 1
    fi
    step "done"
}

mkdir -p "$WORK"
case $MODE in
wheels)
    python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d .whl \
        "sqlalchemy>=2.0,<2.2" "pymysql>=1.1" "alembic>=1.13" "click>=8.1" "rich>=13.0" \
        "platformdirs>=3.0" "paramiko>=3.4"
    ls .whl
    ;;
prepare) prepare 0 ;;
run) run 0 2>&1 | tee "${OUT:-$WORK}/cuda_device.txt" ;;
dry-run)
    CARRIED=$WORK/carried-dry.sqlite
    BUDGET=${BUDGET_DRY:-4}
    CARRIED_CANDIDATES=3
    BACKWARD=2 # a 3x3 and a 1x1 layer: every backward solver
    prepare 2 CUDA_FAKE_GPU=1
    run 2 CUDA_FAKE_GPU=1
    ;;
*) sed -n '2,28p' "$0" >&2; exit 2 ;;
esac
