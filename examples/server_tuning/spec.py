"""How Tuna builds and runs the server-tuning example (the bench backend's settings)."""

from pathlib import Path

from tuna.backends.bench import BenchSpec, StatsFormat
from tuna.search import Objective

HERE = Path(__file__).resolve().parent

SPEC = BenchSpec.of(
    run="./server.sh run {threads} {rate} {seconds}",
    build="./server.sh build {innodb_buffer_pool_mb} {innodb_flush_log_at_trx_commit} {table_size}",
    stats=StatsFormat.regex(
        r"transactions:\s+\d+\s+\((?P<tps>[\d.]+) per sec",
        r"95th percentile:\s+(?P<p95_ms>[\d.]+)",
        r"ignored errors:\s+(?P<errors>\d+)",
    ),
    required_stats=("tps", "p95_ms"),
    run_timeout_s=60,
    build_timeout_s=120,
    source_dir=HERE,
)

#: The highest throughput among the runs under the latency bound.
OBJECTIVE = Objective(
    "tps", "max", validity=lambda r: r.stats["p95_ms"] <= r.config["p95_bound_ms"]
)
