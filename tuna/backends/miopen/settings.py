"""The miopen backend's settings, from a session's environment (see the package docstring)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna.backends.miopen.runner import FinCommand
from tuna.errors import TunaError


@dataclass(frozen=True)
class Settings:
    """Where fin is and how it runs; a bad value is a :class:`TunaError` naming it."""

    fin: FinCommand
    timeout_s: float
    scratch_root: Path
    keep_scratch: bool
    dynamic_only: bool
    applicability_batch: int

    @classmethod
    def of(cls, env: dict[str, Any]) -> Settings:
        def number(key: str, default: float) -> float:
            value = env.get(key)
            if value in (None, ""):
                return default
            try:
                return float(value)
            except (TypeError, ValueError) as e:
                raise TunaError(f"{key}={value!r} in the session environment: not a number") from e

        def flag(key: str) -> bool:
            return str(env.get(key, "")).strip().lower() in ("1", "true", "yes", "on")

        root = env.get("FIN_SCRATCH_DIR") or os.path.join(tempfile.gettempdir(), "tuna-fin")
        return cls(
            fin=FinCommand.from_setting(env.get("FIN_PATH")),
            timeout_s=number("FIN_TIMEOUT_S", 3600.0),
            scratch_root=Path(root),
            keep_scratch=flag("FIN_KEEP_SCRATCH"),
            dynamic_only=flag("FIN_DYNAMIC_ONLY"),
            applicability_batch=max(1, int(number("FIN_APPLICABILITY_BATCH", 100))),
        )

    def scratch(self, prefix: str) -> Path:
        """A new directory private to one fin run, under ``scratch_root``."""
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.scratch_root))
