"""Result rows a phase writes, inside the fenced transaction that completes the job.

* compile: kernels go to ``kernel_cache``, content-addressed by ``identity`` (identical
  binaries are stored once: insert the missing ones, reuse the rest) and are linked from
  the job (``job_kernel``, replaced on every compile);
* evaluate: ``perf_db`` and ``find_db`` rows are upserted, keyed (session, config, solver),
  with the id of the job that produced them and, where the backend named the chosen
  solution's kernel (``EvalOutcome.kernels``), that kernel's ``kernel_cache`` id.

Everything is written in a few multi-row statements per batch, never a round trip per row.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, select
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.orm import Session

from tuna.backends.base import CompileOutcome, EvalOutcome, KernelBinary
from tuna.db.blobs import pack_kernel
from tuna.db.models import Base, FindDb, JobKernel, KernelCache, PerfDb

if TYPE_CHECKING:
    from tuna.jobs.states import ClaimedJob

log = logging.getLogger(__name__)

_ROWS_PER_STATEMENT = 200


def kernel_identity(kernel: KernelBinary) -> str:
    """The content address of a kernel: sha256 over its name, args and bytes."""
    h = hashlib.sha256()
    for part in (kernel.name.encode(), kernel.args.encode(), kernel.binary):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _is_mysql(s: Session) -> bool:
    return s.get_bind().dialect.name in ("mysql", "mariadb")


def _chunks(rows: Sequence[Any]) -> list[Sequence[Any]]:
    return [rows[i : i + _ROWS_PER_STATEMENT] for i in range(0, len(rows), _ROWS_PER_STATEMENT)]


def _insert_missing(s: Session, model: type[Base], rows: list[dict[str, Any]], key: str) -> None:
    """Insert ``rows``; a row whose unique ``key`` exists already (a racing writer) is kept."""
    for chunk in _chunks(rows):
        if _is_mysql(s):
            ins = mysql.insert(model).values(list(chunk))
            s.connection().execute(ins.on_duplicate_key_update({key: ins.inserted[key]}))
        else:
            s.connection().execute(
                sqlite.insert(model)
                .values(list(chunk))
                .on_conflict_do_nothing(index_elements=[key])
            )


def _upsert(s: Session, model: type[Base], rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    """Insert ``rows`` or, where their ``keys`` exist, overwrite the other columns given."""
    if not rows:
        return
    columns = [c for c in rows[0] if c not in keys]
    for chunk in _chunks(rows):
        if _is_mysql(s):
            ins = mysql.insert(model).values(list(chunk))
            s.connection().execute(
                ins.on_duplicate_key_update({c: ins.inserted[c] for c in columns})
            )
        else:
            lite = sqlite.insert(model).values(list(chunk))
            s.connection().execute(
                lite.on_conflict_do_update(
                    index_elements=list(keys), set_={c: lite.excluded[c] for c in columns}
                )
            )


def store_kernels(s: Session, kernels: Sequence[KernelBinary]) -> dict[str, int]:
    """Store ``kernels`` once each; returns identity -> ``kernel_cache.id`` for all of them."""
    wanted = {kernel_identity(k): k for k in kernels}
    if not wanted:
        return {}
    ids = _kernel_ids(s, list(wanted))
    missing = [ident for ident in wanted if ident not in ids]
    if missing:
        rows = []
        for ident in missing:
            k = wanted[ident]
            blob, size = pack_kernel(k.binary)
            rows.append(
                {
                    "identity": ident,
                    "kernel_name": k.name,
                    "kernel_args": k.args,
                    "kernel_hash": hashlib.md5(k.binary).hexdigest(),
                    "uncompressed_size": size,
                    "blob": blob,
                }
            )
        _insert_missing(s, KernelCache, rows, "identity")
        ids.update(_kernel_ids(s, missing))
    return ids


def _kernel_ids(s: Session, identities: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in _chunks(identities):
        q = select(KernelCache.identity, KernelCache.id).where(KernelCache.identity.in_(chunk))
        found.update({ident: kid for ident, kid in s.connection().execute(q)})
    return found


def write_compile_results(s: Session, done: Sequence[tuple[ClaimedJob, CompileOutcome]]) -> None:
    """Kernels of completed compile phases, linked from their jobs (old links replaced)."""
    if not done:
        return
    ids = store_kernels(s, [k for _, o in done for k in o.kernels])
    # A job's first claim has attempt 1: only a job claimed before can have old links.
    again = [job.id for job, _ in done if job.attempt > 1]
    for chunk in _chunks(again):
        s.connection().execute(delete(JobKernel).where(JobKernel.job.in_(chunk)))
    links = {(job.id, ids[kernel_identity(k)]) for job, outcome in done for k in outcome.kernels}
    rows = [{"job": j, "kernel": k} for j, k in sorted(links)]
    for chunk in _chunks(rows):
        s.connection().execute(insert(JobKernel), list(chunk))


def solution_kernels(
    s: Session, named: Sequence[tuple[int, Sequence[KernelBinary]]]
) -> dict[int, int | None]:
    """job id -> the ``kernel_cache`` id of the one kernel its evaluate phase named, or None.

    ``named`` pairs a job with the kernels its outcome says the chosen solution runs. They
    are found by identity among the job's own compile links (``job_kernel``), so a kernel the
    job did not compile is never linked. The ``kernel`` columns of ``find_db`` and
    ``perf_db`` hold one id: a solution of several kernels gets None, as does one naming a
    kernel the job lacks (logged), and the kernel db then takes all of the job's kernels.
    """
    wanted = {job: {kernel_identity(k) for k in kernels} for job, kernels in named if kernels}
    found: dict[int, dict[str, int]] = defaultdict(dict)
    for chunk in _chunks(sorted(wanted)):
        idents = sorted({i for job in chunk for i in wanted[job]})
        q = (
            select(JobKernel.job, KernelCache.identity, KernelCache.id)
            .join(KernelCache, KernelCache.id == JobKernel.kernel)
            .where(JobKernel.job.in_(chunk), KernelCache.identity.in_(idents))
        )
        for job, identity, kid in s.connection().execute(q):
            found[job][identity] = kid
    chosen: dict[int, int | None] = {}
    for job, identities in wanted.items():
        ids = found[job]
        missing = len(identities - ids.keys())
        if missing:
            log.warning(
                "job %d: the evaluate phase named %d kernel(s) its compile phase did not "
                "produce; its results link no kernel",
                job, missing,
            )  # fmt: skip
            chosen[job] = None
        elif len(identities) > 1:
            log.debug(
                "job %d: the chosen solution has %d kernels; none linked", job, len(identities)
            )
            chosen[job] = None
        else:
            (chosen[job],) = ids.values()
    return chosen


def write_eval_results(s: Session, done: Sequence[tuple[ClaimedJob, EvalOutcome]]) -> None:
    """perf_db and find_db rows of completed evaluate phases, upserted.

    Every row names its job and the kernel of the chosen solution where the outcome says
    which it is (:func:`solution_kernels`), or no kernel; a row written again by another
    job loses the old link.
    """
    perf: dict[tuple[int, int, int], dict[str, Any]] = {}
    find: dict[tuple[int, int, int], dict[str, Any]] = {}
    kernels = solution_kernels(
        s, [(job.id, o.kernels) for job, o in done if o.perf is not None or o.find is not None]
    )
    for job, outcome in done:
        key = (job.session, job.config, job.solver)
        base: Mapping[str, Any] = {
            "session": job.session,
            "config": job.config,
            "solver": job.solver,
        }
        kernel = kernels.get(job.id)
        if outcome.perf is not None:
            perf[key] = {**base, "params": outcome.perf.params, "job": job.id, "kernel": kernel}
        if outcome.find is not None:
            f = outcome.find
            find[key] = {
                **base,
                "time_ms": f.time_ms,
                "workspace": f.workspace,
                "algorithm": f.algorithm,
                "params": f.params,
                "job": job.id,
                "kernel": kernel,
            }
    keys = ("session", "config", "solver")
    _upsert(s, PerfDb, [perf[k] for k in sorted(perf)], keys)
    _upsert(s, FindDb, [find[k] for k in sorted(find)], keys)
