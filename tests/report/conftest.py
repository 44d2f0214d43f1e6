from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.report.seed import Seeded, seed
from tuna.db import Database, open_database


@pytest.fixture
def seeded(db: Database) -> Iterator[tuple[Database, Seeded]]:
    """The seeded database on SQLite and on MariaDB."""
    yield db, seed(db)


@pytest.fixture
def lite_seeded(sqlite_url: str) -> Iterator[tuple[Database, Seeded]]:
    database = open_database(sqlite_url)
    yield database, seed(database)
    database.dispose()
