"""Platform rows: content-addressed JSON documents that measurements point at.

A platform document is what a worker collected (:mod:`tuna.platforms.collect`) plus, under
``"user"``, what the user added with ``--platform-json FILE``: the machine's, with the
session's on top (key by key; the session is the narrower scope). Its row is found by the
sha256 of its canonical JSON (sorted keys, no spaces, UTF-8), so the same document is
stored once however many workers report it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Executable, select, update
from sqlalchemy.dialects import mysql, sqlite

from tuna.db import Database, tables
from tuna.db.retry import with_retry
from tuna.errors import TunaError

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
Machine = tables.machine.c
Platform = tables.platform.c


class PlatformJsonError(TunaError):
    """Raised when a ``--platform-json`` file cannot be read or is not one JSON object."""


def canonical(info: Mapping[str, Any]) -> str:
    """The canonical JSON text of a platform document (what its digest is taken over)."""
    return json.dumps(info, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(info: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(info).encode()).hexdigest()


def compose(
    facts: Mapping[str, Any],
    machine_user: Mapping[str, Any] | None = None,
    session_user: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The platform document: ``facts``, and under ``"user"`` the machine's additions with
    the session's on top (absent when neither adds anything)."""
    info = {k: v for k, v in facts.items() if k != "user"}
    user = {**(machine_user or {}), **(session_user or {})}
    if user:
        info["user"] = user
    return info


def read_user_platform(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; raises :class:`PlatformJsonError` naming the file and,
    for malformed JSON, the line and column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlatformJsonError(f"cannot read platform JSON {p}: {e}") from e
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlatformJsonError(
            f"{p}:{e.lineno}:{e.colno}: malformed platform JSON: {e.msg}; "
            'give one JSON object, e.g. {"cooling": "liquid"}'
        ) from e
    if not isinstance(value, dict):
        raise PlatformJsonError(
            f'{p}: platform JSON must be an object ({{"key": value, ...}}), '
            f"not {type(value).__name__}"
        )
    return value


@functools.cache
def _insert_missing(mysql_dialect: bool) -> Executable:
    if mysql_dialect:
        ins = mysql.insert(tables.platform)
        return ins.on_duplicate_key_update(digest=ins.inserted.digest)
    return sqlite.insert(tables.platform).on_conflict_do_nothing(index_elements=["digest"])


def store_platform(conn: Connection, info: Mapping[str, Any]) -> int:
    """The id of ``info``'s platform row, inserted if no worker stored it before."""
    key = digest(info)
    found = conn.execute(select(Platform.id).where(Platform.digest == key)).scalar()
    if found is not None:
        return int(found)
    mysql_dialect = conn.dialect.name in ("mysql", "mariadb")
    conn.execute(_insert_missing(mysql_dialect), {"digest": key, "info": dict(info)})
    return int(conn.execute(select(Platform.id).where(Platform.digest == key)).scalar_one())


def report_platform(
    db: Database,
    facts: Mapping[str, Any],
    *,
    machine: int | None = None,
    session_user: Mapping[str, Any] | None = None,
) -> int:
    """Store what a worker on ``machine`` (None: not a machine of the table) runs on, with
    the user's additions, and make it the machine's platform; returns the platform id."""

    def report() -> int:
        with db.transaction(immediate=True) as conn:
            machine_user = None
            if machine is not None:
                machine_user = conn.execute(
                    select(Machine.user_platform).where(Machine.id == machine)
                ).scalar()
            pid = store_platform(conn, compose(facts, machine_user, session_user))
            if machine is not None:
                conn.execute(
                    update(tables.machine).where(Machine.id == machine).values(platform=pid)
                )
            return pid

    return with_retry(report, what=f"machine {machine}: report its platform")


def platform_info(db: Database, platform: int) -> dict[str, Any] | None:
    """The document of platform ``platform``, None if there is no such row."""
    with db.transaction() as conn:
        info = conn.execute(select(Platform.info).where(Platform.id == platform)).scalar()
    return dict(info) if info is not None else None
