"""Golden versions: ``tuna/results/golden.py``, on both databases."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from tests.support.seed import make_session
from tuna.db import Database
from tuna.db.models import FindDb, Golden, GoldenKernel, GoldenVersion, JobKernel, Solver
from tuna.errors import NotFoundError, TunaError
from tuna.results.golden import GoldenExistsError, SlowerKey, update_golden
from tuna.results.validate import ExportRefusedError

from .seed import (
    K1,
    K3,
    ONE_BY_ONE,
    THREE_BY_THREE,
    add_configs,
    add_find,
    run_noop,
)

BASE = [
    (K1, "NoopDirect", 0.5, 0, "direct"),
    (K1, "NoopGemm1x1", 0.25, 1024, "gemm"),
    (K3, "NoopDirect", 1.5, 0, "direct"),
    (K3, "NoopWinograd3x3", 0.75, 4096, "winograd"),
]


def golden_rows(db: Database, version: int) -> list[tuple[str, str, float, int]]:
    with db.session() as s:
        q = (
            select(Golden.fdb_key, Solver.name, Golden.time_ms, Golden.session)
            .join(Solver, Solver.id == Golden.solver)
            .where(Golden.golden_v == version)
        )
        return sorted((k, sv, t, sid) for k, sv, t, sid in s.execute(q))


@pytest.fixture
def first(db: Database) -> int:
    add_configs(db, [ONE_BY_ONE, THREE_BY_THREE])
    sid = make_session(db)
    add_find(db, sid, BASE)
    return sid


def test_a_version_is_a_snapshot_that_is_never_rewritten(db: Database, first: int) -> None:
    report = update_golden(db, 1, first, note="baseline")
    assert (report.parent, report.rows, report.keys, report.slower) == (None, 4, 2, [])
    before = golden_rows(db, 1)
    add_find(db, first, [(K1, "NoopTunable", 0.1, 0, "ig")])
    with pytest.raises(GoldenExistsError, match="golden version 1 exists; golden versions are"):
        update_golden(db, 1, first)
    assert golden_rows(db, 1) == before
    with db.session() as s:
        v = s.get(GoldenVersion, 1)
        assert v is not None and (v.arch, v.num_cu, v.parent, v.note) == (
            "gfx90a",
            104,
            None,
            "baseline",
        )


def test_a_child_carries_the_parent_forward_and_reports_slower_keys(
    db: Database, first: int
) -> None:
    update_golden(db, 1, first)
    second = make_session(db)
    add_find(
        db,
        second,
        [
            (K1, "NoopGemm1x1", 0.3, 1024, "gemm"),  # 0.25 -> 0.3: the key is 20 % slower
            (K3, "NoopWinograd3x3", 0.8, 4096, "winograd"),  # 0.75 -> 0.8: 6.7 %, under 10 %
            (K3, "NoopTunable", 2.0, 0, "ig"),  # new solver, not the fastest
        ],
    )
    report = update_golden(db, 2, second, base=1)
    assert (report.parent, report.carried, report.from_session, report.keys) == (1, 2, 3, 2)
    assert report.slower == [SlowerKey(K1, "NoopGemm1x1", 0.25, "NoopGemm1x1", 0.3)]
    assert report.slower[0].slowdown == pytest.approx(0.2)
    assert golden_rows(db, 2) == [
        (K1, "NoopDirect", 0.5, first),
        (K1, "NoopGemm1x1", 0.3, second),
        (K3, "NoopDirect", 1.5, first),
        (K3, "NoopTunable", 2.0, second),
        (K3, "NoopWinograd3x3", 0.8, second),
    ]
    assert len(update_golden(db, 3, second, base=1, threshold=0.05).slower) == 2
    with db.session() as s:
        assert s.get(GoldenVersion, 2).parent == 1  # type: ignore[union-attr]


def test_bad_rows_and_mismatched_bases_are_refused(db: Database, first: int) -> None:
    update_golden(db, 1, first)
    other = make_session(db, arch="gfx942", num_cu=304)
    add_find(db, other, [(K1, "NoopDirect", 0.1, 0, "direct")])
    with pytest.raises(TunaError, match="base golden version 1 holds gfx90a 104 CUs; session"):
        update_golden(db, 2, other, base=1)
    bad = make_session(db)
    add_find(db, bad, [(K3, "NoopGemm1x1", -1, 0, "gemm")])
    with pytest.raises(ExportRefusedError, match="filter is not 1x1"):
        update_golden(db, 2, bad, base=1)
    with pytest.raises(NotFoundError, match="base golden version 9 does not exist"):
        update_golden(db, 2, first, base=9)
    with pytest.raises(NotFoundError, match="has no find results"):
        update_golden(db, 2, make_session(db))
    with db.session() as s:
        assert s.scalars(select(GoldenVersion.version)).all() == [1]


def frozen(db: Database, version: int) -> list[tuple[int, int, int | None, int]]:
    """(config, solver, job, kernel) of the version's rows and their frozen kernels."""
    with db.session() as s:
        q = (
            select(Golden.config, Golden.solver, Golden.job, GoldenKernel.kernel)
            .join(GoldenKernel, GoldenKernel.golden == Golden.id)
            .where(Golden.golden_v == version)
        )
        return sorted((c, sv, j, k) for c, sv, j, k in s.execute(q))


def test_rows_keep_their_job_and_its_chosen_kernels_which_never_change(db: Database) -> None:
    sid = run_noop(db, [ONE_BY_ONE, THREE_BY_THREE])
    update_golden(db, 1, sid)
    with db.session() as s:
        chosen = sorted(
            (c, sv, j, k)
            for c, sv, j, k in s.execute(
                select(FindDb.config, FindDb.solver, FindDb.job, JobKernel.kernel)
                .join(JobKernel, JobKernel.job == FindDb.job)
                .where(FindDb.session == sid, JobKernel.chosen)
            )
        )
        jobs = s.execute(select(Golden.job).where(Golden.golden_v == 1)).scalars().all()
    assert frozen(db, 1) == chosen and len(chosen) == len(jobs) and None not in jobs
    with db.session() as s:  # the session's choice moves: the version's does not
        s.execute(update(JobKernel).values(chosen=False))
    with pytest.raises(GoldenExistsError):
        update_golden(db, 1, sid)
    assert frozen(db, 1) == chosen
    add_configs(db, [ONE_BY_ONE.replace("-n 16", "-n 32")], tag="more")
    other = make_session(db)
    add_find(db, other, [(K1.replace("-16-", "-32-"), "NoopDirect", 0.5, 0, "direct")])
    update_golden(db, 2, other, base=1)
    assert frozen(db, 2) == chosen  # carried forward with the rows
