"""A search across the three-host test cluster (issue #15): builds on one host, runs on the
others, the build artifact fetched from the database by every host that runs it.

examples/c_build_run, its sources shipped as an artifact: ``go_fish --compile -m FIRST``
builds every build tuple on the first host, then ``go_fish --search -m OTHERS`` runs every
point on the other two (their evaluate workers find no build left to take).
"""

from __future__ import annotations

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
