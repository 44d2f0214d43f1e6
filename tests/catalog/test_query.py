from __future__ import annotations

import pytest

from tuna.catalog.importer import import_configs, read_lines
from tuna.catalog.query import query_configs
from tuna.db.enums import JobState, JobStep
from tuna.db.models import FindDb, Job, PerfDb, Solver, TuningSession
from tuna.errors import TunaError

LINE = "./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"  # noqa: E501
KEY = "1024-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NCHW-FP32-F"
XKEY = "2x1024x14x14x1x1x1x1x256x128x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"


@pytest.fixture
def imported(db):
    import_configs(db, read_lines(LINE), tag="resnet50")
    return db


def test_a_driver_line_a_dash_key_an_x_key_and_a_db_record_find_the_same_config(imported):
    reports = query_configs(imported, [(1, LINE), (2, KEY), (3, XKEY), (4, KEY + "=Foo:1,0,a")])
    assert [r.key for r in reports] == [KEY] * 4
    assert all(r.exists and r.tags == ["resnet50"] for r in reports)
    assert reports[0].perf_key == XKEY
    assert reports[0].driver == LINE


def test_absent_config_is_reported_absent(imported):
    [r] = query_configs(imported, [(1, LINE.replace("-n 128", "-n 7"))])
    assert not r.exists and r.tags == [] and r.jobs == []


def test_jobs_and_results_are_listed(imported):
    [r] = query_configs(imported, [(1, KEY)])
    with imported.session() as s:
        sess = TuningSession(arch="cpu", num_cu=2, backend="noop", fingerprint="f" * 64)
        solver = Solver(backend="noop", name="Direct", tunable=True)
        s.add_all([sess, solver])
        s.flush()
        s.add(
            Job(
                session=sess.id,
                config=r.config_id,
                solver=solver.id,
                step=JobStep.PERF,
                state=JobState.ERRORED,
                attempt=3,
                retries=3,
                reason="verification failed",
            )
        )
        s.add(PerfDb(session=sess.id, config=r.config_id, solver=solver.id, params="4,8"))
        s.add(
            FindDb(
                session=sess.id,
                config=r.config_id,
                solver=solver.id,
                time_ms=1.5,
                workspace=0,
                algorithm="Direct",
            )
        )
    [r] = query_configs(imported, [(1, LINE)])
    [job] = r.jobs
    assert (job.solver, job.state, job.attempt, job.note) == (
        "Direct",
        "errored",
        3,
        "verification failed",
    )
    assert [(p.solver, p.params) for p in r.perf] == [("Direct", "4,8")]
    assert [(f.solver, f.time_ms) for f in r.find] == [("Direct", 1.5)]


def test_bad_queries_are_all_reported(imported):
    with pytest.raises(TunaError) as e:
        query_configs(imported, [(1, "nonsense"), (2, KEY), (3, LINE + " --nope 1")])
    assert "2 query line(s)" in str(e.value)
    assert "line 1:" in str(e.value) and "line 3:" in str(e.value)


def test_bnorm_lines_are_queried_too(imported):
    bn = "./bin/MIOpenDriver bnormfp16 -n 256 -c 1024 -H 14 -W 14 -m 1 --forw 1 -b 0 -s 1 -r 1"
    [before] = query_configs(imported, [(1, bn)])
    assert before.kind == "bnorm" and not before.exists
    import_configs(imported, read_lines(bn), tag="bn")
    [after] = query_configs(imported, [(1, bn)])
    assert after.exists and after.tags == ["bn"]
