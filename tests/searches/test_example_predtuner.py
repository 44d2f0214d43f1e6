"""examples/predtuner: speed against accuracy with a threshold relative to the exact
network, tuned by the predictive strategy and validated on test inputs, run small as a
user runs it (a process of its own), its stored front and validation checked."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuna.db import open_database
from tuna.searches import query
from tuna.searches.validation import stored_validation

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "predtuner" / "approx_net.py"


def test_the_example_tunes_a_front_within_the_threshold_and_draws_it(tmp_path):
    pytest.importorskip("matplotlib")
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    png, val_png = tmp_path / "front.png", tmp_path / "validation.png"
    env = {**os.environ, "TUNA_DATA_DIR": str(tmp_path / "data"), "OPENBLAS_NUM_THREADS": "1"}
    args = ["--budget", "24", "--samples", "512", "--repeats", "1", "--storage", url,
            "--name", "small", "--png", str(png), "--validation-png", str(val_png)]  # fmt: skip
    done = subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("search 1 'small': 24 runs; baseline mflop=268.4 accuracy=")
    assert png.read_bytes()[:8] == val_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    db = open_database(url)
    try:
        s = query.find_search(db, 1)
        front = query.pareto(db, s)
        baseline = query.baseline_run(db, s)
        validation = stored_validation(db, 1)
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
    assert s.searcher == "Strategy('predictive', space, seed=1, margin=0.02)"
    # The validation printed is the one stored: each front run on the test inputs, kept
    # where it meets the threshold against the exact network on them.
    assert validation is not None and validation.baseline is not None
    assert [r.seq for r in validation.runs] == [r.seq for r in front]
    keep = float((validation.baseline.measured or {})["accuracy"]) - 1
    assert lines[1] == f"front: {len(front)} runs; validation keeps accuracy >= {keep:g}"
    assert [(float(p[6]), p[7]) for p in printed] == [
        ((r.measured or {})["accuracy"], "yes" if r.kept else "no") for r in validation.runs
    ]
