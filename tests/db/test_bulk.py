from __future__ import annotations

from sqlalchemy import select

from tuna.db.bulk import insert_missing
from tuna.db.models import Solver

NASTY = [
    "it's",
    'say "hi"',
    "back\\slash",
    "100% -% 1 %s %(x)s",
    "nul\x00byte",
    "ünïcödé ✓",
    "--; DROP TABLE solver; --",
    "\n\t",
]


def test_values_survive_the_bulk_insert_exactly(db):
    rows = [
        {"backend": "b", "name": n, "tunable": i % 2 == 0, "numeric_id": i, "algorithm": None}
        for i, n in enumerate(NASTY)
    ]
    with db.session() as s:
        insert_missing(s, Solver, rows)
    with db.session() as s:
        got = {(r.name, r.tunable, r.numeric_id, r.algorithm) for r in s.scalars(select(Solver))}
    assert got == {(r["name"], r["tunable"], r["numeric_id"], None) for r in rows}


def test_rows_already_present_are_skipped_not_duplicated(db):
    rows = [{"backend": "b", "name": "x", "tunable": False}]
    with db.session() as s:
        insert_missing(s, Solver, rows)
        insert_missing(s, Solver, rows + [{"backend": "b", "name": "y", "tunable": True}])
    with db.session() as s:
        assert sorted(s.scalars(select(Solver.name))) == ["x", "y"]
