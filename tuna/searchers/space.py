"""Parameter spaces and the parameter files that declare them (JSON or Python).

The files are the ones the benchmark autotuner Tuna's users know takes
(``reference/search.md`` §1):

* **JSON**: one flat object; each property is a parameter, its value an array of
  primitives (bool, number, string). A nested object or array is an error.
* **Python**: every module-level name without a leading underscore whose value is a list
  of primitives is a parameter (an empty list declares a parameter a searcher fills in).
  Functions named ``META_*`` are hooks:

  - ``META_get_no_rebuild_params() -> list[str]``: the runtime-only parameters; every
    other parameter is build-time. Names that are not parameters are an error.
  - ``META_is_config_valid(config) -> bool``: a predicate on the full merged config;
    configs it refuses are never built or run. Absent means every config is valid.
  - ``META_search_callback()`` returning a searcher replaces the default exhaustive
    search; the older form ``META_search_callback(past_runs)``, returning the next point
    (or None when done) from the list of ``(config, stats)`` pairs so far, is accepted too.

  Anything else at module level is ignored. The file is the user's own code: it runs once,
  on the head node, when the search is set up. ``from library import Bisect`` works inside
  it, as it did with that tool (``library`` is an alias of :mod:`tuna.searchers`).

Loading a file reads it and nothing else; a bad file raises :class:`ParameterFileError`
(with ``file:line`` where Python can say) and a hook that raises, :class:`HookError`.
"""

from __future__ import annotations

import inspect
import itertools
import json
import sys
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.searchers.errors import HookError, ParameterFileError, UnknownParameterError
from tuna.searchers.run import Config, Point, Primitive, is_primitive

HOOKS = ("META_get_no_rebuild_params", "META_is_config_valid", "META_search_callback")


@dataclass
class ParameterSpace:
    """Named parameters, each with its listed values, and the hooks of the file declaring them.

    ``parameters`` keeps the file's order (the naive schedule follows it). Build it with
    :func:`load_parameter_file` or directly (``ParameterSpace({"a": [1, 2]})``).
    """

    parameters: dict[str, list[Primitive]]
    no_rebuild: tuple[str, ...] = ()
    source: str = "<parameters>"
    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [n for n in self.no_rebuild if n not in self.parameters]
        if unknown:
            raise UnknownParameterError(
                f"{self.source}: META_get_no_rebuild_params names {_names(unknown)}, which "
                f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                f"(the parameters are {_names(self.parameters)}); declare "
                f"{'it' if len(unknown) == 1 else 'them'} or drop "
                f"{'it' if len(unknown) == 1 else 'them'} from the list"
            )

    @property
    def names(self) -> list[str]:
        return list(self.parameters)

    @property
    def build_params(self) -> list[str]:
        """The build-time parameters: every one not named by ``META_get_no_rebuild_params``."""
        return [n for n in self.parameters if n not in self.no_rebuild]

    @property
    def runtime_params(self) -> list[str]:
        return [n for n in self.parameters if n in self.no_rebuild]

    @property
    def grid(self) -> dict[str, list[Primitive]]:
        """The parameters that list values (an empty list is left to a searcher to fill in)."""
        return {n: list(v) for n, v in self.parameters.items() if v}

    def size(self) -> int:
        """How many points the full cartesian product of :attr:`grid` has."""
        n = 1
        for values in self.grid.values():
            n *= len(values)
        return n

    def product(self) -> Iterator[Point]:
        """Every point of :attr:`grid`, in declaration order (the last parameter varies fastest)."""
        grid = self.grid
        for values in itertools.product(*grid.values()):
            yield dict(zip(grid, values, strict=True))

    def check_point(self, point: object, searcher: str = "the searcher") -> Point:
        """``point`` as a Point, or :class:`UnknownParameterError` naming what is wrong."""
        if not isinstance(point, Mapping):
            raise UnknownParameterError(
                f"{self.source}: {searcher} yielded {point!r}, not a dict of parameter values; "
                "make generate() yield dicts such as {'name': value}"
            )
        unknown = [k for k in point if k not in self.parameters]
        if unknown:
            raise UnknownParameterError(
                f"{self.source}: {searcher} yielded {_names(unknown)}, which "
                f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                f"(the parameters are {_names(self.parameters)}); declare "
                f"{'it' if len(unknown) == 1 else 'them'} in the parameter file "
                "(an empty list declares a parameter a searcher fills in)"
            )
        bad = [k for k, v in point.items() if not is_primitive(v)]
        if bad:
            raise UnknownParameterError(
                f"{self.source}: {searcher} yielded {bad[0]}={point[bad[0]]!r}; a parameter "
                "value must be a bool, number or string"
            )
        return dict(point)

    def is_config_valid(self, config: Mapping[str, Any]) -> bool:
        """``META_is_config_valid(config)``, or True without the hook."""
        hook = self.hooks.get("META_is_config_valid")
        if hook is None:
            return True
        answer = call_hook(self.source, "META_is_config_valid", hook, dict(config))
        if answer is None:
            raise HookError(
                self.source,
                "META_is_config_valid",
                f"returned None for {dict(config)}; return True or False (a missing return?)",
            )
        return bool(answer)

    def search_callback(self) -> Callable[..., Any] | None:
        return self.hooks.get("META_search_callback")


def merge(base: Mapping[str, Any], *points: Mapping[str, Any]) -> Config:
    """The base configuration with ``points`` laid over it, later ones winning."""
    config = dict(base)
    for p in points:
        config.update(p)
    return config


def call_hook(source: str, name: str, hook: Callable[..., Any], *args: Any) -> Any:
    """Call a ``META_`` hook; anything it raises becomes a :class:`HookError` naming it."""
    try:
        with _library_alias():
            return hook(*args)
    except Exception as e:  # the user's code: anything may come out of it
        raise HookError(source, name, f"raised {_exception(e, source)}") from e


# -- Loading -------------------------------------------------------------------------------------


def load_parameter_file(path: str | Path) -> ParameterSpace:
    """Read a JSON (``*.json``) or Python (any other suffix) parameter file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ParameterFileError(
            str(p), f"cannot read the parameter file ({e.strerror or e}); check the path"
        ) from e
    except UnicodeDecodeError as e:
        raise ParameterFileError(str(p), f"not UTF-8 text ({e.reason})") from e
    if p.suffix.lower() == ".json":
        return parse_json_space(text, source=str(p))
    return parse_python_space(text, source=str(p))


def parse_json_space(text: str, source: str = "<json>") -> ParameterSpace:
    """A space from the text of a JSON parameter file: one flat object of arrays of primitives."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParameterFileError(
            source, f"not valid JSON: {e.msg} (column {e.colno})", line_no=e.lineno
        ) from e
    if not isinstance(data, dict):
        raise ParameterFileError(
            source,
            f"the top level is a {_json_type(data)}; a JSON parameter file is one object "
            'whose properties are parameters, e.g. {"threads": [1, 2, 4]}',
        )
    params: dict[str, list[Primitive]] = {}
    for name, values in data.items():
        if not isinstance(values, list):
            raise ParameterFileError(
                source,
                f"parameter {name!r} is a {_json_type(values)}; each parameter's value must be "
                f'an array of values, e.g. "{name}": [{json.dumps(values)}]',
            )
        for i, v in enumerate(values):
            if not is_primitive(v):
                raise ParameterFileError(
                    source,
                    f"parameter {name!r}: item {i} is a nested {_json_type(v)}; values must be "
                    "booleans, numbers or strings (nested objects and arrays are not allowed)",
                )
        params[name] = values
    return ParameterSpace(params, source=source)


def parse_python_space(text: str, source: str = "<python>") -> ParameterSpace:
    """A space from the text of a Python parameter file (run once, here)."""
    try:
        code = compile(text, source, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise ParameterFileError(
            source, f"Python syntax error: {e.msg}; fix the file", line_no=e.lineno
        ) from e
    module = types.ModuleType("tuna_parameter_file")
    module.__file__ = source
    namespace = module.__dict__
    with _library_alias():
        try:
            exec(code, namespace)
        except Exception as e:  # the user's code
            raise ParameterFileError(
                source,
                f"running the file raised {type(e).__name__}: {e}; fix the file",
                line_no=_line_in(e, source),
            ) from e

    params: dict[str, list[Primitive]] = {}
    hooks: dict[str, Callable[..., Any]] = {}
    for name, value in namespace.items():
        if name.startswith("META_"):
            if name not in HOOKS:
                raise ParameterFileError(
                    source,
                    f"unknown hook {name}; the hooks are {', '.join(HOOKS)} (rename it, or "
                    "drop the META_ prefix for a private helper)",
                )
            if not callable(value):
                raise ParameterFileError(source, f"{name} must be a function")
            hooks[name] = value
        elif name.startswith("_"):
            continue
        elif isinstance(value, list) and all(is_primitive(v) for v in value):
            params[name] = list(value)

    no_rebuild: tuple[str, ...] = ()
    hook = hooks.get("META_get_no_rebuild_params")
    if hook is not None:
        names = call_hook(source, "META_get_no_rebuild_params", hook)
        if isinstance(names, str) or not isinstance(names, Sequence | set | frozenset):
            raise HookError(
                source,
                "META_get_no_rebuild_params",
                f"returned {names!r}; return a list of parameter names",
            )
        names = list(names)
        if not all(isinstance(n, str) for n in names):
            raise HookError(
                source,
                "META_get_no_rebuild_params",
                f"returned {names!r}; return a list of parameter names (strings)",
            )
        no_rebuild = tuple(names)
    return ParameterSpace(params, no_rebuild=no_rebuild, source=source, hooks=hooks)


def search_callback_arity(callback: Callable[..., Any]) -> int:
    """0 for ``META_search_callback()`` (returns a searcher), 1 for the ``(past_runs)`` form."""
    try:
        sig = inspect.signature(callback)
    except (TypeError, ValueError):
        return 0
    required = [
        p
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return len(required)


class _library_alias:
    """Make ``import library`` mean :mod:`tuna.searchers` while a parameter file runs."""

    def __enter__(self) -> None:
        self._had = "library" in sys.modules
        self._old = sys.modules.get("library")
        # The package is loaded whenever this module is (Python runs a package's
        # __init__ before its modules): no import of it from here, where it is half done.
        sys.modules["library"] = sys.modules[__package__ or "tuna.searchers"]

    def __exit__(self, *exc: object) -> None:
        if self._had and self._old is not None:
            sys.modules["library"] = self._old
        else:
            sys.modules.pop("library", None)


def _exception(e: BaseException, source: str) -> str:
    line = _line_in(e, source)
    at = f" at {source}:{line}" if line is not None else ""
    return f"{type(e).__name__}: {e}{at}"


def _line_in(e: BaseException, source: str) -> int | None:
    """The innermost line of ``source`` in ``e``'s traceback, if it ran through the file."""
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == source:
            line = frame.lineno
    return line


def _names(names: Iterator[str] | Sequence[str] | Mapping[str, Any]) -> str:
    return ", ".join(repr(n) for n in names) or "(none)"


def _json_type(v: object) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    return "string"
