"""Constraints written as text, in two vocabularies: over a config's parameters, and over a
run's stats and the baseline's.

**Parameters** (:func:`parse_constraint`, a parameter file's ``META_constraints``): JSON has
no functions, so a JSON file cannot have ``META_is_config_valid``; it lists expressions
instead (``"META_constraints": ["a * b <= 256", "algo != 'naive' or b == 1"]``, and a Python
file may do the same). A config is refused unless every constraint holds. Allowed: numbers,
strings, booleans, tuples and lists of them; parameter names; arithmetic on numbers
(``+ - * / // % **``, unary ``-`` and ``+``); comparisons (``== != < <= > >= in not in``,
chained); ``and``, ``or``, ``not``. A constraint naming a parameter that a config lacks (a
conditional parameter that does not exist there) is not checked for that config. One that
cannot be evaluated for a config (a division by zero, a string compared with a number)
refuses that config, with the reason.

**Stats** (:func:`parse_stat_constraint`, a search's objective): ``qos_loss <= 3``,
``accuracy >= baseline.accuracy - 0.5``. A comparison (chains such as ``0 <= x <= 3``
included) between arithmetic expressions over numbers, a run's stats (by name) and the
baseline's stats (``baseline.NAME``): only numbers, names, ``baseline.NAME``, ``+ - * /``,
unary minus and ``abs``, ``min`` and ``max``. A run satisfies it when every stat it names is
a number in the run (and in the baseline) and the comparison holds.

Both are parsed with :mod:`ast`, checked against their vocabulary when read (anything else
is refused as one line naming the constraint and what to change), and evaluated by one walk
of the tree (:func:`_evaluate`) — never given to ``eval``, so a constraint cannot run code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuna.searchers.errors import ObjectiveError, SearchError
from tuna.searchers.run import is_primitive

_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {"abs": abs, "min": min, "max": max}
#: The largest exponent ``**`` takes: a constraint must not be a way to stall the driver.
MAX_EXPONENT = 1024


def _evaluate(node: ast.AST, read: Callable[[ast.Name | ast.Attribute], Any]) -> Any:
    """The value of a checked tree, as Python computes it; ``read`` gives a name's value
    (and a stat constraint's ``baseline.NAME``'s). Arithmetic on what is not a number is a
    TypeError, a division by zero a ZeroDivisionError naming the division."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        return read(node)
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_evaluate(e, read) for e in node.elts)
    if isinstance(node, ast.BoolOp):  # as Python: the first operand that decides, unchanged
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        for v in node.values:
            value = _evaluate(v, read)
            if bool(value) is not is_and:
                return value
        return value
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, read)
        if not isinstance(node.op, ast.Not):
            _number(operand)
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp):
        left, right = _number(_evaluate(node.left, read)), _number(_evaluate(node.right, read))
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right!r} is above {MAX_EXPONENT}")
        try:
            return _ARITHMETIC[type(node.op)](left, right)
        except ZeroDivisionError as e:
            raise ZeroDivisionError(f"division by zero in {ast.unparse(node)}") from e
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, read)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, read)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)  # the vocabulary checked it
        args = [_evaluate(a, read) for a in node.args]
        try:
            return float(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as e:
            raise type(e)(f"{ast.unparse(node)}: {e}") from e
    raise TypeError(f"{type(node).__name__} is not allowed")  # the vocabulary refused it


def _number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"arithmetic on {v!r}, which is not a number")
    return v


def _parse(text: object, empty: str, invalid: str, error: type[SearchError]) -> ast.Expression:
    """``text``'s tree; ``empty`` and ``invalid`` (with ``{msg}``: Python's) are the lines of
    the ``error`` raised for a text that is empty or not a string, or not an expression."""
    if not isinstance(text, str) or not text.strip():
        raise error(empty)
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise error(invalid.format(msg=e.msg)) from e


# -- over parameters -----------------------------------------------------------------------------

_PARAMETER_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.BinOp, ast.Compare,
    ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List,
    *_ARITHMETIC, *_COMPARE, *_UNARY,
)  # fmt: skip

_WHAT = {
    ast.Call: "a function call",
    ast.Attribute: "an attribute",
    ast.Subscript: "a subscript",
    ast.Lambda: "a lambda",
    ast.IfExp: "a conditional expression",
    ast.NamedExpr: "an assignment",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.JoinedStr: "an f-string",
}


class ConstraintError(SearchError):
    """Raised (by :func:`parse_constraint`) with why a constraint's text is refused; the space
    reading the file turns it into a :class:`~tuna.searchers.errors.ParameterFileError`."""


@dataclass(frozen=True)
class Constraint:
    """One parsed constraint over parameters: its text, the parameters it names, and its
    checked tree."""

    text: str
    names: frozenset[str]
    tree: ast.Expression = field(compare=False, repr=False)  # equal text, equal constraint

    def refusal(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` breaks this constraint, or None when it holds (or does not apply)."""
        if not all(n in config for n in self.names):
            return None

        def read(node: ast.Name | ast.Attribute) -> Any:
            assert isinstance(node, ast.Name)  # parse_constraint refused attributes
            return config[node.id]

        try:
            held = _evaluate(self.tree.body, read)
        except (ArithmeticError, TypeError, ValueError) as e:
            return f"constraint {self.text!r} cannot be evaluated: {type(e).__name__}: {e}"
        return None if held else f"refused by constraint {self.text!r}"


def parse_constraint(text: object, parameters: Collection[str]) -> Constraint:
    """``text`` parsed and checked: only the allowed constructs, only names of ``parameters``."""
    tree = _parse(
        text,
        f'constraint {text!r} is not an expression; write one as a string, e.g. "a * b <= 256"',
        f"constraint {text!r} is not a valid expression ({{msg}}); write one such as "
        '"a * b <= 256"',
        ConstraintError,
    )
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _PARAMETER_NODES):
            what = _WHAT.get(type(node), f"'{type(node).__name__}'")
            raise ConstraintError(
                f"constraint {text!r} uses {what}, which a constraint may not; use only "
                "parameter names, numbers, strings, arithmetic, comparisons, and/or/not"
            )
        if isinstance(node, ast.Constant) and not is_primitive(node.value):
            raise ConstraintError(
                f"constraint {text!r} uses the value {node.value!r}; use numbers, strings "
                "or booleans"
            )
        if isinstance(node, ast.Name):
            names.add(node.id)
    unknown = sorted(names - set(parameters))
    if unknown:
        known = ", ".join(repr(p) for p in parameters) or "(none)"
        raise ConstraintError(
            f"constraint {text!r} names {', '.join(map(repr, unknown))}, which "
            f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
            f"(the parameters are {known}); fix the name or declare the parameter"
        )
    assert isinstance(text, str)  # _parse refused anything else
    return Constraint(text.strip(), frozenset(names), tree)


# -- over a run's stats and the baseline's -------------------------------------------------------

BASELINE = "baseline"
EXAMPLES = "write e.g. 'qos_loss <= 3' or 'accuracy >= baseline.accuracy - 0.5'"
_STAT_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_STAT_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class _Unmet(Exception):
    """A run's stat (or the baseline's) is missing or not a number."""


@dataclass(frozen=True)
class StatConstraint:
    """One parsed constraint over stats; :func:`parse_stat_constraint` makes it from its
    text."""

    text: str
    tree: ast.Expression = field(repr=False, compare=False)
    stats: frozenset[str]
    """The run's stats it names."""
    baseline_stats: frozenset[str]
    """The baseline's stats it names (``baseline.NAME``)."""

    def holds(self, stats: Mapping[str, Any], baseline: Mapping[str, Any] | None = None) -> bool:
        """Whether a run with these stats satisfies it (False when a stat it names is
        missing or not a number, or no baseline was measured for a ``baseline.NAME``)."""
        return self.unmet(stats, baseline) is None

    def unmet(
        self, stats: Mapping[str, Any], baseline: Mapping[str, Any] | None = None
    ) -> str | None:
        """None when it holds, else why not, in words (for a run's table)."""

        def read(node: ast.Name | ast.Attribute) -> float:
            if isinstance(node, ast.Name):
                return _stat(stats, node.id, "the run")
            if baseline is None:
                raise _Unmet("no baseline measured")
            return _stat(baseline, node.attr, "the baseline")

        try:
            if _evaluate(self.tree.body, read):
                return None
        except (_Unmet, ArithmeticError, TypeError, ValueError) as e:
            return f"{self.text}: {e}"
        return f"{self.text}: not met"


def parse_stat_constraint(text: str) -> StatConstraint:
    """The :class:`StatConstraint` of ``text``; an :class:`ObjectiveError` of one line says
    what is wrong with it and how to write one."""
    tree = _parse(
        text,
        f"constraint {text!r}: empty; {EXAMPLES}",
        f"constraint {text!r}: not an expression ({{msg}}); {EXAMPLES}",
        ObjectiveError,
    )
    if not isinstance(tree.body, ast.Compare):
        raise ObjectiveError(
            f"constraint {text!r}: not a comparison (use <, <=, >, >=, == or !=); {EXAMPLES}"
        )
    stats: set[str] = set()
    baseline: set[str] = set()
    dotted = {id(n.value) for n in ast.walk(tree.body) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree.body):
        if isinstance(node, ast.Name) and node.id == BASELINE and id(node) not in dotted:
            raise ObjectiveError(
                f"constraint {text!r}: name one of the baseline's stats (baseline.NAME); {EXAMPLES}"
            )
        why = _refused_in_stats(node)
        if why is not None:
            raise ObjectiveError(f"constraint {text!r}: {why}; {EXAMPLES}")
        if isinstance(node, ast.Attribute):
            baseline.add(node.attr)
        elif isinstance(node, ast.Name) and not _is_callee(node, tree.body) and node.id != BASELINE:
            stats.add(node.id)
    return StatConstraint(text.strip(), tree, frozenset(stats), frozenset(baseline))


def _is_callee(name: ast.Name, root: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(root))


def _refused_in_stats(node: ast.AST) -> str | None:
    """Why a node has no place in a constraint over stats (None: it has one)."""
    if isinstance(node, ast.Compare):
        bad = [type(op).__name__ for op in node.ops if not isinstance(op, _STAT_COMPARE)]
        return f"the comparison {bad[0]} is not allowed" if bad else None
    if isinstance(node, ast.BinOp):
        ok = isinstance(node.op, _STAT_ARITHMETIC)
        return None if ok else f"the operator {type(node.op).__name__} is not allowed (+ - * /)"
    if isinstance(node, ast.UnaryOp):
        ok = isinstance(node.op, ast.USub | ast.UAdd)
        return None if ok else f"the operator {type(node.op).__name__} is not allowed"
    if isinstance(node, ast.Constant):
        ok = isinstance(node.value, int | float) and not isinstance(node.value, bool)
        return None if ok else f"{node.value!r} is not a number"
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == BASELINE:
            return None
        return f"{ast.unparse(node)!r}: only baseline.NAME may have a dot"
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
            return None
        return f"{ast.unparse(node.func)!r} is not a function a constraint may call (abs, min, max)"
    if isinstance(node, ast.Name | ast.Load | ast.cmpop | ast.operator | ast.unaryop):
        return None
    return f"{ast.unparse(node)!r} is not allowed (numbers, stats, baseline.STAT, + - * /)"


def _stat(stats: Mapping[str, Any], name: str, whose: str) -> float:
    value = stats.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unmet(f"{whose} has no number {name!r}")
    return float(value)
