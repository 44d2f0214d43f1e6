"""Constraints on a run's stats: ``qos_loss <= 3``, ``accuracy >= baseline.accuracy - 0.5``.

A constraint is a comparison (chains such as ``0 <= x <= 3`` included) between arithmetic
expressions over numbers, a run's stats (by name) and the baseline's stats
(``baseline.NAME``). It is parsed with :mod:`ast` and evaluated by walking the tree, never by
``eval``: only numbers, names, ``baseline.NAME``, ``+ - * /``, unary minus and ``abs``,
``min`` and ``max`` are accepted, so a constraint cannot run code. A run satisfies it when
every stat it names is a number in the run (and in the baseline) and the comparison holds.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuna.searchers.errors import ObjectiveError

BASELINE = "baseline"
EXAMPLES = "write e.g. 'qos_loss <= 3' or 'accuracy >= baseline.accuracy - 0.5'"

_COMPARE: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {"abs": abs, "min": min, "max": max}


class _Unmet(Exception):
    """A run's stat is missing or not a number, or the arithmetic fails (x / 0)."""


@dataclass(frozen=True)
class Constraint:
    """One parsed constraint; :func:`parse_constraint` makes it from its text."""

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
        try:
            if _evaluate(self.tree.body, stats, baseline):
                return None
        except _Unmet as e:
            return f"{self.text}: {e}"
        return f"{self.text}: not met"


def parse_constraint(text: str) -> Constraint:
    """The :class:`Constraint` of ``text``; an :class:`ObjectiveError` of one line says what
    is wrong with it and how to write one."""
    if not isinstance(text, str) or not text.strip():
        raise ObjectiveError(f"constraint {text!r}: empty; {EXAMPLES}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ObjectiveError(f"constraint {text!r}: not an expression ({e.msg}); {EXAMPLES}") from e
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
        why = _refused(node)
        if why is not None:
            raise ObjectiveError(f"constraint {text!r}: {why}; {EXAMPLES}")
        if isinstance(node, ast.Attribute):
            baseline.add(node.attr)
        elif isinstance(node, ast.Name) and not _is_callee(node, tree.body) and node.id != BASELINE:
            stats.add(node.id)
    return Constraint(text.strip(), tree, frozenset(stats), frozenset(baseline))


def _is_callee(name: ast.Name, root: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(root))


def _refused(node: ast.AST) -> str | None:
    """Why a node has no place in a constraint (None: it has one)."""
    if isinstance(node, ast.Compare):
        bad = [type(op).__name__ for op in node.ops if type(op) not in _COMPARE]
        return f"the comparison {bad[0]} is not allowed" if bad else None
    if isinstance(node, ast.BinOp):
        ok = type(node.op) in _ARITHMETIC
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


def _evaluate(node: ast.AST, stats: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> Any:
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, stats, baseline)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, stats, baseline)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int | float)  # parse_constraint checked it
        return float(node.value)
    if isinstance(node, ast.Name):
        return _number(stats, node.id, "the run")
    if isinstance(node, ast.Attribute):
        if baseline is None:
            raise _Unmet("no baseline measured")
        return _number(baseline, node.attr, "the baseline")
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, stats, baseline)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        a, b = _evaluate(node.left, stats, baseline), _evaluate(node.right, stats, baseline)
        try:
            return _ARITHMETIC[type(node.op)](a, b)
        except ZeroDivisionError as e:
            raise _Unmet(f"division by zero in {ast.unparse(node)}") from e
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)  # parse_constraint checked it
        args = [_evaluate(a, stats, baseline) for a in node.args]
        try:
            return float(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as e:
            raise _Unmet(f"{ast.unparse(node)}: {e}") from e
    raise AssertionError(f"unchecked node {ast.dump(node)}")  # parse_constraint refused it


def _number(stats: Mapping[str, Any], name: str, whose: str) -> float:
    value = stats.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unmet(f"{whose} has no number {name!r}")
    return float(value)
