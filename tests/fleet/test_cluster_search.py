"""Searches across the three-host test cluster (issue #15): builds on one host, runs on the
others, the build artifact fetched from the database by every host that runs it.

examples/c_build_run, its sources shipped as an artifact: ``go_fish --compile -m FIRST``
builds every build tuple on the first host, then ``go_fish --search -m OTHERS`` runs every
point on the other two (their evaluate workers find no build left to take).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.fleet.fishing import ARCH, go_fish, register_hosts
from tests.searches.helpers import builds, runs
from tuna.db.models import Job
from tuna.searches import SearchRequest, create_search
from tuna.sessions import SessionSpec, create_session

pytestmark = pytest.mark.cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "c_build_run"


def test_builds_on_one_host_runs_on_the_others(cluster, cluster_db, tmp_path):
    db = cluster_db
    session = create_session(
        db, SessionSpec(arch=ARCH, num_cu=2, backend="bench", docker_image=cluster.image)
    ).id
    search = create_search(
        db,
        SearchRequest(
            session=session, name="c", space_file=str(EXAMPLE / "params.py"),
            space_text=(EXAMPLE / "params.py").read_text(), base={"cc": "cc"},
            spec={"build": "{cc} {opt} -DTILE={tile} -o bench bench.c",
                  "run": "./bench {n} {reps}", "stats": {"mode": "json"},
                  "source_dir": str(EXAMPLE), "owns": "nothing"},
            objective_stat="gflops", goal="max",
        ),
    )  # fmt: skip
    first, *others = register_hosts(db, cluster)
    logs = tmp_path / "logs"
    out = go_fish(cluster, logs, "-s", str(session), "--compile", "-m", str(first.id))
    assert "drained" in out
    assert all(b.valid for b in builds(db, search)), [b.reason for b in builds(db, search)]
    ids = ",".join(str(m.id) for m in others)
    out = go_fish(cluster, logs, "-s", str(session), "--search", "-m", ids)
    assert f"search {search} done" in out
    recorded = runs(db, search)
    assert len(recorded) == 20 and all(r.valid for r in recorded), [r.reason for r in recorded]
    assert len(builds(db, search)) == len({(r.config["tile"], r.config["opt"]) for r in recorded})
    with db.session() as s:
        where = dict(
            s.execute(
                select(Job.step, func.group_concat(Job.machine.distinct()))
                .where(Job.session == session)
                .group_by(Job.step)
            ).all()
        )
    assert {int(m) for m in where["build"].split(",")} == {first.id}
    ran_on = {int(m) for m in where["run"].split(",")}
    assert ran_on <= {m.id for m in others} and ran_on, where
    assert {r.machine for r in recorded} == ran_on


SERVER = Path(__file__).resolve().parents[2] / "examples" / "server_tuning"


def test_server_tuning_builds_on_one_host_and_runs_on_the_others(cluster, cluster_db, tmp_path):
    """examples/server_tuning (MariaDB under sysbench, in the worker image with --examples):
    the first build (a data directory made by a server with the build's my.cnf) on the first
    host, the Composer's runs (and any build it asks for later) on the other two, each
    starting a server from the fetched artifact."""
    db = cluster_db
    session = create_session(
        db, SessionSpec(arch=ARCH, num_cu=2, backend="bench", docker_image=cluster.image)
    ).id
    base = {**json.loads((SERVER / "base.json").read_text()), "seconds": 1, "table_size": 200}
    search = create_search(
        db,
        SearchRequest(
            session=session, name="server", space_file=str(SERVER / "params.py"),
            space_text=(SERVER / "params.py").read_text(), base=base, budget=3,
            spec={"build": "./server.sh build {innodb_buffer_pool_mb} "
                           "{innodb_flush_log_at_trx_commit} {table_size}",
                  "run": "./server.sh run {threads} {rate} {seconds}",
                  "stats": {"mode": "regex", "patterns": [
                      r"transactions:\s+\d+\s+\((?P<tps>[\d.]+) per sec",
                      r"95th percentile:\s+(?P<p95_ms>[\d.]+)"]},
                  "run_timeout_s": 60, "build_timeout_s": 120,
                  "source_dir": str(SERVER), "owns": "nothing"},
            objective_stat="tps", goal="max",
        ),
    )  # fmt: skip
    first, *others = register_hosts(db, cluster)
    logs = tmp_path / "logs"
    out = go_fish(cluster, logs, "-s", str(session), "--compile", "-m", str(first.id))
    assert "drained" in out
    built = builds(db, search)
    assert len(built) == 1 and built[0].valid, [b.reason for b in built]
    ids = ",".join(str(m.id) for m in others)
    out = go_fish(cluster, logs, "-s", str(session), "--search", "-m", ids)
    assert f"search {search} done" in out
    recorded = runs(db, search)
    assert len(recorded) == 3
    assert all(r.valid and r.stats["tps"] > 0 for r in recorded), [r.reason for r in recorded]
    assert (recorded[0].config["rate"], recorded[0].config["threads"]) == (500, 1)
    flushes = {r.config["innodb_flush_log_at_trx_commit"] for r in recorded}
    assert len(builds(db, search)) == len(flushes)
    with db.session() as s:
        built_on = s.execute(
            select(Job.machine).where(Job.search_build == built[0].id)
        ).scalar_one()
    assert built_on == first.id
    ran_on = {r.machine for r in recorded}
    assert ran_on and ran_on <= {m.id for m in others}, ran_on
