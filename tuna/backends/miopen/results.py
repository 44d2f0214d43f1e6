"""fin's output: the JSON file fin writes, read into typed results, every solver's reason kept.

fin writes a JSON array: element 0 is ``{"process_env": [...]}`` (fin's environment), then
one object per input job, in input order, each with ``config_tuna_id``, ``arch``,
``direction`` and ``input`` (the job echoed back) besides what its steps produced:

* ``get_solvers``: ``all_solvers``, items ``{"id", "name", "tunable", "dynamic", "type"}``,
  every value a string (``"3"``, ``"1"``);
* ``applicability``: ``applicable_solvers``, solver names;
* the tuning steps: ``db_key``, ``network_config``, ``is_winograd_only`` and a result list
  (``miopen_find_compile_result`` and so on) with one item per solver: ``solver_name``,
  ``algorithm``, ``reason`` ("Success", "Not Applicable", "Solver throws exception..."),
  the step's flag (``find_compiled``, ``perf_compiled``, ``evaluated``), and on success
  ``tunable``, ``params``, ``workspace``, ``time`` (ms) and ``kernel_objects`` as the step
  gives them.

Pure: parsers take the decoded JSON and return values; what is not as fin writes it is a
:class:`FinOutputError` naming the file and the field (and the solver, where there is one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.backends.base import KernelBinary
from tuna.backends.miopen.kernels import KernelMeta, decode_kernel_object
from tuna.backends.miopen.protocol import RESULT_KEYS
from tuna.errors import BackendError

#: fin reasons that mean the solver does not apply (not that it failed).
INAPPLICABLE_REASONS = frozenset({"Not Applicable", "Skip Fused", "Empty Solver", "Not Dynamic"})
SUCCESS = "Success"


class FinOutputError(BackendError):
    """Raised when fin's output is not what fin writes (a field missing or of the wrong type)."""


@dataclass(frozen=True)
class FinSolver:
    """One solver of ``all_solvers``."""

    numeric_id: int
    name: str
    tunable: bool
    dynamic: bool
    primitive: str


@dataclass(frozen=True)
class SolverResult:
    """One solver's item of a tuning step's result list.

    ``ok`` is the step's flag; ``reason`` is fin's, verbatim. ``kernels`` (with their
    ``kernel_meta``) are decoded and md5-checked; ``time_ms`` is set by evaluate steps.
    """

    solver: str
    algorithm: str | None
    ok: bool
    reason: str
    tunable: bool | None = None
    params: str | None = None
    workspace: int | None = None
    time_ms: float | None = None
    kernels: tuple[KernelBinary, ...] = ()
    kernel_meta: tuple[KernelMeta, ...] = ()

    @property
    def not_applicable(self) -> bool:
        return not self.ok and self.reason in INAPPLICABLE_REASONS


@dataclass(frozen=True)
class StepResult:
    """A tuning step's output for one job: MIOpen's keys for the problem and each solver's
    result."""

    config_id: int | None
    db_key: str
    network_config: str | None
    solvers: tuple[SolverResult, ...]

    def for_solver(self, name: str) -> SolverResult | None:
        return next((r for r in self.solvers if r.solver == name), None)


def job_results(data: Any, *, path: str) -> list[dict[str, Any]]:
    """The per-job objects of a fin output (``process_env`` dropped)."""
    if not isinstance(data, list) or not data:
        raise FinOutputError(f"{path}: not a non-empty JSON array, as fin writes")
    head = data[0]
    if not isinstance(head, Mapping) or "process_env" not in head:
        raise FinOutputError(f'{path}: element 0 is not fin\'s {{"process_env": [...]}}')
    jobs = data[1:]
    for i, job in enumerate(jobs, start=1):
        if not isinstance(job, dict):
            raise FinOutputError(f"{path}: element {i} is not a JSON object")
    return jobs


def _field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise FinOutputError(f"{where}: {key} is {value!r}, expected {expected}")
    return value


def _flag(value: Any, where: str, key: str) -> bool:
    """fin's booleans: JSON true/false, or "0"/"1" strings in ``all_solvers``."""
    if isinstance(value, bool):
        return value
    if value in ("0", "1"):
        return value == "1"
    raise FinOutputError(f"{where}: {key} is {value!r}, expected a flag")


def parse_solvers(job: Mapping[str, Any], *, path: str) -> list[FinSolver]:
    """``all_solvers`` of a ``get_solvers`` job, in fin's order."""
    items = job.get("all_solvers")
    if not isinstance(items, list):
        raise FinOutputError(f"{path}: no all_solvers list (did the get_solvers step run?)")
    out = []
    for i, item in enumerate(items):
        where = f"{path}: all_solvers[{i}]"
        if not isinstance(item, Mapping):
            raise FinOutputError(f"{where}: not a JSON object")
        name = _field(item, "name", str, where)
        where = f"{path}: solver {name}"
        raw_id = item.get("id")
        text = str(raw_id) if isinstance(raw_id, int | str) and not isinstance(raw_id, bool) else ""
        numeric_id = int(text) if text.isdigit() else -1
        if numeric_id <= 0:
            raise FinOutputError(f"{where}: id {raw_id!r} is not a solver id")
        out.append(
            FinSolver(
                numeric_id=numeric_id,
                name=name,
                tunable=_flag(item.get("tunable"), where, "tunable"),
                dynamic=_flag(item.get("dynamic", "0"), where, "dynamic"),
                primitive=str(item.get("type", "convolution")),
            )
        )
    return out


def parse_applicability(job: Mapping[str, Any], *, path: str) -> tuple[int, list[str]]:
    """(config id, applicable solver names) of an ``applicability`` job."""
    config_id = job.get("config_tuna_id")
    if not isinstance(config_id, int) or isinstance(config_id, bool):
        raise FinOutputError(f"{path}: config_tuna_id {config_id!r} is not a config id")
    names = job.get("applicable_solvers")
    where = f"{path}: config {config_id}"
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FinOutputError(f"{where}: applicable_solvers is not a list of solver names")
    return config_id, list(names)


def parse_solver_items(items: Any, *, flag: str, where: str) -> tuple[SolverResult, ...]:
    """A step's result list (or a compile result echoed in an evaluate job's input)."""
    if not isinstance(items, list):
        raise FinOutputError(f"{where}: the result list is missing")
    return tuple(_solver_result(item, flag=flag, where=where) for item in items)


def _solver_result(item: Any, *, flag: str, where: str) -> SolverResult:
    if not isinstance(item, Mapping):
        raise FinOutputError(f"{where}: a result item is not a JSON object")
    solver = _field(item, "solver_name", str, where)
    where = f"{where}: solver {solver}"
    ok = _flag(item.get(flag), where, flag)
    reason = item.get("reason", SUCCESS if ok else None)
    if not isinstance(reason, str):
        raise FinOutputError(f"{where}: reason is {reason!r}, expected str")
    algorithm = item.get("algorithm")
    if algorithm is not None and not isinstance(algorithm, str):
        raise FinOutputError(f"{where}: algorithm is {algorithm!r}, expected str")
    if not ok:
        return SolverResult(solver, algorithm, False, reason)
    tunable = item.get("tunable")
    if tunable is not None:
        tunable = _flag(tunable, where, "tunable")
    params = item.get("params")
    if params is not None and not isinstance(params, str):
        raise FinOutputError(f"{where}: params is {params!r}, expected str")
    workspace = item.get("workspace")
    if workspace is not None:
        workspace = _field(item, "workspace", int, where)
    time_ms = None
    if "time" in item:
        time_ms = float(_field(item, "time", (int, float), where))
    pairs = [decode_kernel_object(k, solver=solver) for k in item.get("kernel_objects") or []]
    return SolverResult(
        solver=solver,
        algorithm=algorithm,
        ok=True,
        reason=reason,
        tunable=tunable,
        params=params,
        workspace=workspace,
        time_ms=time_ms,
        kernels=tuple(k for k, _m in pairs),
        kernel_meta=tuple(m for _k, m in pairs),
    )


def parse_step(job: Mapping[str, Any], step: str, *, path: str) -> StepResult:
    """The result of tuning step ``step`` (``miopen_find_eval`` ...) in one job's output."""
    key, flag = RESULT_KEYS[step]
    config_id = job.get("config_tuna_id")
    where = f"{path}: config {config_id}, {step}"
    if key not in job:
        raise FinOutputError(f"{where}: no {key} in fin's output (the step did not run)")
    db_key = _field(job, "db_key", str, where)
    network_config = job.get("network_config")
    return StepResult(
        config_id=config_id if isinstance(config_id, int) else None,
        db_key=db_key,
        network_config=network_config if isinstance(network_config, str) else None,
        solvers=parse_solver_items(job[key], flag=flag, where=where),
    )


def usable_time(result: SolverResult) -> str | None:
    """Why an evaluated result's time cannot be a find-db entry, or None."""
    t = result.time_ms
    if t is None:
        return "no time in fin's result"
    if not math.isfinite(t) or t <= 0:
        return f"time {t!r} ms is not a positive duration"
    return None


def reasons(results: Sequence[SolverResult]) -> str:
    """Every solver's reason in one line: the shared reason, or ``Solver: reason; ...``."""
    if not results:
        return "no solver in fin's result"
    distinct = {r.reason for r in results}
    if len(distinct) == 1:
        return results[0].reason
    return "; ".join(f"{r.solver}: {r.reason}" for r in results)
