"""The repo's examples/ as the tests load them: each example's spec.py, as it ships."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load_example(name: str) -> ModuleType:
    """``examples/<name>/spec.py`` (its ``SPEC`` and ``OBJECTIVE``)."""
    path = EXAMPLES / name / "spec.py"
    module_spec = importlib.util.spec_from_file_location(f"example_{name}_spec", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module
