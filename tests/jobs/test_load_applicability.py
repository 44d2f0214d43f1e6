"""load_jobs with stored applicability (tuna applicability update) instead of the backend's."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from sqlalchemy import select, update

from tests.support.seed import make_session
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.models import ConvConfig, Solver, SolverApplicability
from tuna.errors import TunaError
from tuna.jobs.load import load_jobs
from tuna.sessions import list_solvers
from tuna.sessions.applicability import update_applicability

FAKE_FIN = f"{sys.executable} -m tuna.backends.miopen.fake_fin"
LINES = """\
MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2
MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 1
MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1
"""


@pytest.fixture
def miopen(db, tmp_path):
    import_configs(db, read_lines(LINES), tag="net")
    env = {"FIN_PATH": FAKE_FIN, "FIN_SCRATCH_DIR": str(tmp_path / "scratch")}
    return make_session(db, arch="gfx906", num_cu=60, backend="miopen",
                                          environment=env)  # fmt: skip


def valid_miopen_solvers(db) -> int:
    return len([r for r in list_solvers(db, "miopen") if r.valid])


def test_miopen_without_stored_applicability_queues_nothing_and_says_what_to_run(db, miopen):
    report = load_jobs(db, miopen, step="find", tag="net")
    n = valid_miopen_solvers(db)
    assert (report.configs, report.candidates, report.inserted) == (3, 3 * n, 0)
    assert report.not_applicable == Counter(
        {
            "no stored applicability for the config: run `tuna applicability update "
            f"--session {miopen}`": 3 * n
        }
    )


def test_miopen_loads_what_fin_said_applies(db, miopen):
    update_applicability(db, miopen, tag="net")
    report = load_jobs(db, miopen, step="find", tag="net")
    n = valid_miopen_solvers(db)
    assert (report.candidates, report.inserted) == (3 * n, 2)
    assert report.by_solver == {"ConvAsm1x1UV2": 2}
    assert report.not_applicable == {"Not Applicable (fin applicability)": 3 * n - 2}
    only = load_jobs(db, miopen, step="perf", tag="net", solvers=["ConvAsm1x1UV2", "ConvAsm3x3U"])
    assert (only.candidates, only.inserted) == (6, 2)


def test_miopen_solvers_come_from_the_solver_table(db, miopen):
    update_applicability(db, miopen, tag="net")
    with db.session() as s:
        s.execute(update(Solver).where(Solver.name == "ConvAsm1x1UV2").values(tunable=False))
    assert load_jobs(db, miopen, step="perf", tag="net", only_tunable=True).inserted == 0
    with db.session() as s:
        s.execute(update(Solver).where(Solver.name == "ConvAsm1x1UV2").values(valid=False))
    with pytest.raises(TunaError, match="ConvAsm1x1UV2 unknown to backend 'miopen'"):
        load_jobs(db, miopen, step="perf", tag="net", solvers=["ConvAsm1x1UV2"])


def test_stored_rows_win_over_a_backends_own_answer(db):
    import_configs(db, read_lines(LINES), tag="net")
    sid = make_session(db, arch="cpu", num_cu=2, backend="noop")
    before = load_jobs(db, sid, step="perf", tag="net", solvers=["NoopGemm1x1"])
    assert before.inserted == 2  # the two 1x1 configs
    with db.session() as s:
        ids = sorted(s.scalars(select(ConvConfig.id)))
    update_applicability(db, sid, tag="net")
    with db.session() as s:  # say "no" for the first config, as a library might
        gemm = s.scalar(select(Solver.id).where(Solver.name == "NoopGemm1x1"))
        s.execute(
            update(SolverApplicability)
            .where(SolverApplicability.config == ids[0], SolverApplicability.solver == gemm)
            .values(applicable=False, reason="measured: never wins")
        )
    after = load_jobs(db, sid, step="find", tag="net", solvers=["NoopGemm1x1"])
    assert after.inserted == 1
    assert after.not_applicable == {"measured: never wins": 1, "filter is not 1x1": 1}
