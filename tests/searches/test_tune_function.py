"""tuna.tune with the objective named ``module:function``: imported from the current
directory, as go_fish's workers import a search's ``--objective-fn``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

import tuna
from tuna.db.models import Search, SearchRun
from tuna.errors import TunaError


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "tunemod.py").write_text("def cost(params):\n    return (params['x'] - 2) ** 2\n")
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tunemod", None)
    yield tmp_path
    sys.modules.pop("tunemod", None)


def test_a_function_named_module_colon_function_is_imported_and_tuned(here, lite):
    result = tuna.tune("tunemod:cost", {"x": [1, 2, 3]}, storage=lite)
    assert result.name == "cost" and result.best_params == {"x": 2}
    with lite.session() as s:
        assert s.execute(select(func.count()).select_from(SearchRun)).scalar_one() == 3


@pytest.mark.parametrize(
    "ref, message",
    [
        ("tunemod:nope", "has no 'nope'; name a function it defines"),
        ("elsewhere:cost", "no module 'elsewhere' in "),
        ("tunemod", "write it as module:function"),
    ],
)
def test_a_bad_reference_is_one_error_and_stores_nothing(here, lite, ref, message):
    with pytest.raises(TunaError, match=message):
        tuna.tune(ref, {"x": [1, 2, 3]}, storage=lite)
    with lite.session() as s:
        assert s.execute(select(func.count()).select_from(Search)).scalar_one() == 0
