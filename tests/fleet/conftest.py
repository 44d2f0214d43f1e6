"""Fixtures of the cluster tier: worker hosts reached over SSH, each with its own Docker engine.

``bin/test-cluster up DIR`` makes the cluster (``bin/test`` does it and exports
``TUNA_TEST_CLUSTER_DIR``); these fixtures read ``DIR/cluster.json``. Without a cluster the
tests skip, unless ``TUNA_REQUIRE_CLUSTER=1`` (set by ``bin/test``), where they fail.

* ``cluster`` (session): the :class:`Cluster` — hosts, database URLs, image, SSH key and
  known_hosts — with ``cut``/``restore`` (a host off the network, its processes still
  running) and ``restart_db``.
* ``cluster_db``: the cluster's database (``cluster.db_url``), as a fresh migration leaves it
  (emptied before each test), as a :class:`tuna.db.Database`.
* ``slurm_cluster`` and ``slurm_db``: the same for the tests of go_fish on the cluster's
  Slurm, with a database of their own (``tuna_slurm``), so that ``bin/test`` can run them in
  a process of their own beside the SSH tests.

Tests that use any of them are marked ``cluster`` (``-m "not cluster"`` leaves them out), the
Slurm ones ``slurm`` too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from tests.fleet.cluster import Cluster
from tests.support.databases import FreshDatabase
from tuna.db import Database, open_database


def _cluster_required() -> bool:
    return os.environ.get("TUNA_REQUIRE_CLUSTER", "").strip() == "1"


SLURM_DB = "tuna_slurm"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "cluster" in fixtures or "cluster_db" in fixtures:
            item.add_marker(pytest.mark.cluster)
        if "slurm_cluster" in fixtures or "slurm_db" in fixtures:
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The running test cluster; skips without one (fails when TUNA_REQUIRE_CLUSTER=1)."""
    given = os.environ.get("TUNA_TEST_CLUSTER_DIR", "").strip()
    if not given:
        message = (
            "cluster tier: set TUNA_TEST_CLUSTER_DIR (bin/test-cluster up DIR) or run bin/test"
        )
        if _cluster_required():
            pytest.fail(
                f"{message} (TUNA_REQUIRE_CLUSTER=1: cluster tests never skip)", pytrace=False
            )
        pytest.skip(message)
    path = Path(given) / "cluster.json"
    if not path.is_file():
        pytest.fail(
            f"cluster tier: {path} is missing (did `bin/test-cluster up {given}` finish?)",
            pytrace=False,
        )
    c = Cluster.load(path)
    yield c
    c.restore_all()  # a host a failed test left cut off


@pytest.fixture(scope="session")
def _cluster_admin_engine(cluster: Cluster) -> Iterator[Engine]:
    """Drops and recreates the cluster's database; connected to no database, so that it can."""
    url = make_url(cluster.db_url).set(database=None)
    engine = sa.create_engine(url, pool_pre_ping=True)  # pre-ping: restart_db drops connections
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def _cluster_fresh_db(cluster: Cluster, _cluster_admin_engine: Engine) -> FreshDatabase:
    return FreshDatabase(_cluster_admin_engine, cluster.db_url)


@pytest.fixture
def cluster_db(_cluster_fresh_db: FreshDatabase) -> Iterator[Database]:
    """The cluster's database (``cluster.db_url``; the hosts reach it at ``worker_db_url``),
    as a fresh migration leaves it: before each test, connections the last one left are
    killed and its rows deleted (or, if its schema changed, it is recreated and migrated:
    tests/support/databases.py); after the test it is left as the test left it (to look at
    after a failure)."""
    _cluster_fresh_db.make_fresh()
    database = open_database(_cluster_fresh_db.url)
    yield database
    database.dispose()


@pytest.fixture(scope="session")
def slurm_cluster(cluster: Cluster) -> Cluster:
    """The cluster with the Slurm tests' own database in its URLs (``tuna_slurm``)."""
    if cluster.slurm_conf is None:
        pytest.fail("cluster.json names no Slurm: bring the cluster up again", pytrace=False)
    return replace(
        cluster,
        db_url=make_url(cluster.db_url).set(database=SLURM_DB).render_as_string(False),
        worker_db_url=make_url(cluster.worker_db_url)
        .set(database=SLURM_DB)
        .render_as_string(False),
    )


@pytest.fixture(scope="session")
def _slurm_fresh_db(slurm_cluster: Cluster, _cluster_admin_engine: Engine) -> FreshDatabase:
    return FreshDatabase(_cluster_admin_engine, slurm_cluster.db_url)


@pytest.fixture
def slurm_db(_slurm_fresh_db: FreshDatabase) -> Iterator[Database]:
    """``cluster_db`` of the Slurm tests: their database, fresh before each test."""
    _slurm_fresh_db.make_fresh()
    database = open_database(_slurm_fresh_db.url)
    yield database
    database.dispose()
