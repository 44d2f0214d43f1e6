from __future__ import annotations

from pathlib import Path

import pytest

from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture
def db(db_url) -> Database:
    """A migrated database on each backend."""
    engine = make_engine(db_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    database = open_database(db_url)
    yield database
    database.dispose()


@pytest.fixture
def driver_dir() -> Path:
    path = SHARED_DATA / "driver"
    assert path.is_dir(), f"{path} is missing: the tests read ../shared/data beside the repo"
    return path
