"""An objective given as a Python function's name, ``module:function``, and what one returns.

``tuna.tune("mymod:measure", ...)`` imports it in-process; a search made with ``tuna search
create --objective-fn mymod:measure`` has each worker import it from the shipped sources
(:mod:`tuna.backends.bench.function`). Both read what it returns with :func:`stats_of`.
"""

from __future__ import annotations

import contextlib
import importlib
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
    module_name, sep, attr = ref.partition(":") if isinstance(ref, str) else ("", "", "")
    if not sep or not module_name.strip() or not attr.strip():
        raise SearchError(
            f"objective function {ref!r}: write it as module:function (e.g. mymod:measure)"
        )
    where = f" in {directory}" if directory is not None else ""
    try:
        with _first_on_path(directory):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
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
