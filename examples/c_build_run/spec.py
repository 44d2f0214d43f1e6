"""How Tuna builds and runs the C build+run example (the bench backend's settings)."""

from pathlib import Path

from tuna.backends.bench import BenchSpec, StatsFormat
from tuna.search import Objective

HERE = Path(__file__).resolve().parent

SPEC = BenchSpec.of(
    run="./bench {n} {reps}",
    build="{cc} {opt} -DTILE={tile} -o bench bench.c",
    stats=StatsFormat("json"),
    required_stats=("gflops",),
    run_timeout_s=60,
    build_timeout_s=120,
    source_dir=HERE,
)

OBJECTIVE = Objective("gflops", "max")
