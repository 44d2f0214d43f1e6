"""The gates every exported (and golden) row passes before anything is written.

What reached MIOpen's shipped dbs and hurt its users (reference mituna.md §9, §10.7): keys in
a non-canonical form, solver names the library does not know, ``-1`` times, entries of
solvers that no longer apply, kernels whose bytes do not match their hash. Each check here
catches one of those:

* the key parses back: ``find_db_key(parse_find_db_key(key)) == key``;
* the solver is one of the session backend's solvers;
* times and workspaces are finite and not negative; ids and values fit the text format;
* the backend still finds the solver applicable to the problem;
* a kernel's blob unpacks to ``uncompressed_size`` bytes whose md5 is ``kernel_hash``.

Checks never stop at the first failure: a refused export lists every one.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult, Pool

from tuna.backends import Backend, LibraryQueries, get_backend
from tuna.db.blobs import BlobError, unpack_kernel
from tuna.errors import DbKeyError, TunaError
from tuna.problems.conv import ConvProblem
from tuna.problems.keys import parse_find_db_key, parse_perf_db_key, perf_db_key
from tuna.results.formats import md5_hex, text_field_problem

MAX_WORKERS = 4
"""Worker processes that check keys beside a large export, at most (one CPU is left to it)."""

SHOWN_FAILURES = 200
"""A refusal's message lists this many failures; the exception holds all of them."""


@dataclass(frozen=True, order=True)
class Failure:
    """One reason a row cannot be exported: the key, the solver ('-' for the whole key), what."""

    key: str
    solver: str
    what: str

    def __str__(self) -> str:
        return f"{self.key} {self.solver}: {self.what}"


class ExportRefusedError(TunaError):
    """Raised when rows fail the export checks, so nothing was written.

    ``failures`` holds every failure, sorted by key and solver.
    """

    def __init__(self, failures: list[Failure], what: str) -> None:
        self.failures = sorted(failures)
        shown = "\n".join(f"  {f}" for f in self.failures[:SHOWN_FAILURES])
        more = len(self.failures) - SHOWN_FAILURES
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(
            f"{what}: {len(self.failures)} row(s) failed the export checks; nothing was "
            f"written:\n{shown}{tail}\n"
            "Re-tune or drop the rows above (or export from another session or golden version)."
        )


@dataclass
class _BackendView:
    backend: Backend
    name: str
    solvers: frozenset[str]
    reported_only: frozenset[str]  # the library build's solvers the backend itself does not know
    library: bool  # the backend's solver table is its library's word (LibraryQueries)


class RowChecks:
    """The checks of one export: call them per row, then :meth:`raise_if_failed`.

    ``sessions`` maps each session whose rows are checked to its backend's name.
    ``library_solvers`` holds, per backend, the valid solvers of the ``solver`` table: what
    the library build reported (``tuna solvers update``) may name solvers the backend's own
    catalogue does not; those are known, and their applicability was the library's answer
    when the jobs were loaded.
    """

    def __init__(
        self,
        sessions: Mapping[int, str],
        library_solvers: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.library_solvers = dict(library_solvers or {})
        views: dict[str, _BackendView] = {}
        self._by_session: dict[int, _BackendView] = {}
        for session, name in sessions.items():
            if name not in views:
                backend = get_backend(name)
                own = frozenset(s.name for s in backend.solvers())
                # Only a library-queried backend's solver table is the library's word.
                library = isinstance(backend, LibraryQueries)
                reported = self.library_solvers.get(name, frozenset()) if library else frozenset()
                views[name] = _BackendView(backend, name, own | reported, reported - own, library)
            self._by_session[session] = views[name]
        self.failures: list[Failure] = []
        self.rows = 0
        self._good_solvers: set[tuple[int, str]] = set()
        self._good_algorithms: set[str] = set()

    def fail(self, key: str, solver: str, what: str) -> None:
        self.failures.append(Failure(key, solver, what))

    def raise_if_failed(self, what: str) -> None:
        if self.failures:
            raise ExportRefusedError(self.failures, what)

    def key(self, key: str) -> ConvProblem | None:
        """The problem of a find-db key; None (a failure recorded) if it does not parse back."""
        # parse_find_db_key itself refuses a key that find_db_key would not write back as is.
        try:
            return parse_find_db_key(key)
        except DbKeyError as e:
            self.fail(key, "-", f"key does not parse back: {e}")
            return None

    def perf_key(self, key: str, problem: ConvProblem) -> str | None:
        """The x-joined perf-db key of ``problem``, or None if it does not parse back."""
        pkey = perf_db_key(problem)
        try:
            again = perf_db_key(parse_perf_db_key(pkey))
        except DbKeyError as e:
            self.fail(key, "-", f"perf-db key {pkey} does not parse back: {e}")
            return None
        if again != pkey:
            self.fail(key, "-", f"perf-db key {pkey} is written back as {again!r}")
            return None
        return pkey

    def solver(self, key: str, session: int, solver: str) -> bool:
        """Whether ``solver`` is one of the session backend's solvers (a failure if not)."""
        view = self._by_session[session]
        bad = text_field_problem(solver, commas=False)
        if bad is not None:
            self.fail(key, solver, f"solver name {bad}")
            return False
        if solver not in view.solvers:
            self.fail(key, solver, f"solver unknown to backend {view.name!r} (session {session})")
            return False
        return True

    def library_said(self, session: int) -> bool:
        """Whether the session's backend is its library's word: a row it holds that no job
        produced came from the library's own db files (import_db), where the library itself
        found the solver applicable, so its applicability is not asked again."""
        return self._by_session[session].library

    def known(self, session: int, solver: str) -> bool:
        """Whether ``solver`` passed :meth:`solver` for ``session`` (in :meth:`find_values`)."""
        return (session, solver) in self._good_solvers

    def applicable(self, key: str, problem: ConvProblem, session: int, solver: str) -> bool:
        """Whether the session's backend still finds ``solver`` applicable (a failure if not)."""
        view = self._by_session[session]
        if solver in view.reported_only:
            return True
        reason = view.backend.applicability(problem, solver)
        if reason is not None:
            self.fail(key, solver, f"not applicable for backend {view.name!r}: {reason}")
            return False
        return True

    def find_values(
        self, key: str, session: int, solver: str, time_ms: float, workspace: int, algorithm: str
    ) -> bool:
        """Check one find row, all but its key and applicability (see :func:`check_keys`)."""
        self.rows += 1
        # Runs once per exported row: the common case is two set lookups.
        if (
            (session, solver) in self._good_solvers
            and algorithm in self._good_algorithms
            and 0.0 <= time_ms < math.inf
            and workspace >= 0
        ):
            return True
        ok = self.solver(key, session, solver)
        if ok:
            self._good_solvers.add((session, solver))
        if not (time_ms >= 0 and math.isfinite(time_ms)):
            self.fail(key, solver, f"time {time_ms} ms is not a time")
            ok = False
        if workspace < 0:
            self.fail(key, solver, f"workspace {workspace} is negative")
            ok = False
        bad = text_field_problem(algorithm, commas=False)
        if bad is not None:
            self.fail(key, solver, f"algorithm {algorithm!r} {bad}")
            ok = False
        else:
            self._good_algorithms.add(algorithm)
        return ok

    def kernel(
        self, key: str, solver: str, what: str, blob: bytes, uncompressed_size: int, digest: str
    ) -> bytes | None:
        """The code object of a stored kernel, or None (a failure recorded) if its blob does
        not unpack to ``uncompressed_size`` bytes whose md5 is ``digest``.

        Blobs are stored as ``tuna.db.blobs.pack_kernel`` writes them.
        """
        try:
            code = unpack_kernel(blob, uncompressed_size)
        except BlobError as e:
            self.fail(key, solver, f"{what}: blob does not unpack: {e}")
            return None
        if uncompressed_size and len(code) != uncompressed_size:
            self.fail(
                key,
                solver,
                f"{what}: uncompressed_size {uncompressed_size} but the blob unpacks to "
                f"{len(code)} bytes",
            )
            return None
        if md5_hex(code) != digest:
            self.fail(key, solver, f"{what}: md5 of the code object is {md5_hex(code)}, "
                                   f"not kernel_hash {digest}")  # fmt: skip
            return None
        return code

    def perf_row(
        self, key: str, problem: ConvProblem | None, session: int, solver: str, params: str
    ) -> bool:
        """Check one perf-db row; False (with failures recorded) if it cannot be exported."""
        self.rows += 1
        ok = self.solver(key, session, solver)
        if ok and problem is not None:
            ok = self.applicable(key, problem, session, solver)
        bad = text_field_problem(params, commas=True)
        if bad is not None:
            self.fail(key, solver, f"params {params!r} {bad}")
            ok = False
        return ok and problem is not None


KeyItem = tuple[str, "ConvProblem | None", list[tuple[int, str]]]
"""What :func:`check_keys` checks for one config: its find-db key, its own problem when the key
is not the problem itself (transposed convolutions; else None), and the (session, solver)
pairs whose applicability to check."""


def check_keys(checks: RowChecks, items: Iterable[KeyItem]) -> None:
    """The key round trip of each item, and the applicability of its solvers."""
    for key, real, pairs in items:
        problem = checks.key(key)
        target = real if real is not None else problem
        if target is None:
            continue
        for session, solver in pairs:
            checks.applicable(key, target, session, solver)


_worker_checks: RowChecks | None = None


def _start_worker(sessions: dict[int, str], library_solvers: dict[str, frozenset[str]]) -> None:
    global _worker_checks
    _worker_checks = RowChecks(sessions, library_solvers)


def _check_in_worker(items: list[KeyItem]) -> list[Failure]:
    checks = _worker_checks
    assert checks is not None
    checks.failures = []
    check_keys(checks, items)
    return checks.failures


class KeyChecks:
    """:func:`check_keys` on chunks of items, in worker processes when ``parallel``.

    Parsing a key builds a problem and costs far more than reading its rows, so a large
    export hands the keys to forked workers while it goes on reading rows; their failures
    join ``checks.failures`` in :meth:`finish`. Inline when not ``parallel``, on one CPU, or
    where processes cannot be forked.
    """

    def __init__(self, checks: RowChecks, sessions: Mapping[int, str], *, parallel: bool) -> None:
        self.checks = checks
        self._pending: list[AsyncResult[list[Failure]]] = []
        self._pool: Pool | None = None
        self._backlog = 0
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        cpus = cpus or 1
        if parallel and cpus > 1 and "fork" in multiprocessing.get_all_start_methods():
            workers = min(MAX_WORKERS, cpus - 1)
            context = multiprocessing.get_context("fork")
            self._pool = context.Pool(
                workers, _start_worker, (dict(sessions), checks.library_solvers)
            )
            self._backlog = 2 * workers

    def __enter__(self) -> KeyChecks:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def submit(self, items: list[KeyItem]) -> None:
        """Check ``items`` now, or hand them to a worker; when the workers fall behind, the
        caller checks them itself (parsing keys is the larger part of the work)."""
        if not items:
            return
        if self._pool is None or sum(not r.ready() for r in self._pending) >= self._backlog:
            check_keys(self.checks, items)
        else:
            self._pending.append(self._pool.apply_async(_check_in_worker, (items,)))

    def finish(self) -> None:
        """Wait for the workers; their failures join ``checks.failures``."""
        for result in self._pending:
            self.checks.failures.extend(result.get())
        self._pending = []
