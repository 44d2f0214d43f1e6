from __future__ import annotations

import pytest
from sqlalchemy import insert, select

from tests.support.history import add_measurements, add_platform, make_configs, session
from tuna.db.models import Golden, GoldenVersion, Measurement
from tuna.errors import NotFoundError, TunaError
from tuna.library.prune import prune


def _left(db):
    with db.session() as s:
        rows = s.execute(
            select(Measurement.session, Measurement.config, Measurement.time_ms).order_by(
                Measurement.session, Measurement.config, Measurement.time_ms
            )
        )
        return [tuple(r) for r in rows]


def test_keep_best_keeps_the_fastest_valid_per_problem_and_solver(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    p = add_platform(db, {"gpu": "x"})
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [5.0, 1.0, None, 3.0], platform=p)
    add_measurements(db, b, h.configs[0], direct, [2.0, 4.0], platform=p)
    add_measurements(db, a, h.configs[1], direct, [9.0], platform=p)
    dry = prune(db, 2, dry_run=True)
    assert (dry.groups, dry.deleted, dry.kept, dry.protected) == (1, 4, 3, 0)
    assert dry.by_group == {(h.keys[0], "NoopDirect"): 4}
    assert len(_left(db)) == 7  # a dry run deletes nothing
    done = prune(db, 2)
    assert (done.deleted, done.kept) == (4, 3)
    assert _left(db) == [(a, h.configs[0], 1.0), (a, h.configs[1], 9.0), (b, h.configs[0], 2.0)]
    assert prune(db, 2).deleted == 0


def test_what_a_golden_version_holds_is_never_pruned(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    p = add_platform(db, {"gpu": "x"})
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [5.0, 6.0, None], platform=p)
    add_measurements(db, b, h.configs[0], direct, [1.0, 2.0], platform=p)
    with db.session() as s:
        s.execute(insert(GoldenVersion).values(version=1, arch="gfx90a", num_cu=104))
        s.execute(
            insert(Golden).values(
                golden_v=1, session=a, config=h.configs[0], solver=direct, fdb_key=h.keys[0],
                time_ms=5.0, workspace=0, algorithm="direct",
            )
        )  # fmt: skip
    report = prune(db, 1)
    assert (report.deleted, report.kept, report.protected) == (1, 1, 3)
    assert _left(db) == [(a, h.configs[0], None), (a, h.configs[0], 5.0), (a, h.configs[0], 6.0),
                         (b, h.configs[0], 1.0)]  # fmt: skip


def test_one_session_only_and_bad_input(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    p = add_platform(db, {"gpu": "x"})
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [5.0, 6.0], platform=p)
    add_measurements(db, b, h.configs[0], direct, [1.0, 2.0], platform=p)
    assert prune(db, 1, session=a).deleted == 1
    assert len(_left(db)) == 3
    with pytest.raises(TunaError, match="--keep-best 0: keep at least 1.*do not prune"):
        prune(db, 0)
    with pytest.raises(NotFoundError, match="session 99 does not exist"):
        prune(db, 1, session=99)
