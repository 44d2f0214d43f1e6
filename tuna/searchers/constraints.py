"""Constraints a parameter file states as text: ``"tile * unroll <= 256"``.

JSON has no functions, so a JSON file cannot have ``META_is_config_valid``; it lists
expressions instead (``"META_constraints": ["a * b <= 256", "algo != 'naive' or b == 1"]``,
and a Python file may do the same). A config is refused unless every constraint holds.

An expression is parsed with :mod:`ast` and evaluated by walking its tree — it is never
given to ``eval``. Allowed: numbers, strings, booleans, tuples and lists of them; parameter
names; arithmetic on numbers (``+ - * / // % **``, unary ``-`` and ``+``); comparisons
(``== != < <= > >= in not in``, chained); ``and``, ``or``, ``not``. Anything else (a call,
an attribute, a subscript, a lambda, a name that is not a parameter) is refused when the
file is read, as one line naming the constraint and what to change.

A constraint naming a parameter that a config lacks (a conditional parameter that does not
exist there) is not checked for that config. One that cannot be evaluated for a config
(a division by zero, a string compared with a number) refuses that config, with the reason.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuna.searchers.errors import SearchError
from tuna.searchers.run import is_primitive

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
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
_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.BinOp, ast.Compare,
    ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List,
    *_BINARY, *_COMPARE, *_UNARY,
)  # fmt: skip
#: The largest exponent ``**`` takes: a constraint must not be a way to stall the driver.
MAX_EXPONENT = 1024

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
    """One parsed constraint: its text, the parameters it names, and its checked tree."""

    text: str
    names: frozenset[str]
    tree: ast.Expression = field(compare=False, repr=False)  # equal text, equal constraint

    def refusal(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` breaks this constraint, or None when it holds (or does not apply)."""
        if not all(n in config for n in self.names):
            return None
        try:
            held = _eval(self.tree.body, config)
        except (ArithmeticError, TypeError, ValueError) as e:
            return f"constraint {self.text!r} cannot be evaluated: {type(e).__name__}: {e}"
        return None if held else f"refused by constraint {self.text!r}"


def parse_constraint(text: object, parameters: Collection[str]) -> Constraint:
    """``text`` parsed and checked: only the allowed constructs, only names of ``parameters``."""
    if not isinstance(text, str) or not text.strip():
        raise ConstraintError(
            f'constraint {text!r} is not an expression; write one as a string, e.g. "a * b <= 256"'
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ConstraintError(
            f"constraint {text!r} is not a valid expression ({e.msg}); write one such as "
            '"a * b <= 256"'
        ) from e
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
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
    return Constraint(text.strip(), frozenset(names), tree)


def _eval(node: ast.expr, config: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return config[node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_eval(e, config) for e in node.elts)
    if isinstance(node, ast.BoolOp):  # as Python: the first operand that decides, unchanged
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        for v in node.values:
            value = _eval(v, config)
            if bool(value) is not is_and:
                return value
        return value
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, config)
        if not isinstance(node.op, ast.Not):
            _number(operand)
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp):
        left, right = _number(_eval(node.left, config)), _number(_eval(node.right, config))
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right!r} is above {MAX_EXPONENT}")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, config)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, config)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise TypeError(f"{type(node).__name__} is not allowed")  # parse_constraint refused it


def _number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"arithmetic on {v!r}, which is not a number")
    return v
