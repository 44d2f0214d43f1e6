"""An objective given as a Python function's name, ``module:function``, and what one returns.

``tuna.tune("mymod:measure", ...)`` imports it in-process; a search made with ``tuna search
create --objective-fn mymod:measure`` has each worker import it from the shipped sources
(:mod:`tuna.backends.bench.function`). Both read what it returns with :func:`stats_of`,
and give it a trial when it takes one (:func:`takes_trial`).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tuna.searchers.errors import SearchError


def load_function(ref: str, directory: Path | None = None) -> Callable[..., Any]:
    """The function ``ref`` (``module:function``, the module dotted, the function maybe an
    attribute path ``Class.method``) names, its module imported from ``directory`` first
    (else the interpreter's path); a :class:`SearchError` in one line if it cannot be."""
    module_name, attr = _parse(ref)
    where = f" in {directory}" if directory is not None else ""
    try:
        with _first_on_path(directory):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is None or not _is_part_of(e.name, module_name):
            raise SearchError(  # the module was found; what it imports was not
                f"objective function {ref!r}: importing {module_name}{where} raised "
                f"ModuleNotFoundError: {e}"
            ) from e
        hint = (
            "check the name, or that it is a .py file or package there"
            if directory is not None
            else "give --source DIR, the directory that holds it (it is shipped to the workers)"
        )
        raise SearchError(f"objective function {ref!r}: no module {e.name!r}{where}; {hint}") from e
    except Exception as e:  # the user's module: its import failed
        raise SearchError(
            f"objective function {ref!r}: importing {module_name}{where} raised "
            f"{type(e).__name__}: {e}"
        ) from e
    found: Any = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise SearchError(
                f"objective function {ref!r}: module {module_name} ({module.__file__}) has no "
                f"{attr!r}; name a function it defines"
            )
        found = getattr(found, part)
    if not callable(found):
        raise SearchError(f"objective function {ref!r} is {found!r}, not a function")
    return found


def find_function(ref: str, directory: Path | None = None) -> Path | None:
    """``ref`` checked without running its module: the module's file, under ``directory``
    first (else on the interpreter's path), and in a ``.py`` file a top-level definition of
    the function's name; a :class:`SearchError` in one line if either is missing.

    Where a search is made is not where it runs: the head node may lack what the module
    imports (a GPU library the workers' image has), so the module is not imported there. It
    returns the module's file (None when it has no Python source to read)."""
    module_name, attr = _parse(ref)
    path: Path | None = None
    if directory is not None:
        base = Path(directory).joinpath(*module_name.split("."))
        path = next(
            (p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None
        )
    if path is None:
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):  # a parent package that does not import
            spec = None
        if spec is None:
            where = f" in {directory} or installed" if directory is not None else ""
            hint = (
                "check the name, or that it is a .py file or package there"
                if directory is not None
                else "give --source DIR, the directory that holds it (it is shipped to the workers)"
            )
            raise SearchError(
                f"objective function {ref!r}: no module {module_name!r}{where}; {hint}"
            )
        if spec.origin is None or not spec.origin.endswith(".py"):
            return None
        path = Path(spec.origin)
    names = _defined(path, ref)
    first = attr.split(".")[0]
    if names is not None and first not in names:
        raise SearchError(
            f"objective function {ref!r}: module {module_name} ({path}) has no {first!r}; name "
            "a function it defines"
        )
    return path


def stats_of(out: object, stat: str) -> dict[str, Any] | str:
    """An objective's result as stats (a number is ``stat``), or what is wrong with it."""
    if isinstance(out, bool) or not isinstance(out, int | float | Mapping):
        return f"returned {out!r}; return a number or a dict of stats"
    stats = {stat: float(out)} if isinstance(out, int | float) else dict(out)
    try:
        json.dumps(stats)
    except (TypeError, ValueError) as e:
        return f"returned stats that are not JSON data: {e}"
    return stats


@contextlib.contextmanager
def _first_on_path(directory: Path | None) -> Iterator[None]:
    if directory is None:
        yield
        return
    entry = str(Path(directory).resolve())
    sys.path.insert(0, entry)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _parse(ref: object) -> tuple[str, str]:
    module_name, sep, attr = ref.partition(":") if isinstance(ref, str) else ("", "", "")
    if not sep or not module_name.strip() or not attr.strip():
        raise SearchError(
            f"objective function {ref!r}: write it as module:function (e.g. mymod:measure)"
        )
    return module_name.strip(), attr.strip()


def _defined(path: Path, ref: str) -> set[str] | None:
    """The names a module's top level defines (also under if/try/with); None when any name
    may be (``from x import *``, a module ``__getattr__``)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as e:
        raise SearchError(f"objective function {ref!r}: cannot read {path}: {e}") from e
    except SyntaxError as e:
        raise SearchError(
            f"objective function {ref!r}: {path} line {e.lineno}: {e.msg}; fix the module"
        ) from e
    names: set[str] = set()
    body = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                return None
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for field in ("body", "orelse", "finalbody", "handlers"):
                body.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            body.extend(node.body)
    return None if "__getattr__" in names else names


def _is_part_of(name: str, module_name: str) -> bool:
    """Whether ``name`` is ``module_name`` or one of its parent packages."""
    parts = module_name.split(".")
    return name in {".".join(parts[: i + 1]) for i in range(len(parts))}


def takes_trial(objective: Callable[..., Any]) -> bool:
    """Whether ``objective`` takes a second positional argument (the trial, to report its
    progress: ``trial.report(step, value)``)."""
    try:
        signature = inspect.signature(objective)
    except (TypeError, ValueError):  # a builtin without a signature: params only
        return False
    kinds = [p.kind for p in signature.parameters.values()]
    positional = [k for k in kinds if k in (inspect.Parameter.POSITIONAL_ONLY,
                                             inspect.Parameter.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    return len(positional) >= 2 or inspect.Parameter.VAR_POSITIONAL in kinds
