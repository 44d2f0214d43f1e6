"""``tuna.library.open(url)``: the tuning history as a library, to apply the best at build time.

::

    import tuna.library

    with tuna.library.open("sqlite:///tuna.db", arch="gfx90a", num_cu=104) as lib:
        best = lib.best("MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -F 1")
        print(best.solver, best.params, best.time_ms)

The target is a session (``session=S``: its arch, CUs, backend and stored rules) or an
arch and CU count (any backend unless given; history of any library version, or at least
``rules.library_min``). Rules decide which rows count, as everywhere in Tuna
(:mod:`tuna.sessions.rules`). The connection is opened once and closed on leaving the
``with`` block (or by :meth:`Library.close`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from tuna.catalog.parsing import ConvEntry
from tuna.catalog.query import resolve
from tuna.db import Database, open_database
from tuna.db.models import ConvConfig
from tuna.errors import NotFoundError, TunaError
from tuna.library.best import Best, best_configs, target_history
from tuna.problems.conv import ConvProblem
from tuna.problems.keys import find_db_key
from tuna.sessions.history import Eligibility
from tuna.sessions.rules import HistoryRules


class Library:
    """The best known configurations for one target (see :func:`open`)."""

    def __init__(
        self,
        db: Database,
        *,
        session: int | None = None,
        arch: str | None = None,
        num_cu: int | None = None,
        backend: str | None = None,
        rules: HistoryRules | None = None,
    ) -> None:
        self._db = db
        self._session = session
        self._target = (arch, num_cu, backend)
        self._rules = rules
        if session is None and (arch is None or num_cu is None):
            raise TunaError("tuna.library.open: give session=S, or arch= and num_cu=")
        self.history()  # a bad target or rule fails here, not at the first best()

    def history(self) -> Eligibility:
        """Which sessions count for the target now (re-read: sessions may be retired)."""
        with self._db.session() as s:
            return self._history(s)

    def _history(self, s: OrmSession) -> Eligibility:
        arch, num_cu, backend = self._target
        return target_history(
            s, session=self._session, arch=arch, num_cu=num_cu, backend=backend,
            rules=self._rules,
        )  # fmt: skip

    def best(self, problem: str | ConvProblem) -> Best | None:
        """The best known configuration of one problem (a MIOpenDriver line with its
        direction, a find-db key, or a ``ConvProblem``); None when no history counts."""
        key = _key(problem)
        with self._db.session() as s:
            config = s.scalar(select(ConvConfig.id).where(ConvConfig.fdb_key == key))
            if config is None:
                return None
            return best_configs(s, self._history(s), [config]).get(config)

    def best_of(self, problems: Sequence[str | ConvProblem]) -> dict[str, Best]:
        """Find-db key -> best configuration, for the problems that have one."""
        keys = [_key(p) for p in problems]
        with self._db.session() as s:
            ids = dict(s.execute(select(ConvConfig.id, ConvConfig.fdb_key).where(
                ConvConfig.fdb_key.in_(keys))).all())  # fmt: skip
            found = best_configs(s, self._history(s), list(ids))
        return {ids[c]: b for c, b in found.items()}

    def close(self) -> None:
        self._db.dispose()

    def __enter__(self) -> Library:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _key(problem: str | ConvProblem) -> str:
    if isinstance(problem, ConvProblem):
        return find_db_key(problem)
    entries = [e for e in resolve([(1, problem)]) if isinstance(e, ConvEntry)]
    if len(entries) != 1:
        dirs = ", ".join(e.key.rsplit("-", 1)[-1] for e in entries) or "none"
        raise TunaError(
            f"{problem!r} gives {len(entries)} conv problems ({dirs}): give one, e.g. with "
            "-F 1 (forward), -F 2 (backward data) or -F 4 (backward weights)"
        )
    return entries[0].key


def open(  # noqa: A001 - tuna.library.open, like io.open
    url: str | None = None,
    *,
    session: int | None = None,
    arch: str | None = None,
    num_cu: int | None = None,
    backend: str | None = None,
    rules: HistoryRules | None = None,
) -> Library:
    """Open the tuning history at ``url`` (default: Tuna's settings) for one target."""
    db = open_database(url)
    try:
        return Library(db, session=session, arch=arch, num_cu=num_cu, backend=backend, rules=rules)
    except BaseException:
        db.dispose()
        raise


__all__ = ["Best", "Library", "NotFoundError", "open"]
