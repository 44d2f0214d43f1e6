"""Where the real inputs the tests read live: tests/data (SOURCES.md says where each came from)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
MIOPEN_DATA = DATA / "miopen"
DRIVER_DATA = DATA / "driver"
