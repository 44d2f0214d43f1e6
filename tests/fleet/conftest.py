"""Fixtures of the cluster tier: worker hosts reached over SSH, each with its own Docker engine.

``bin/test-cluster up DIR`` makes the cluster (``bin/test`` does it and exports
``TUNA_TEST_CLUSTER_DIR``); these fixtures read ``DIR/cluster.json``. Without a cluster the
tests skip, unless ``TUNA_REQUIRE_CLUSTER=1`` (set by ``bin/test``), where they fail.

* ``cluster`` (session): the :class:`Cluster` — hosts, database URLs, image, SSH key and
  known_hosts — with ``cut``/``restore`` (a host off the network, its processes still
  running) and ``restart_db``.
* ``cluster_db``: the cluster's database (``cluster.db_url``), emptied and migrated to the
  head revision before each test, as a :class:`tuna.db.Database`.

Tests that use either fixture are marked ``cluster`` (``-m "not cluster"`` leaves them out).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from tests.fleet.cluster import Cluster
from tests.support.seed import open_test_db
from tuna.db import Database


def _cluster_required() -> bool:
    return os.environ.get("TUNA_REQUIRE_CLUSTER", "").strip() == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "cluster" in fixtures or "cluster_db" in fixtures:
            item.add_marker(pytest.mark.cluster)


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


def _recreate_database(engine: Engine, name: str) -> None:
    with engine.connect() as conn:
        # A host that was cut off, or a killed worker, may still hold locks: wait 10 s, not a day.
        conn.exec_driver_sql("SET SESSION lock_wait_timeout = 10")
        try:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        except sa.exc.OperationalError:
            rows = conn.exec_driver_sql(
                "SELECT id FROM information_schema.processlist"
                " WHERE db = %s AND id <> CONNECTION_ID()",
                (name,),
            ).fetchall()
            for (conn_id,) in rows:
                conn.exec_driver_sql(f"KILL {int(conn_id)}")
            warnings.warn(
                f"database {name} was still in use by the previous test; "
                f"killed {len(rows)} connection(s)",
                stacklevel=1,
            )
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        conn.exec_driver_sql(
            f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )


@pytest.fixture
def cluster_db(cluster: Cluster, _cluster_admin_engine: Engine) -> Iterator[Database]:
    """The cluster's database (``cluster.db_url``; the hosts reach it at ``worker_db_url``),
    empty and at the head revision: dropped, recreated and migrated before each test, and left
    as the test leaves it (to look at after a failure)."""
    name = make_url(cluster.db_url).database
    assert name
    _recreate_database(_cluster_admin_engine, name)
    database = open_test_db(cluster.db_url)
    yield database
    database.dispose()
