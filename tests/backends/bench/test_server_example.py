"""examples/server_tuning for real: MariaDB started by the example, sysbench OLTP against it.

A short version of the reference's worked example (1 s runs, a small table, a budget of
two runs): it checks the bench core drives a real server benchmark — builds (server
settings) once per build tuple, stats read from sysbench's report — and that the Composer's
proposals follow from the Runs it was sent (replaying them proposes the same points).
Skips where mariadbd or sysbench are not installed (Debian: mariadb-server, sysbench), and
fails there under bin/test, which installs them (TUNA_REQUIRE_EXAMPLE_TOOLS=1).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tuna.backends.bench import LocalBench, run_search
from tuna.searchers import Proposer, load_base_config, load_parameter_file, replay
from tuna.searchers.schedule import build_key

from .examples import EXAMPLES, load_example

EXAMPLE = EXAMPLES / "server_tuning"
TOOLS = ("mariadbd", "mariadb-install-db", "mariadb-admin", "mariadb", "sysbench")

MISSING = [t for t in TOOLS if shutil.which(t) is None]


@pytest.fixture(autouse=True)
def _tools() -> None:
    """Skips where the tools are missing, and fails there when bin/test said it installed them."""
    if MISSING:
        message = f"needs {', '.join(MISSING)} (Debian: mariadb-server, sysbench)"
        if os.environ.get("TUNA_REQUIRE_EXAMPLE_TOOLS") == "1":
            pytest.fail(f"{message}; TUNA_REQUIRE_EXAMPLE_TOOLS=1", pytrace=False)
        pytest.skip(message)


def test_server_tuning_example_short(tmp_path: Path) -> None:
    ex = load_example("server_tuning")
    space = load_parameter_file(EXAMPLE / "params.py")
    base = load_base_config(EXAMPLE / "base.json", ["seconds=1", "table_size=200"])
    bench = LocalBench(ex.SPEC, space, scratch_root=tmp_path)
    runs = run_search(Proposer(space, base=base), bench, budget=2)

    assert len(runs) == 2
    assert all(r.valid for r in runs), [r.reason for r in runs]
    assert all(r.stats["tps"] > 0 and r.stats["p95_ms"] > 0 for r in runs)
    assert len(bench.builds) == len({build_key(space, r.config) for r in runs})
    assert runs[0].config["rate"] == 500 and runs[0].config["threads"] == 1
    # The searcher's path is a function of the Runs: replaying them gives the same points.
    resumed = replay(space, runs[:1], base=base)
    assert resumed.next is not None and runs[1].matches(resumed.next.point)
