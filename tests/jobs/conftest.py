from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.jobs.seed import open_test_db
from tuna.db import Database


@pytest.fixture
def lite(sqlite_url: str) -> Iterator[Database]:
    """A SQLite-only database, for tests of logic that does not depend on the dialect."""
    database = open_test_db(sqlite_url)
    yield database
    database.dispose()
