from __future__ import annotations

from sqlalchemy import select

from tuna.db import bulk
from tuna.db.bulk import insert_missing, insert_missing_columns, upsert_columns
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


def test_columns_of_repeated_values_survive_exactly(db):
    """Column by column: repeated strings are escaped once per distinct value; ints, bools,
    NULLs and mixed columns each as their own literal."""
    names = [f"{n}{i}" for i in range(4) for n in NASTY]  # unique (the key), nasty
    algorithms = [NASTY[i % len(NASTY)] for i in range(len(names))]  # each 4 times
    columns = {
        "backend": ["b"] * len(names),
        "name": names,
        "tunable": [i % 3 == 0 for i in range(len(names))],
        "numeric_id": [i if i % 2 else None for i in range(len(names))],
        "algorithm": algorithms,
    }
    with db.session() as s:
        insert_missing_columns(s, Solver, columns)
        insert_missing_columns(s, Solver, columns)  # all present: nothing changes
    with db.session() as s:
        got = {(r.name, r.tunable, r.numeric_id, r.algorithm) for r in s.scalars(select(Solver))}
    assert got == set(
        zip(names, columns["tunable"], columns["numeric_id"], algorithms, strict=True)
    )
    assert len(got) == len(names)


def test_upsert_columns_overwrites_by_the_unique_key(db):
    with db.session() as s:
        insert_missing_columns(s, Solver, {"backend": ["b", "b"], "name": ["x", "y"]})
        upsert_columns(
            s,
            Solver,
            {"backend": ["b", "b"], "name": ["y", "z"], "algorithm": ["it's", "it's"]},
            ("backend", "name"),
        )
    with db.session() as s:
        got = dict(s.execute(select(Solver.name, Solver.algorithm)).all())
    assert got == {"x": None, "y": "it's", "z": "it's"}


def test_long_values_go_in_statements_below_the_packet_limit(db, monkeypatch):
    monkeypatch.setattr(bulk, "STATEMENT_BYTES", 300)
    names = [f"s{i:03}" + "x" * 100 for i in range(10)]  # 2 rows a statement at most
    with db.session() as s:
        insert_missing_columns(s, Solver, {"backend": ["b"] * 10, "name": names})
    with db.session() as s:
        assert sorted(s.scalars(select(Solver.name))) == names
    assert list(map(len, bulk._by_size(["x" * 100] * 10))) == [2, 2, 2, 2, 2]
