from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.report.seed import seeded_database
from tests.searches.seed import SeededSearches, seed_searches
from tuna.db import Database


@pytest.fixture(scope="module", params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def searched(request, tmp_path_factory) -> Iterator[tuple[Database, SeededSearches]]:
    """Seeded searches on SQLite and on MariaDB, one database per module and dialect."""
    with seeded_database(request, tmp_path_factory.mktemp("searches")) as db:
        yield db, seed_searches(db)
