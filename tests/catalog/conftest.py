from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.data import DRIVER_DATA


@pytest.fixture
def driver_dir() -> Path:
    path = DRIVER_DATA
    assert path.is_dir(), f"{path} is missing: tests/data holds the real inputs the tests read"
    return path
