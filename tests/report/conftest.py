from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from tests.report.seed import Seeded, seed, seeded_database
from tests.support.seed import open_test_db
from tuna.db import Database

# matplotlib keeps its font cache in ~/.cache; the tests read nothing outside the repo.
os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="tuna-test-mpl-"))

DIALECTS = ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]


@pytest.fixture(scope="module", params=DIALECTS)
def seeded(request, tmp_path_factory) -> Iterator[tuple[Database, Seeded]]:
    """The seeded database on SQLite and on MariaDB, one per module and dialect."""
    with seeded_database(request, tmp_path_factory.mktemp("seeded")) as db:
        yield db, seed(db)


@pytest.fixture
def lite_seeded(sqlite_url: str) -> Iterator[tuple[Database, Seeded]]:
    database = open_test_db(sqlite_url)
    yield database, seed(database)
    database.dispose()
