"""Stored applicability and the solver table, as the session's library build reports them.

The miopen sessions run the FAKE fin (it replays ConvAsm1x1UV2 on 1x1 problems only).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.seed import make_session
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.models import ConvConfig, Solver, SolverApplicability, TuningSession
from tuna.errors import NotFoundError
from tuna.sessions import SessionSpec, create_session, list_solvers, update_solvers
from tuna.sessions.applicability import stored_applicability, update_applicability

FAKE_FIN = f"{sys.executable} -m tuna.backends.miopen.fake_fin"
RECORDINGS = Path(__file__).resolve().parents[2] / "tuna" / "backends" / "miopen" / "recordings"
LINES = """\
MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2
MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 1
MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1
MIOpenDriver convint8 -n 4 -c 64 -H 14 -W 14 -k 64 -y 1 -x 1 -F 1
"""


def miopen_session(db, tmp_path, **env):
    spec = SessionSpec(
        arch="gfx906", num_cu=60, backend="miopen",
        environment={"FIN_PATH": FAKE_FIN, "FIN_SCRATCH_DIR": str(tmp_path / "scratch"), **env},
    )  # fmt: skip
    return create_session(db, spec).id


def config_ids(db):
    with db.session() as s:
        return dict(s.execute(select(ConvConfig.driver, ConvConfig.id)).all())


def rows(db, session_id):
    with db.session() as s:
        found = s.execute(
            select(ConvConfig.id, Solver.name, SolverApplicability.applicable,
                   SolverApplicability.reason)
            .join(ConvConfig, ConvConfig.id == SolverApplicability.config)
            .join(Solver, Solver.id == SolverApplicability.solver)
            .where(SolverApplicability.session == session_id)
        )  # fmt: skip
        return {(cid, name): (bool(ok), reason) for cid, name, ok, reason in found}


def test_miopen_applicability_from_fin_is_stored_with_reasons(db, tmp_path):
    import_configs(db, read_lines(LINES), tag="net")
    sid = miopen_session(db, tmp_path)
    report = update_applicability(db, sid, tag="net")
    assert (report.source, report.configs, report.answered, report.failed) == (
        "library", 4, 4, {}
    )  # fmt: skip
    n_solvers = len([r for r in list_solvers(db, "miopen") if r.valid])
    assert (report.applicable, report.not_applicable) == (2, 4 * n_solvers - 2)
    stored = rows(db, sid)
    assert len(stored) == 4 * n_solvers
    ids = sorted(config_ids(db).values())
    bwd, fwd, three, int8 = ids  # in import order
    assert stored[(bwd, "ConvAsm1x1UV2")] == (True, None)
    assert stored[(fwd, "ConvAsm1x1UV2")] == (True, None)
    assert stored[(bwd, "ConvAsm3x3U")] == (False, "Not Applicable (fin applicability)")
    assert stored[(three, "ConvAsm1x1UV2")] == (False, "Not Applicable (fin applicability)")
    reason = stored[(int8, "ConvAsm1x1UV2")][1] or ""
    assert not stored[(int8, "ConvAsm1x1UV2")][0] and "data types INT8/INT8/INT32" in reason
    with db.session() as s:
        back = stored_applicability(s, sid, [bwd, 999])
    assert list(back) == [bwd] and len(back[bwd]) == n_solvers


def test_updating_again_replaces_and_a_failed_config_keeps_its_rows(db, tmp_path):
    import_configs(db, read_lines(LINES), tag="net")
    sid = miopen_session(db, tmp_path)
    update_applicability(db, sid, tag="net")
    before = rows(db, sid)
    bwd = min(config_ids(db).values())
    wrapper = tmp_path / "fin"
    wrapper.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "jobs = json.load(open(sys.argv[sys.argv.index('-i') + 1]))\n"
        f"if any(j.get('config_tuna_id') == {bwd} for j in jobs): sys.exit(9)\n"
        "from tuna.backends.miopen.fake_fin import main\nsys.exit(main(sys.argv))\n"
    )
    wrapper.chmod(0o755)
    with db.session() as s:
        row = s.get(TuningSession, sid)
        row.environment = {**row.environment, "FIN_PATH": str(wrapper)}
    report = update_applicability(db, sid, tag="net")
    assert list(report.failed) == [bwd] and "fin exited with status 9" in report.failed[bwd]
    assert report.answered == 3
    assert rows(db, sid) == before  # replaced by the same answers; the failed config kept its own


def test_a_backend_without_a_library_stores_its_own_answers(db, tmp_path):
    import_configs(db, read_lines(LINES), tag="net")
    sid = make_session(db, arch="cpu", num_cu=2, backend="noop")
    report = update_applicability(db, sid, tag="net")
    assert report.source == "backend" and report.answered == 4
    stored = rows(db, sid)
    three = sorted(config_ids(db).values())[2]
    assert stored[(three, "NoopGemm1x1")] == (False, "filter is not 1x1")
    assert stored[(three, "NoopWinograd3x3")] == (True, None)


def test_unknown_session_and_tag(db, tmp_path):
    with pytest.raises(NotFoundError, match="session 99 does not exist"):
        update_applicability(db, 99)
    sid = miopen_session(db, tmp_path)
    with pytest.raises(NotFoundError, match="no config is tagged 'nope'"):
        update_applicability(db, sid, tag="nope")


def test_update_solvers_follows_fin(db, tmp_path):
    rec = tmp_path / "rec"
    shutil.copytree(RECORDINGS, rec)
    listed = json.loads((rec / "get_solvers.json").read_text())
    solvers = listed[1]["all_solvers"]
    solvers[:] = [s for s in solvers if s["name"] != "ConvAsm5x10u2v2f1"]  # gone
    next(s for s in solvers if s["name"] == "GemmFwdRest")["tunable"] = "1"  # changed
    solvers.append({"id": "190", "name": "ConvNewSolver", "tunable": "1", "dynamic": "0",
                    "type": "convolution"})  # fmt: skip
    (rec / "get_solvers.json").write_text(json.dumps(listed))
    sid = miopen_session(db, tmp_path, FAKE_FIN_RECORDINGS=str(rec))
    report = update_solvers(db, sid)
    assert report.source == "library" and report.reported == 104
    assert report.added == ["ConvNewSolver"]
    assert report.updated == ["GemmFwdRest"]
    assert report.retired == ["ConvAsm5x10u2v2f1"]
    assert report.unchanged == 104 - 2
    by_name = {r.name: r for r in list_solvers(db, "miopen")}
    assert by_name["ConvNewSolver"].numeric_id == 190 and by_name["ConvNewSolver"].tunable
    assert by_name["GemmFwdRest"].tunable and not by_name["ConvAsm5x10u2v2f1"].valid
    again = update_solvers(db, sid)
    assert (again.added, again.updated, again.retired, again.unchanged) == ([], [], [], 104)


def test_update_solvers_of_a_backend_without_a_library(db):
    sid = make_session(db, arch="cpu", num_cu=2, backend="noop")
    report = update_solvers(db, sid)
    assert (report.source, report.reported, report.unchanged, report.added) == (
        "backend", 4, 4, []
    )  # fmt: skip
