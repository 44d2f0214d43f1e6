from __future__ import annotations

from collections.abc import Iterator

import pytest

from tuna.db import Database, open_database


@pytest.fixture
def lite(sqlite_url: str) -> Iterator[Database]:
    """A SQLite-only database, for what does not depend on the dialect."""
    database = open_database(sqlite_url)
    yield database
    database.dispose()
