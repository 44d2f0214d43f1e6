"""Searches with runs to look at, written as the driver and the workers write them.

Rows go straight into ``search``, ``search_build`` and ``search_run`` (what the driver
and the result writer store), so the read side is tested on known values without running
a benchmark. ``land`` finishes a run the way a worker's result does: stats, the objective's
stat as ``value``, ``valid``, the machine and the finish time. Shared by the searches,
report, CLI and dashboard tests. Each write recounts the search's ``search_tally`` row, as
the result writer keeps it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update

from tests.report.seed import session
from tuna.db import Database
from tuna.db.models import Artifact, Search, SearchBuild, SearchRun
from tuna.fleet.machines import add_machine
from tuna.jobs.search_results import recount

T0 = dt.datetime(2026, 11, 24, 1, 0, 0)

# The "serve" search: batch is build-time, threads run-time; maximise throughput among
# the runs whose result_validity says VALID. (seq, batch, threads, stats or failure,
# landing order): seq 3 printed more throughput than any but is INVALID, seq 4 crashed,
# seq 6 and 7 are in flight. Runs land out of proposal order (seq 1 first).
SERVE = [
    (0, 1, 1, {"throughput": 100.0, "p95_ms": 5.0, "result_validity": "VALID"}, 2),
    (1, 1, 2, {"throughput": 180.0, "p95_ms": 9.0, "result_validity": "VALID"}, 1),
    (2, 2, 1, {"throughput": 150.0, "p95_ms": 9.5, "result_validity": "VALID"}, 3),
    (3, 2, 2, {"throughput": 900.0, "p95_ms": 50.0, "result_validity": "INVALID"}, 4),
    (4, 4, 1, "exit status 1: segfault", 5),
    (5, 4, 2, {"throughput": 250, "p95_ms": 20.0, "result_validity": "VALID"}, 6),
    (6, 8, 1, None, None),
    (7, 8, 2, None, None),
]
SERVE_BEST_SO_FAR = [180.0, 180.0, 180.0, 180.0, 180.0, 250.0]
# The "bisect" search: minimise p95_ms, no validity stat, no builds.
BISECT_P95 = [12.0, 8.0, 10.0, 7.0]


@dataclass(frozen=True)
class SeededSearches:
    session: int
    other_session: int
    serve: int
    bisect: int
    empty: int
    other: int
    machine: int
    builds: dict[int, int]  # batch -> search_build id


def add_search(
    db: Database,
    sid: int,
    name: str,
    objective: dict[str, Any],
    *,
    searcher: str | None = None,
    budget: int | None = None,
    parallelism: int = 2,
    state: str = "active",
) -> int:
    with db.session() as s:
        return int(
            s.execute(
                insert(Search).values(
                    session=sid,
                    name=name,
                    space_file="space.json",
                    space_text='{"batch": [1, 2]}',
                    base={},
                    searcher=searcher,
                    objective=objective,
                    budget=budget,
                    parallelism=parallelism,
                    backend="bench",
                    spec={"run": "true"},
                    state=state,
                )  # fmt: skip
            ).inserted_primary_key[0]  # type: ignore[index]
        )


def add_build(db: Database, search: int, params: dict[str, Any], built: bool) -> int:
    with db.session() as s:
        artifact = None
        if built:
            digest = hashlib.sha256(f"{search} {sorted(params.items())}".encode()).hexdigest()
            artifact = s.execute(
                insert(Artifact).values(digest=digest, size=3, blob=b"tar")
            ).inserted_primary_key[0]  # type: ignore[index]
        return int(
            s.execute(
                insert(SearchBuild).values(
                    search=search,
                    build_key=str(sorted(params.items())),
                    params=params,
                    artifact=artifact,
                    valid=True if built else None,
                )  # fmt: skip
            ).inserted_primary_key[0]  # type: ignore[index]
        )


def add_run(db: Database, search: int, seq: int, point: dict[str, Any],
            build: int | None = None) -> int:  # fmt: skip
    with db.session() as s:
        run = s.execute(
            insert(SearchRun).values(search=search, seq=seq, point=point, config=point, build=build)
        ).inserted_primary_key[0]  # type: ignore[index]
        recount(s.connection(), [search])
        return int(run)


def land(
    db: Database,
    search: int,
    seq: int,
    outcome: dict[str, Any] | str,
    *,
    machine: int | None = None,
    at: dt.datetime | None = None,
) -> None:
    """Finish run ``seq`` with ``outcome`` (its stats, or why it failed)."""
    with db.session() as s:
        stat = s.execute(select(Search.objective).where(Search.id == search)).scalar_one()["stat"]
        if isinstance(outcome, str):
            values: dict[str, Any] = {"valid": False, "reason": outcome, "stats": {}}
        else:
            v = outcome.get(stat)
            values = {"valid": True, "stats": outcome,
                      "value": float(v) if isinstance(v, int | float) else None}  # fmt: skip
        s.execute(
            update(SearchRun)
            .where(SearchRun.search == search, SearchRun.seq == seq)
            .values(machine=machine, finished=at or dt.datetime.now(), **values)
        )
        recount(s.connection(), [search])


def seed_searches(db: Database) -> SeededSearches:
    sid = session(db, "searches")
    other_sid = session(db, "other-searches")
    machine = add_machine(db, "bench-host", arch="x86_64", num_cu=1).id
    serve = add_search(
        db, sid, "serve", {"stat": "throughput", "goal": "max", "valid": "result_validity"},
        budget=10, parallelism=4,
    )  # fmt: skip
    builds = {b: add_build(db, serve, {"batch": b}, built=b in (1, 2, 4)) for b in (1, 2, 4, 8)}
    for seq, batch, threads, _, _ in SERVE:
        add_run(db, serve, seq, {"batch": batch, "threads": threads}, builds[batch])
    for seq, _, _, outcome, order in sorted(
        (r for r in SERVE if r[4] is not None), key=lambda r: r[4] or 0
    ):
        assert outcome is not None and order is not None
        land(db, serve, seq, outcome, machine=machine, at=T0 + dt.timedelta(seconds=order))
    bisect = add_search(
        db, sid, "rate-bisect", {"stat": "p95_ms", "goal": "min", "valid": None},
        searcher="Bisect('rate', 10, 200, 10, lambda r: r.stats['p95_ms'] < 10)",
    )  # fmt: skip
    for seq, p95 in enumerate(BISECT_P95):
        add_run(db, bisect, seq, {"rate": 10 * (seq + 1)})
        land(db, bisect, seq, {"p95_ms": p95}, at=T0 + dt.timedelta(seconds=seq))
    empty = add_search(db, sid, "empty", {"stat": "qps", "goal": "max"}, budget=5)
    other = add_search(db, other_sid, "serve", {"stat": "qps", "goal": "max"})
    add_run(db, other, 0, {"x": 1})
    return SeededSearches(sid, other_sid, serve, bisect, empty, other, machine, builds)
