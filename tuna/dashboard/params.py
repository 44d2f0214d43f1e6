"""Query parameters, checked: a bad one is a :class:`BadRequest` that names it (HTTP 400)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tuna.errors import TunaError


class BadRequest(TunaError):
    """Raised when a request's query parameters are malformed; the page says which."""


def known(params: Mapping[str, str], allowed: set[str]) -> None:
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise BadRequest(
            f"unknown query parameter {', '.join(unknown)}; this page takes "
            f"{', '.join(sorted(allowed)) or 'none'}"
        )


def integer(
    params: Mapping[str, str], name: str, default: int | None = None, *, lo: int = 0,
    hi: int = 2**62,
) -> int | None:  # fmt: skip
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name}={value} is out of range ({lo} to {hi})")
    return value


def number(params: Mapping[str, str], name: str) -> float | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise BadRequest(f"{name}={raw!r} must be a finite number >= 0")
    return value


def text(params: Mapping[str, str], name: str, *, max_len: int = 255) -> str | None:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return None
    if len(raw) > max_len:
        raise BadRequest(f"{name} is longer than {max_len} characters")
    return raw.strip()
