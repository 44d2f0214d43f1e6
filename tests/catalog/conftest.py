from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def driver_dir() -> Path:
    path = SHARED_DATA / "driver"
    assert path.is_dir(), f"{path} is missing: tests/data holds the real inputs the tests read"
    return path
