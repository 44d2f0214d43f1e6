"""The manifest written beside every export: where the rows came from, and what was written.

Reviewers of shipped dbs asked which library build, image and environment produced them
(reference mituna.md §9.2, §10.6). The manifest answers with the sessions' own records, the
target, the row counts and the sha256 of every file, so a file can be traced and verified.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna import __version__
from tuna.db.models import TuningSession
from tuna.results.dbfiles import atomic_path

MANIFEST_SUFFIX = ".manifest.json"


@dataclass(frozen=True)
class ExportedFile:
    """A file an export wrote: ``records`` lines or config rows, ``entries`` solver entries."""

    path: Path
    records: int
    entries: int
    sha256: str
    size: int

    @classmethod
    def of(cls, path: Path, records: int, entries: int) -> ExportedFile:
        digest, size = file_sha256(path)
        return cls(path, records, entries, digest, size)


def file_sha256(path: Path) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of a file."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def session_provenance(row: TuningSession) -> dict[str, Any]:
    """Everything a session records about how its results were produced."""
    return {
        "id": row.id,
        "arch": row.arch,
        "num_cu": row.num_cu,
        "backend": row.backend,
        "library_version": row.library_version,
        "library_commit": row.library_commit,
        "toolchain": row.toolchain,
        "docker_image": row.docker_image,
        "docker_digest": row.docker_digest,
        "environment": dict(row.environment or {}),
        "fingerprint": row.fingerprint,
        "label": row.label,
        "ticket": row.ticket,
        "created": row.created.isoformat() if row.created else None,
    }


def manifest_path(first_file: Path) -> Path:
    return first_file.with_name(first_file.name + MANIFEST_SUFFIX)


def build_manifest(
    *,
    kind: str,
    source: Mapping[str, Any],
    arch: str,
    num_cu: int,
    basename: str,
    config_tag: str | None,
    sessions: Iterable[TuningSession],
    counts: Mapping[str, int],
    files: Iterable[ExportedFile],
    checks: Iterable[str],
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    created = now or dt.datetime.now(dt.timezone.utc)
    return {
        "tuna_version": __version__,
        "created": created.isoformat(timespec="seconds"),
        "kind": kind,
        "source": dict(source),
        "arch": arch,
        "num_cu": num_cu,
        "basename": basename,
        "config_tag": config_tag,
        "sessions": [session_provenance(s) for s in sorted(sessions, key=lambda s: s.id)],
        "counts": dict(counts),
        "checks": list(checks),
        "files": [
            {
                "name": f.path.name,
                "sha256": f.sha256,
                "bytes": f.size,
                "records": f.records,
                "entries": f.entries,
            }
            for f in files
        ],
    }


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
