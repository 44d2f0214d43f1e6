"""Parameter spaces and the parameter files that declare them (JSON or Python).

The files are the ones the benchmark autotuner Tuna's users know takes
(``reference/search.md`` §1), with ranges, conditions and constraints added (issue #28):

* **JSON**: one object; each property is a parameter. Its value is either an array of
  primitives (bool, number, string: the values, as before) or an object that declares
  exactly one of ``"values"``, ``"int"`` or ``"float"``::

      {"algo":   ["naive", "tiled"],
       "tile":   {"int": [4, 64], "step": 4},
       "lr":     {"float": [1e-4, 1e-1], "log": true},
       "frac":   {"float": [0, 1], "step": 0.25},
       "unroll": {"values": [1, 2, 4], "when": {"algo": "tiled"}},
       "META_constraints": ["tile * unroll <= 128"]}

  ``"int": [lo, hi]`` is ``lo, lo + step, ...`` up to ``hi`` (``step`` 1 by default);
  ``"float": [lo, hi]`` is continuous unless it has a ``step``; ``"log": true`` samples
  log-uniformly (lo > 0, no step). ``"when": {"p": v}`` (or ``{"p": [v, w]}``) makes a
  parameter conditional: it exists only in points where ``p`` has one of those values, and
  ``p`` must be declared before it. ``"META_constraints"`` lists expressions over parameter
  names that every config must satisfy (:mod:`tuna.searchers.constraints` says what they
  may use; they are never given to ``eval``). Any other nesting is an error.
* **Python**: every module-level name without a leading underscore whose value is a list
  of primitives is a parameter (an empty list declares a parameter a searcher fills in), as
  is one whose value is a parameter object: ``from tuna.search import Int, Float,
  Categorical`` then ``tile = Int(4, 64, step=4)``, ``lr = Float(1e-4, 1e-1, log=True)``,
  ``unroll = Categorical([1, 2, 4], when={"algo": "tiled"})`` (the kinds are
  :mod:`tuna.searchers.params`). ``META_constraints = ["tile * unroll <= 128"]`` states
  constraints as a JSON file does. Functions named ``META_*`` are hooks:

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
(with ``file:line`` where Python can say; a bad range, condition or constraint names the
file and the parameter) and a hook that raises, :class:`HookError`. A stored search keeps
the file's text and reads it again to resume, so the space it rebuilds is the same one;
:func:`space_json` writes a space made in Python (``tuna.tune``'s) as the JSON text that
reads back equal.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.searchers.constraints import Constraint, ConstraintError, parse_constraint
from tuna.searchers.errors import (
    HookError,
    ParameterFileError,
    SearcherError,
    UnknownParameterError,
)
from tuna.searchers.hooks import HOOKS, call_hook, library_alias, line_in
from tuna.searchers.params import Categorical, Float, Int, Param, as_param, same_value
from tuna.searchers.run import Config, Point, Primitive, is_primitive

#: The key (JSON) or module-level name (Python) that lists constraint expressions.
CONSTRAINTS = "META_constraints"
#: Draws in a row that repeat a point already drawn before a sampling search gives up.
MAX_REPEATS = 100


@dataclass
class ParameterSpace:
    """Named parameters, their constraints, and the hooks of the file declaring them.

    ``parameters`` keeps the file's order (the naive schedule follows it); each is a
    :class:`~tuna.searchers.params.Param` (a list given here becomes a
    :class:`~tuna.searchers.params.Categorical`). ``constraints`` are expressions
    (:mod:`tuna.searchers.constraints`). Build it with :func:`load_parameter_file` or
    directly (``ParameterSpace({"a": [1, 2], "x": Float(0, 1)})``); a bad range, condition
    or constraint is a :class:`ParameterFileError` naming ``source`` and the parameter.
    """

    parameters: dict[str, Param]
    no_rebuild: tuple[str, ...] = ()
    source: str = "<parameters>"
    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self) -> None:
        params: dict[str, Param] = {}
        for name, value in self.parameters.items():
            param = as_param(value)
            if param is None:
                raise ParameterFileError(
                    self.source,
                    f"parameter {name!r} is {value!r}; give a list of values or a range "
                    "(Int(lo, hi), Float(lo, hi))",
                )
            problem = param.problem()
            if problem is not None:
                raise ParameterFileError(self.source, f"parameter {name!r}: {problem}")
            _check_condition(self.source, name, param, params)
            params[name] = param
        self.parameters = params
        self.constraints = tuple(  # parsed again: a Constraint of another space may not fit
            self._constraint(c.text if isinstance(c, Constraint) else c) for c in self.constraints
        )
        unknown = [n for n in self.no_rebuild if n not in self.parameters]
        if unknown:
            raise UnknownParameterError(
                f"{self.source}: META_get_no_rebuild_params names {_names(unknown)}, which "
                f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                f"(the parameters are {_names(self.parameters)}); declare "
                f"{'it' if len(unknown) == 1 else 'them'} or drop "
                f"{'it' if len(unknown) == 1 else 'them'} from the list"
            )

    def _constraint(self, text: object) -> Constraint:
        try:
            return parse_constraint(text, list(self.parameters))
        except ConstraintError as e:
            raise ParameterFileError(self.source, f"{CONSTRAINTS}: {e}") from e

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
    def finite(self) -> bool:
        """Whether every parameter's values can be listed (no Float without a step)."""
        return all(p.finite for p in self.parameters.values())

    @property
    def conditional(self) -> bool:
        """Whether some parameter exists only when another has some value."""
        return any(p.when for p in self.parameters.values())

    def require_finite(self, who: str) -> None:
        """Raise :class:`SearcherError` when ``who`` (an exhaustive search) cannot list this."""
        for name, p in self.parameters.items():
            if not p.finite:
                raise SearcherError(
                    f"{self.source}: parameter {name!r} is {p!r}, a continuous range, so "
                    f"{who} cannot list its values; give it a step, or use a searcher that "
                    "samples, e.g. Random(space, 50, seed=1)"
                )

    @property
    def grid(self) -> dict[str, list[Primitive]]:
        """The parameters that list values (an empty list is left to a searcher to fill in)."""
        self.require_finite("a grid")
        return {n: p.values() for n, p in self.parameters.items() if p.count()}

    def size(self) -> int:
        """How many points the exhaustive search lists (conditions respected)."""
        self.require_finite("a count of points")
        if not self.conditional:  # counted, not listed: Int(0, 10**12) is one multiplication
            return math.prod(p.count() for p in self.parameters.values() if p.count())
        return sum(1 for _ in self.product())

    def product(self, order: Sequence[str] | None = None) -> Iterator[Point]:
        """Every point, the last parameter of ``order`` (declaration order by default)
        varying fastest; a conditional parameter appears only in points where it exists."""
        self.require_finite("the exhaustive search")
        keys = self.ordered(order or self.names)
        params = [(k, self.parameters[k]) for k in keys if self.parameters[k].count()]
        if not self.conditional:
            values = [p.values() for _, p in params]
            for combo in itertools.product(*values):
                yield dict(zip((k for k, _ in params), combo, strict=True))
            return
        yield from _walk(params, {})

    def ordered(self, preferred: Sequence[str]) -> list[str]:
        """``preferred`` (every name, in the order wanted) moved only as far as needed for
        each conditional parameter to come after the parameters its condition names."""
        out: list[str] = []
        left = list(preferred)
        while left:
            for k in left:
                if all(parent in out for parent in self.parameters[k].when):
                    out.append(k)
                    left.remove(k)
                    break
            else:  # unreachable: a condition names only earlier parameters
                out.extend(left)
                break
        return out

    def sample(self, rng: random.Random) -> Point:
        """One point drawn with ``rng``: each parameter that exists given the ones drawn
        before it, in declaration order (parameters left to a searcher are left out)."""
        point: Point = {}
        for name, p in self.parameters.items():
            if (not p.finite or p.count()) and p.active(point):
                point[name] = p.sample(rng)
        return point

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
        outside = [k for k, v in point.items() if not self.parameters[k].contains(v)]
        if outside:
            k = outside[0]
            raise UnknownParameterError(
                f"{self.source}: {searcher} yielded {k}={point[k]!r}, which is not a value of "
                f"{self.parameters[k]!r}; propose values inside the parameter's range"
            )
        return dict(point)

    def refusal(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` is refused (a constraint, then ``META_is_config_valid``), or None."""
        for constraint in self.constraints:
            reason = constraint.refusal(config)
            if reason is not None:
                return reason
        hook = self.hooks.get("META_is_config_valid")
        if hook is None:
            return None
        answer = call_hook(self.source, "META_is_config_valid", hook, dict(config))
        if answer is None:
            raise HookError(
                self.source,
                "META_is_config_valid",
                f"returned None for {dict(config)}; return True or False (a missing return?)",
            )
        return None if answer else REFUSED

    def is_config_valid(self, config: Mapping[str, Any]) -> bool:
        """No constraint refuses ``config`` and ``META_is_config_valid`` accepts it."""
        return self.refusal(config) is None

    def search_callback(self) -> Callable[..., Any] | None:
        return self.hooks.get("META_search_callback")


#: The reason a config refused by ``META_is_config_valid`` is not run.
REFUSED = "refused by META_is_config_valid"


def _walk(params: list[tuple[str, Param]], point: Point) -> Iterator[Point]:
    if not params:
        yield dict(point)
        return
    (name, param), rest = params[0], params[1:]
    if not param.active(point):
        yield from _walk(rest, point)
        return
    for value in param.values():
        point[name] = value
        yield from _walk(rest, point)
    del point[name]


def _check_condition(source: str, name: str, param: Param, before: Mapping[str, Param]) -> None:
    """A condition names parameters declared before ``name``, with values they can take."""
    for parent, allowed in param.when.items():
        if parent == "":
            raise ParameterFileError(
                source,
                f"parameter {name!r}: when must map parameter names to values, e.g. "
                "{'algo': 'tiled'}",
            )
        if parent == name:
            raise ParameterFileError(source, f"parameter {name!r} is conditional on itself")
        if parent not in before:
            raise ParameterFileError(
                source,
                f"parameter {name!r} is conditional on {parent!r}, which is not a parameter "
                f"declared before it (the parameters before it are {_names(before)}); "
                f"declare {parent!r} first, or fix the condition",
            )
        p = before[parent]
        for v in allowed:
            if not is_primitive(v):
                raise ParameterFileError(
                    source,
                    f"parameter {name!r}: its condition on {parent!r} lists {v!r}; list "
                    "booleans, numbers or strings",
                )
            if isinstance(p, Categorical):
                never = bool(p.choices) and not any(same_value(v, c) for c in p.choices)
            else:
                never = not p.contains(v)
            if never:
                raise ParameterFileError(
                    source,
                    f"parameter {name!r} is conditional on {parent}={v!r}, a value {parent!r} "
                    f"never takes ({p!r}); fix the condition",
                )


def merge(base: Mapping[str, Any], *points: Mapping[str, Any]) -> Config:
    """The base configuration with ``points`` laid over it, later ones winning."""
    config = dict(base)
    for p in points:
        config.update(p)
    return config


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
    """A space from the text of a JSON parameter file (the forms of the module docstring)."""
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
    params: dict[str, Param] = {}
    constraints: list[object] = []
    for name, value in data.items():
        if name == CONSTRAINTS:
            if not isinstance(value, list):
                raise ParameterFileError(
                    source,
                    f"{CONSTRAINTS} is a {_json_type(value)}; give an array of expressions, "
                    'e.g. "META_constraints": ["a * b <= 256"]',
                )
            constraints = value
        elif isinstance(value, dict):
            params[name] = _json_param(source, name, value)
        elif isinstance(value, list):
            _json_values(source, name, value)
            params[name] = Categorical(tuple(value))
        else:
            raise ParameterFileError(
                source,
                f"parameter {name!r} is a {_json_type(value)}; each parameter's value must be "
                f'an array of values, e.g. "{name}": [{json.dumps(value)}], or a range, e.g. '
                f'"{name}": {{"int": [1, 8]}}',
            )
    return ParameterSpace(params, source=source, constraints=tuple(constraints))  # type: ignore[arg-type]


_KINDS = ("values", "int", "float")
_OPTIONS = {"values": ("when",), "int": ("step", "log", "when"), "float": ("step", "log", "when")}


def _json_param(source: str, name: str, spec: dict[str, Any]) -> Param:
    """One parameter's object form: ``{"int": [lo, hi], "step": s}`` and the like."""
    kinds = [k for k in _KINDS if k in spec]
    if len(kinds) != 1:
        raise ParameterFileError(
            source,
            f"parameter {name!r} is an object with {_names(list(spec)) or 'no keys'}; give "
            'exactly one of "values", "int" or "float", e.g. {"int": [4, 64], "step": 4}',
        )
    kind = kinds[0]
    extra = [k for k in spec if k != kind and k not in _OPTIONS[kind]]
    if extra:
        raise ParameterFileError(
            source,
            f"parameter {name!r}: unknown key {_names(extra)}; a {kind!r} parameter takes "
            f"{', '.join(repr(k) for k in (kind, *_OPTIONS[kind]))}",
        )
    when = spec.get("when")
    if when is not None and not isinstance(when, dict):
        raise ParameterFileError(
            source,
            f'parameter {name!r}: "when" is a {_json_type(when)}; give an object of '
            'parameter names to values, e.g. "when": {"algo": "tiled"}',
        )
    if kind == "values":
        values = spec["values"]
        if not isinstance(values, list):
            raise ParameterFileError(
                source, f'parameter {name!r}: "values" is a {_json_type(values)}; give an array'
            )
        _json_values(source, name, values)
        return Categorical(tuple(values), when=when or {})
    bounds = spec[kind]
    if not (isinstance(bounds, list) and len(bounds) == 2):
        raise ParameterFileError(
            source,
            f'parameter {name!r}: "{kind}" is {json.dumps(bounds)}; give the bounds as '
            f'[lo, hi], e.g. "{kind}": [1, 8]',
        )
    lo, hi = bounds
    if kind == "int":
        return Int(lo, hi, step=spec.get("step", 1), log=spec.get("log", False), when=when or {})
    return Float(lo, hi, step=spec.get("step"), log=spec.get("log", False), when=when or {})


def _json_values(source: str, name: str, values: list[Any]) -> None:
    for i, v in enumerate(values):
        if not is_primitive(v):
            raise ParameterFileError(
                source,
                f"parameter {name!r}: item {i} is a nested {_json_type(v)}; values must be "
                "booleans, numbers or strings (nested objects and arrays are not allowed)",
            )


def space_json(space: ParameterSpace) -> str:
    """The JSON parameter file's text for ``space`` (it reads back equal); a space with
    Python hooks has no JSON form (:class:`ParameterFileError`)."""
    if space.hooks:
        raise ParameterFileError(
            space.source,
            f"the space has Python hooks ({', '.join(space.hooks)}), which JSON cannot hold; "
            "keep it in a Python parameter file",
        )
    data: dict[str, Any] = {n: p.to_json() for n, p in space.parameters.items()}
    if space.constraints:
        data[CONSTRAINTS] = [c.text for c in space.constraints]
    return json.dumps(data)


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
    with library_alias():
        try:
            exec(code, namespace)
        except Exception as e:  # the user's code
            raise ParameterFileError(
                source,
                f"running the file raised {type(e).__name__}: {e}; fix the file",
                line_no=line_in(e, source),
            ) from e

    params: dict[str, Param] = {}
    hooks: dict[str, Callable[..., Any]] = {}
    constraints: tuple[object, ...] = ()
    for name, value in namespace.items():
        if name == CONSTRAINTS:
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise ParameterFileError(
                    source,
                    f"{CONSTRAINTS} is {value!r}; give a list of expressions, e.g. "
                    f'{CONSTRAINTS} = ["a * b <= 256"]',
                )
            constraints = tuple(value)
        elif name.startswith("META_"):
            if name not in HOOKS:
                raise ParameterFileError(
                    source,
                    f"unknown hook {name}; the hooks are {', '.join(HOOKS)} and the list "
                    f"{CONSTRAINTS} (rename it, or drop the META_ prefix for a private helper)",
                )
            if not callable(value):
                raise ParameterFileError(source, f"{name} must be a function")
            hooks[name] = value
        elif name.startswith("_"):
            continue
        elif isinstance(value, Param):
            params[name] = value
        elif isinstance(value, list) and all(is_primitive(v) for v in value):
            params[name] = Categorical(tuple(value))

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
    return ParameterSpace(
        params,
        no_rebuild=no_rebuild,
        source=source,
        hooks=hooks,
        constraints=constraints,  # type: ignore[arg-type]  # text, parsed by the space
    )


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
