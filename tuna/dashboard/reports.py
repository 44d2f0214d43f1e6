"""The ``tuna report`` outputs under ``--reports DIR``: which exist, and which files to serve.

Only what ``tuna report`` wrote is served: a report is a directory ``DIR/NAME`` holding a
``report.json``, and its files are the ones that ``report.json`` lists (``files``; a
report written before that list existed: its page, its JSON and its figures by name).
Nothing else under DIR is reachable, even with ``--reports .`` in a checkout: not
``.env``, not ``.git/``, not the SQLite database beside it, not a symlink out of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIGURE_FORMATS = ("png", "svg", "csv")
ALWAYS = ("index.html", "report.json", "pareto.json", "search-pareto.json")
"""A report's own files, served when present (what a report before the ``files`` list wrote)."""


def _meta(report: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((report / "report.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def by_session(reports: Path | None) -> dict[int, list[str]]:
    """The report directories under ``reports`` by the sessions they show."""
    found: dict[int, list[str]] = {}
    if reports is None:
        return found
    for meta_path in sorted(reports.glob("*/report.json")):
        meta = _meta(meta_path.parent)
        sessions = meta.get("sessions") if meta else None
        if not isinstance(sessions, list) or meta_path.parent.name.startswith("."):
            continue
        for sid in sessions:
            if isinstance(sid, int):
                found.setdefault(sid, []).append(meta_path.parent.name)
    return found


def listed_files(meta: dict[str, Any]) -> set[str]:
    """The paths (relative to the report) a report's ``report.json`` says it wrote."""
    files = meta.get("files")
    if isinstance(files, list):
        return {f for f in files if isinstance(f, str)} | {"report.json"}
    figures = meta.get("figures")
    names = [f for f in figures if isinstance(f, str)] if isinstance(figures, list) else []
    return set(ALWAYS) | {f"figures/{n}.{ext}" for n in names for ext in FIGURE_FORMATS}


def report_file(reports: Path, name: str, path: str) -> Path | None:
    """The file ``path`` of report ``name``, or None unless ``tuna report`` wrote it there."""
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        return None
    root = reports.resolve()
    report = root / name
    if report.resolve().parent != root:  # a symlink out of DIR
        return None
    meta = _meta(report)
    if meta is None or path not in listed_files(meta):
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return None
    target = report.joinpath(*parts)
    try:
        resolved = target.resolve(strict=True)
    except OSError:
        return None
    if not resolved.is_relative_to(report.resolve()) or not resolved.is_file():
        return None
    return resolved
