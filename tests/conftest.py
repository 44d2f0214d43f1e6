"""Shared fixtures for Tuna's tests.

Two tiers:

* SQLite tier: always runs (``sqlite_url``).
* MySQL tier: needs a real MariaDB/MySQL server given by ``TUNA_TEST_DB_URL`` (``bin/test``
  starts a throwaway one). Without it these tests skip locally, and fail when
  ``TUNA_REQUIRE_MYSQL=1`` or ``CI`` is set. ``mysql_url`` is a freshly created, empty
  database of the test's own.

``db_url`` runs a test on both backends with an empty database. ``db`` (both backends),
``lite`` (SQLite) and ``mysql_db`` (MySQL) are databases at the head revision; they come
migrated once per test process and reused (tests/support/databases.py), which saves the
1-3 s a migration takes on MariaDB.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import settings
from sqlalchemy.engine import Engine, make_url

from tests.support import isolation
from tests.support.databases import MysqlPool, create_database, drop_database
from tests.support.seed import open_test_db
from tuna.db import Database

# Hypothesis' per-example deadline (200 ms) measures the machine, not the code: on a loaded
# machine running the tests in parallel it fails correct tests at random.
settings.register_profile("tuna", deadline=None)
settings.load_profile("tuna")

# Users' own settings must not leak into the tests.
_ISOLATED_VARS = (
    "TUNA_DB_URL",
    "TUNA_DB_USER_NAME",
    "TUNA_DB_USER_PASSWORD",
    "TUNA_DB_HOSTNAME",
    "TUNA_DB_NAME",
)
_saved_env: dict[str, str | None] = {}
_data_dir: str | None = None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def _mysql_required() -> bool:
    return os.environ.get("TUNA_REQUIRE_MYSQL", "").strip() == "1" or _truthy(os.environ.get("CI"))


def pytest_configure(config: pytest.Config) -> None:
    """Isolate the run from the user's Tuna settings (before any test module is imported)."""
    global _data_dir
    names = {*_ISOLATED_VARS, *(k for k in os.environ if k.startswith("TUNA_DB_")), "TUNA_DATA_DIR"}
    for name in names:
        _saved_env[name] = os.environ.pop(name, None)
    _data_dir = tempfile.mkdtemp(prefix="tuna-test-data-")
    os.environ["TUNA_DATA_DIR"] = _data_dir
    isolation.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, value in _saved_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved_env.clear()
    if _data_dir is not None:
        shutil.rmtree(_data_dir, ignore_errors=True)


# Files whose tests take seconds each (worker processes, real benchmarks, a browser): collected
# first, so that pytest-xdist hands them out at the start and the run does not end with one
# process on a long test while the other has nothing left (the sixteen-worker test, ~18 s, came
# 25th from last of ~2,000). Each file stays whole and in its own order.
LONG_FIRST = (
    "tests/worker/test_mysql.py",
    "tests/searches/test_examples.py",
    "tests/cli/test_quickstart.py",
    "tests/fleet/test_local.py",
    "tests/dashboard/test_browser.py",
    "tests/dashboard/test_search_browser.py",
    "tests/cli/test_go_fish.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use the MySQL fixtures directly belong to the MySQL tier (``-m "not mysql"``);
    the files of LONG_FIRST come first."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "mysql_url" in fixtures or "mysql_server_url" in fixtures:
            item.add_marker(pytest.mark.mysql)
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_collection_finish(session: pytest.Session) -> None:
    opened = isolation.take()
    if opened:
        raise pytest.UsageError(
            "collecting the tests opened files outside the repo (copy what a test needs into "
            "tests/data, see tests/data/SOURCES.md): " + ", ".join(opened)
        )


@pytest.fixture(autouse=True)
def _only_files_in_the_repo() -> Iterator[None]:
    """Fails a test that opened a file outside the repo (tests/support/isolation.py)."""
    isolation.take()
    yield
    opened = isolation.take()
    if opened:
        pytest.fail(
            "the test opened files outside the repo (copy what it needs into tests/data, see "
            "tests/data/SOURCES.md): " + ", ".join(opened),
            pytrace=False,
        )


# --- MySQL tier -----------------------------------------------------------------------------------


@pytest.fixture
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``TUNA_LOCK_DIR`` in the test's own directory: the machine locks a machine-owning
    backend's workers take (tuna.worker.exclusive) are this test's alone. A module that
    runs such workers uses it in every test (``pytest.mark.usefixtures("own_lock_dir")``)."""
    locks = tmp_path / "locks"
    monkeypatch.setenv("TUNA_LOCK_DIR", str(locks))
    return locks


@pytest.fixture(scope="session")
def mysql_server_url() -> str:
    """URL of the test server (``TUNA_TEST_DB_URL``), as a string with the password."""
    url = os.environ.get("TUNA_TEST_DB_URL", "").strip()
    if not url:
        message = "MySQL tier: set TUNA_TEST_DB_URL or run bin/test"
        if _mysql_required():
            pytest.fail(
                f"{message} (MySQL-tier tests never skip when TUNA_REQUIRE_MYSQL=1 or CI is set)",
                pytrace=False,
            )
        pytest.skip(message)
    return url


@pytest.fixture(scope="session")
def _mysql_admin_engine(mysql_server_url: str) -> Iterator[Engine]:
    """One engine on the server, used to create and drop the per-test databases."""
    engine = sa.create_engine(mysql_server_url, pool_pre_ping=True)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.OperationalError as exc:
        engine.dispose()
        shown = make_url(mysql_server_url).render_as_string(hide_password=True)
        pytest.fail(f"MySQL tier: cannot connect to TUNA_TEST_DB_URL={shown}: {exc}", pytrace=False)
    yield engine
    engine.dispose()


@pytest.fixture
def mysql_url(mysql_server_url: str, _mysql_admin_engine: Engine) -> Iterator[str]:
    """URL (string, with password) of a fresh, empty utf8mb4 database, dropped after the test."""
    name = f"tuna_t_{secrets.token_hex(6)}"
    create_database(_mysql_admin_engine, name)
    try:
        yield make_url(mysql_server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        drop_database(_mysql_admin_engine, name)


@pytest.fixture(scope="session")
def _mysql_pool(mysql_server_url: str, _mysql_admin_engine: Engine) -> Iterator[MysqlPool]:
    """This process's migrated MySQL databases, reused from test to test
    (tests/support/databases.py)."""
    pool = MysqlPool(mysql_server_url, _mysql_admin_engine)
    yield pool
    pool.close()


@pytest.fixture
def mysql_db(_mysql_pool: MysqlPool) -> Iterator[Database]:
    """A MySQL database at the head revision, holding what a fresh migration holds (pooled)."""
    with _mysql_pool.database() as database:
        yield database


# --- SQLite tier ----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """URL of a (not yet created) SQLite database file in the test's tmp_path."""
    return f"sqlite:///{tmp_path / 'tuna.db'}"


# --- both -----------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Runs the test once on SQLite and once on MySQL (the MySQL one is in the MySQL tier)."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


# --- a migrated database on each backend ---------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    """A database at the head revision, on SQLite (a copy of a migrated file, in tmp_path) and
    on MariaDB (``mysql_db``, from the pool); the same as migrating an empty one, faster."""
    if request.param == "sqlite":
        yield request.getfixturevalue("lite")
    else:
        yield request.getfixturevalue("mysql_db")


@pytest.fixture
def lite(sqlite_url: str) -> Iterator[Database]:
    """A SQLite-only database at the head revision, for logic the dialect does not change."""
    database = open_test_db(sqlite_url)
    yield database
    database.dispose()
