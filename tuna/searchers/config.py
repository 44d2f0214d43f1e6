"""The base configuration a search's points override: a JSON file and/or ``KEY=VALUE`` pairs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tuna.searchers.errors import SearchError
from tuna.searchers.run import Config


def parse_value(text: str) -> Any:
    """A ``KEY=VALUE`` value: a JSON number, boolean or null as such, anything else a string."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if value is None or isinstance(value, bool | int | float) else text


def parse_assignments(items: Sequence[str]) -> Config:
    """``["threads=4", "mode=fast"]`` as ``{"threads": 4, "mode": "fast"}``."""
    config: Config = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SearchError(
                f"base config: {item!r} is not KEY=VALUE; write it like threads=4 or mode=fast"
            )
        config[key.strip()] = parse_value(value)
    return config


def load_base_config(path: str | Path | None = None, assignments: Sequence[str] = ()) -> Config:
    """The JSON object in ``path`` (if any) with ``assignments`` laid over it."""
    config: Config = {}
    if path is not None:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except OSError as e:
            raise SearchError(f"{p}: cannot read the base config ({e.strerror or e})") from e
        except ValueError as e:
            raise SearchError(f"{p}: the base config is not valid JSON ({e})") from e
        if not isinstance(data, dict):
            raise SearchError(f"{p}: the base config must be one JSON object of settings")
        config.update(data)
    config.update(parse_assignments(assignments))
    return config
