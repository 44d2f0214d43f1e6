"""The cuda backend end to end on SQLite, through the real commands: go_fish compiles for
real (NVRTC) and, with no driver here, refuses the evaluate phase in one line, the jobs left
compiled; on FakeGpu (a fake device) the same session is evaluated, its platform records the
GPU's facts."""

from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import select

from tuna.catalog.importer import import_configs, read_lines
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, Measurement, Platform
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

LINES = """\
MIOpenDriver conv -n 2 -c 12 -H 6 -W 6 -k 20 -y 1 -x 1 -F 1
MIOpenDriver conv -n 1 -c 3 -H 9 -W 7 -k 19 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1
"""
NO_DRIVER = "no CUDA driver on this host (Failed to dlopen libcuda.so.1)"


def session(db, **env):
    import_configs(db, read_lines(LINES), tag="odd")
    environment = {"CUDA_MAX_CANDIDATES": "2", "CUDA_REPEATS": "3", **env}
    sid = create_session(
        db, SessionSpec(arch="sm_90", num_cu=132, backend="cuda", environment=environment)
    ).id
    report = load_jobs(db, sid, step="perf", tag="odd")
    assert report.inserted == 3  # IGEMM twice, the 1x1 solver on the 1x1 layer
    return sid


def tuna(url, tmp_path, *args):
    env = {**os.environ, "TUNA_DB_URL": url, "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "tuna.cli", *args], capture_output=True, text=True, env=env,
        cwd=tmp_path, timeout=600,
    )  # fmt: skip


def states(db, sid):
    with db.session() as s:
        return sorted(s.scalars(select(Job.state).where(Job.session == sid)))


def test_compile_is_real_and_evaluate_is_refused_in_one_line_without_a_driver(
    lite, sqlite_url, tmp_path
):
    sid = session(lite)
    done = tuna(sqlite_url, tmp_path, "go_fish", "-s", str(sid), "--compile", "--run_perf",
                "--local", "-w", "2")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "this run: compiled 3" in done.stdout
    error = done.stderr.strip().splitlines()
    assert error == [
        f"Error: session {sid}: its evaluate phase cannot run on this machine: {NO_DRIVER}: "
        "the evaluate phase needs an NVIDIA GPU (its jobs stay compiled: evaluate them where "
        "it can)"
    ]
    assert states(lite, sid) == [JobState.COMPILED] * 3
    worker = tuna(sqlite_url, tmp_path, "worker", "-s", str(sid), "--phase", "eval", "--burst")
    assert worker.returncode == 1 and "Traceback" not in worker.stderr
    assert worker.stderr.strip().splitlines() == [
        f"Error: session {sid}: its evaluate phase cannot run on this machine: {NO_DRIVER}: "
        "the evaluate phase needs an NVIDIA GPU"
    ]
    assert states(lite, sid) == [JobState.COMPILED] * 3


def test_on_the_fake_gpu_the_session_is_tuned_and_its_platform_has_the_gpu(
    lite, sqlite_url, tmp_path
):
    sid = session(lite, CUDA_FAKE_GPU="1")
    done = tuna(sqlite_url, tmp_path, "go_fish", "-s", str(sid), "--compile", "--run_perf",
                "--local", "-w", "2")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert states(lite, sid) == [JobState.EVALUATED] * 3
    with lite.session() as s:
        finds = s.scalars(select(FindDb).where(FindDb.session == sid)).all()
        platforms = {
            m.platform for m in s.scalars(select(Measurement).where(Measurement.session == sid))
        }
        docs = [p.info for p in s.scalars(select(Platform).where(Platform.id.in_(platforms)))]
    assert len(finds) == 3 and all(f.time_ms > 0 and f.kernel is not None for f in finds)
    assert len(docs) == 1
    gpu = docs[0]["cuda"]["gpu"]
    assert gpu["name"] == "FakeGpu (a test double, not a GPU)" and gpu["sm_count"] == 132
    assert docs[0]["cuda"]["compiler"] == "nvrtc 13.0"


def test_a_gpu_of_another_arch_is_refused_before_any_claim(lite, sqlite_url, tmp_path):
    sid = session(lite, CUDA_FAKE_GPU="1", CUDA_FAKE_ARCH="sm_80")
    worker = tuna(sqlite_url, tmp_path, "worker", "-s", str(sid), "--phase", "eval", "--burst")
    assert worker.returncode == 1
    assert worker.stderr.strip() == (
        f"Error: session {sid}: its evaluate phase cannot run on this machine: its GPU "
        "(FakeGpu (a test double, not a GPU)) is sm_80, the session tunes sm_90: evaluate on "
        "a GPU of the session's arch"
    )
