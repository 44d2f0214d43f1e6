"""cpuconv end to end through the real worker loop on SQLite: import, session, load_jobs,
compile workers, eval workers, result rows."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from tuna.backends.finalists import FINALISTS, RETIME_TURNS
from tuna.catalog.importer import import_configs, read_lines
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, JobKernel, KernelCache, Measurement, PerfDb, Solver
from tuna.jobs.load import load_jobs
from tuna.results.dbfiles import read_kern_db
from tuna.results.export import ExportSpec, export_db
from tuna.sessions import SessionSpec, create_session
from tuna.worker import run_worker

LINES = """\
MIOpenDriver conv -n 1 -c 8 -H 6 -W 6 -k 8 -y 1 -x 1 -F 1
MIOpenDriver conv -n 1 -c 4 -H 7 -W 5 -k 4 -y 3 -x 3 -p 1 -q 1 -F 2
"""


def count(db: Database, model: type, *where: object) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(model).where(*where)) or 0


def test_a_session_is_tuned_end_to_end(lite, tmp_path):
    import_configs(lite, read_lines(LINES), tag="tiny")
    env = {"CPUCONV_MAX_CANDIDATES": "3", "CPUCONV_OPT": "1", "CPUCONV_REPEATS": "2",
           "CPUCONV_PER_UNIT": "1"}  # fmt: skip
    session = create_session(
        lite, SessionSpec(arch="cpu", num_cu=2, backend="cpuconv", environment=env)
    ).id
    report = load_jobs(lite, session, step="perf", tag="tiny")
    # 1x1 F: Naive, Tiled, Im2col, Gemm1x1; 3x3 B: Naive, Tiled, Im2col, Winograd
    assert report.inserted == 8 and sum(report.not_applicable.values()) == 2

    kw = dict(burst=True, handle_signals=False, idle_sleep=0.01, claim_batch=4)
    compiled = run_worker(lite, session, "compile", **kw)
    assert (compiled.done, compiled.errored, compiled.retried) == (8, 0, 0)
    evaluated = run_worker(lite, session, "eval", **kw)
    assert (evaluated.done, evaluated.errored, evaluated.retried) == (8, 0, 0)

    with lite.session() as s:
        states = set(s.scalars(select(Job.state).where(Job.session == session)))
        rows = s.execute(
            select(Solver.name, FindDb.algorithm, FindDb.params, FindDb.time_ms)
            .join(Solver, Solver.id == FindDb.solver)
            .where(FindDb.session == session)
        ).all()
        perf = dict(
            s.execute(
                select(Solver.name, PerfDb.params).join(Solver, Solver.id == PerfDb.solver)
            ).all()
        )
    assert states == {JobState.EVALUATED}
    assert len(rows) == 8 and all(t > 0 for *_, t in rows)
    assert {(name, algo) for name, algo, *_ in rows} == {
        ("CpuDirectNaive", "miopenConvolutionFwdAlgoDirect"),
        ("CpuDirectTiled", "miopenConvolutionFwdAlgoDirect"),
        ("CpuIm2colGemm", "miopenConvolutionFwdAlgoGEMM"),
        ("CpuGemm1x1", "miopenConvolutionFwdAlgoGEMM"),
        ("CpuDirectNaive", "miopenConvolutionBwdDataAlgoDirect"),
        ("CpuDirectTiled", "miopenConvolutionBwdDataAlgoDirect"),
        ("CpuIm2colGemm", "miopenConvolutionBwdDataAlgoGEMM"),
        ("CpuWinograd2x3", "miopenConvolutionBwdDataAlgoWinograd"),
    }
    assert count(lite, PerfDb, PerfDb.session == session) == 6  # the tunable jobs
    assert set(perf) == {"CpuDirectTiled", "CpuIm2colGemm", "CpuGemm1x1", "CpuWinograd2x3"}
    assert count(lite, KernelCache) >= 8 and count(lite, JobKernel) >= 8

    # Every candidate compiled was measured once, on the eval worker's platform, and each
    # job's finalists (its 3 fastest) again in 3 turns before its winner was stored.
    with lite.session() as s:
        payloads = s.scalars(select(Job.result).where(Job.session == session)).all()
        measured = s.execute(
            select(Measurement.job, Measurement.params, Measurement.platform)
        ).all()
    sizes = [len(json.loads(p)["candidates"]) for p in payloads]
    assert len({(j, p) for j, p, _ in measured}) == sum(sizes)
    assert len(measured) == sum(n + min(FINALISTS, n) * RETIME_TURNS for n in sizes)
    assert len({platform for *_, platform in measured}) == 1

    # Each find row links the shared object its winner is built into, one of its job's
    # candidates; the kernel db holds those of each key's fastest solver, nothing else.
    with lite.session() as s:
        linked = s.execute(
            select(FindDb.config, FindDb.time_ms, Solver.name, KernelCache.kernel_name,
                   KernelCache.kernel_args, KernelCache.kernel_hash, FindDb.job)
            .join(Solver, Solver.id == FindDb.solver)
            .join(KernelCache, KernelCache.id == FindDb.kernel)
            .where(FindDb.session == session)
        ).all()  # fmt: skip
        per_job = dict(s.execute(select(JobKernel.job, func.count()).group_by(JobKernel.job)).all())
    assert len(linked) == 8
    assert sorted(per_job[r.job] for r in linked) == [1, 1, 3, 3, 3, 3, 3, 3]  # 3 candidates
    fastest: dict[int, tuple[str, str, str]] = {}
    for config, _t, _solver, name, args, digest, _job in sorted(linked, key=lambda r: r[:3]):
        fastest.setdefault(config, (name, args, digest))
    report = export_db(lite, ExportSpec(kind="kern", session=session, out_dir=tmp_path))
    kdb = read_kern_db(tmp_path / "cpu_2.kdb")
    assert sorted((r.kernel_name, r.kernel_args, r.kernel_hash) for r in kdb) == sorted(
        fastest.values()
    )  # a CPU arch: name and args exactly as the backend built them
    assert report.counts["winners_with_chosen_kernels"] == 2
