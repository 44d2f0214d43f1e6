"""Query parameters, checked: a bad one is a :class:`BadRequest` that names it (HTTP 400)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tuna.errors import NotFoundError, TunaError

MAX_ID = 2**63 - 1
"""The largest id a database column holds (BIGINT): a larger one names nothing."""


class BadRequest(TunaError):
    """Raised when a request's query parameters are malformed; the page says which."""


def path_id(raw: Any, what: str) -> int:
    """An id from the URL's path (digits, by the route): one past BIGINT is a 404, not a
    database error."""
    value = int(raw)
    if value > MAX_ID:
        raise NotFoundError(f"{what} {value} does not exist")
    return value


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


def choice(params: Mapping[str, str], name: str, allowed: Sequence[str]) -> str | None:
    """One of ``allowed``, or None when absent or empty."""
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    if raw not in allowed:
        raise BadRequest(f"{name}={raw[:40]!r}: expected one of {', '.join(allowed)}")
    return raw


def pair(params: Mapping[str, str], name: str) -> tuple[int, int]:
    """``A-B`` (two non-negative integers, e.g. a page's last config and solver): default 0-0."""
    raw = params.get(name)
    if raw is None or raw == "":
        return (0, 0)
    a, sep, b = raw.partition("-")
    if not (sep and a.isdigit() and b.isdigit() and len(raw) < 40):
        raise BadRequest(f"{name}={raw!r}: expected two integers as A-B, e.g. {name}=120-7")
    if int(a) > MAX_ID or int(b) > MAX_ID:
        raise BadRequest(f"{name}={raw!r}: out of range (ids are at most {MAX_ID})")
    return (int(a), int(b))


def family(params: Mapping[str, str], name: str) -> str | None:
    """A problem family as the results page shows it (``fwd 3x3``, ``wrw 1x1 g32``)."""
    from tuna.results.insight import parse_family

    raw = text(params, name, max_len=64)
    if raw is None:
        return None
    try:
        parse_family(raw)
    except TunaError as e:
        raise BadRequest(f"{name}={raw!r}: {str(e).partition(': ')[2]}") from None
    return raw
