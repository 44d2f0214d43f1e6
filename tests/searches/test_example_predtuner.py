"""examples/predtuner: speed against accuracy with a threshold relative to the exact
network, run small as a user runs it (a process of its own), its stored front checked."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuna.db import open_database
from tuna.searches import query

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "predtuner" / "approx_net.py"


def test_the_example_tunes_a_front_within_the_threshold_and_draws_it(tmp_path):
    pytest.importorskip("matplotlib")
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    png = tmp_path / "front.png"
    env = {**os.environ, "TUNA_DATA_DIR": str(tmp_path / "data"), "OPENBLAS_NUM_THREADS": "1"}
    args = ["--budget", "24", "--samples", "512", "--repeats", "1", "--storage", url,
            "--name", "small", "--png", str(png)]  # fmt: skip
    done = subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("search 1 'small': 24 runs; baseline mflop=268.4 accuracy=")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    db = open_database(url)
    try:
        s = query.find_search(db, 1)
        front = query.pareto(db, s)
        baseline = query.baseline_run(db, s)
    finally:
        db.dispose()
    assert baseline is not None and baseline.seq == -1
    assert s.objectives_text == "mflop:min, accuracy:max"
    assert [c.text for c in s.objective.constraints] == ["accuracy >= baseline.accuracy - 1"]
    limit = baseline.stats["accuracy"] - 1
    stats = [r.stats for r in front]
    assert all(st["accuracy"] >= limit for st in stats)
    # A front of two objectives: cheaper is less accurate, one run to the next.
    assert [st["mflop"] for st in stats] == sorted(st["mflop"] for st in stats)
    assert all(a["accuracy"] < b["accuracy"] for a, b in itertools.pairwise(stats))
    # What the script printed is the stored front, row by row (levels, mflop, accuracy).
    printed = [line.split() for line in lines[3 : 3 + len(front)]]
    assert lines[1].startswith(f"front: {len(front)} runs;")
    assert [(p[0], float(p[1]), float(p[4])) for p in printed] == [
        ("".join(str(r.point[f"layer{i}"]) for i in range(4)), r.stats["mflop"],
         r.stats["accuracy"]) for r in front
    ]  # fmt: skip
    # Some approximation won: the front holds a cheaper configuration than the baseline.
    assert stats[0]["mflop"] < baseline.stats["mflop"]
