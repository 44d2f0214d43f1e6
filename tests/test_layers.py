"""The layering contract of ``tuna/`` (DESIGN.md, "Layers"), checked on the source's imports.

::

    cli/        the only place that prints or exits; nothing imports it; no SQLAlchemy
    report, dashboard   beside cli at the top: read through the services
    services    catalog, sessions, jobs, results, worker, fleet, library, searches: import
                each other without cycles, and anything below
    backends/   never touch the database; only backends/ (and its registry) name a backend
    problems/, searchers/  pure: nothing of Tuna but the error tree
    search      the alias parameter files import tuna.searchers by: above everything
    db/         models, engines, dialect code
    config, errors   the settings and the one error tree, under everything

Every import counts, also one inside a function or under ``TYPE_CHECKING``. A new top-level
package must be placed in :data:`LAYERS` below before it can import anything.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.docs import page

TUNA = Path(__file__).resolve().parent.parent / "tuna"

# Higher imports lower; within "services" packages import each other (acyclically).
LAYERS: dict[str, tuple[int, set[str]]] = {
    "alias": (8, {"search"}),  # tuna.search, for parameter files: nothing in tuna/ imports it
    "cli": (7, {"cli"}),
    "top": (6, {"report", "dashboard"}),
    "services": (
        5,
        {
            "catalog",
            "sessions",
            "jobs",
            "results",
            "worker",
            "fleet",
            "library",
            "searches",
            "platforms",
        },  # fmt: skip
    ),
    "backends": (4, {"backends"}),
    "pure": (3, {"problems", "searchers"}),
    "db": (2, {"db"}),
    "config": (1, {"config"}),
    "errors": (0, {"errors"}),
}
RANK = {pkg: rank for rank, pkgs in LAYERS.values() for pkg in pkgs}
LAYER = {pkg: name for name, (_, pkgs) in LAYERS.items() for pkg in pkgs}
# Imports that the ranks alone would allow but the design forbids.
FORBIDDEN = {
    ("backends", "db"): "backends never touch the database (the worker hands them JobWork)",
    **{(p, below): f"{p}/ is pure" for p in LAYERS["pure"][1] for below in ("db", "config")},
}


def _imports(path: Path, root: Path = TUNA) -> list[tuple[str, int]]:
    """(module, line) of every absolute import in ``path`` (relative ones resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            out.append((base, node.lineno))
            if base == "tuna":  # from tuna import cli
                out += [(f"tuna.{a.name}", node.lineno) for a in node.names]
    return out


def _top(path: Path, root: Path = TUNA) -> str:
    return path.relative_to(root).parts[0].removesuffix(".py")


def _sources(root: Path = TUNA) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.name != "__init__.py" or p.parent != root)


@functools.cache
def _edges(root: Path = TUNA) -> dict[tuple[str, str], list[str]]:
    """(from package, to package) -> where, for every import between top-level packages."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in _sources(root):
        src = _top(path, root)
        for module, line in _imports(path, root):
            parts = module.split(".")
            if parts[0] != "tuna" or len(parts) < 2 or parts[1] in (src, "__version__"):
                continue
            edges[(src, parts[1])].append(f"{path.relative_to(root.parent)}:{line}")
    return edges


def upward_imports(root: Path = TUNA) -> list[str]:
    """Every import between top-level packages that the layers do not allow."""
    bad = []
    for (src, dst), where in sorted(_edges(root).items()):
        if src not in RANK or dst not in RANK:
            continue  # reported by test_every_top_level_package_has_a_layer
        if (src, dst) in FORBIDDEN:
            bad.append(f"{src} -> {dst}: {FORBIDDEN[src, dst]} ({where[0]})")
        elif RANK[dst] > RANK[src] or (RANK[dst] == RANK[src] and LAYER[src] != "services"):
            bad.append(f"{src} ({LAYER[src]}) -> {dst} ({LAYER[dst]}) points up ({where[0]})")
    return bad


def test_every_top_level_package_has_a_layer() -> None:
    unplaced = sorted({_top(p) for p in _sources()} - RANK.keys())
    assert not unplaced, f"place {unplaced} in LAYERS of tests/test_layers.py (DESIGN.md, Layers)"


# ``tuna.tune``, the Python API (issue #28): the root's one import, made on first use by its
# module ``__getattr__``, so ``import tuna`` still loads nothing of Tuna.
ROOT_LAZY = {"tuna.searches.tune"}


def test_the_root_package_imports_nothing() -> None:
    tree = ast.parse((TUNA / "__init__.py").read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not [n for n in top if isinstance(n, ast.Import) or (n.module or "").startswith("tuna")]
    lazy = {m for m, _ in _imports(TUNA / "__init__.py") if m.startswith("tuna")}
    assert lazy <= ROOT_LAZY, f"the root package imports {sorted(lazy - ROOT_LAZY)}"


def test_imports_point_down_the_layers() -> None:
    bad = upward_imports()
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_nothing_imports_the_cli() -> None:
    bad = [w for (src, dst), where in _edges().items() if dst == "cli" for w in where]
    assert not bad, f"only the cli imports the cli: {bad}"


def test_pure_packages_import_nothing_of_tuna_but_the_error_tree() -> None:
    bad = [
        f"{src} -> {dst}: {where[0]}"
        for (src, dst), where in _edges().items()
        if LAYER.get(src) == "pure" and dst != "errors"
    ]
    assert not bad, f"problems/ and searchers/ are pure: {bad}"


def test_services_import_each_other_without_cycles() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst in _edges():
        if LAYER.get(src) == LAYER.get(dst) == "services":
            graph[src].add(dst)

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                return [*path[path.index(nxt) :], nxt]
            found = cycle_from(nxt, [*path, nxt])
            if found:
                return found
        return None

    for start in sorted(graph):
        cycle = cycle_from(start, [start])
        assert cycle is None, "services import each other in a cycle: " + " -> ".join(cycle)


#: What of ``tuna/backends/`` is not one backend: the contract, the registry, shared parts
#: (artifacts; a forked child's reaping; finalists re-timed; the plain-convolution scope;
#: the host compiler calls).
BACKEND_COMMONS = {"__init__", "base", "artifact", "child", "finalists", "scope", "toolchain"}


def named_backends(root: Path = TUNA) -> set[str]:
    """The backends of ``tuna/backends/``: its packages and modules but the common ones."""
    return {
        p.name.removesuffix(".py")
        for p in (root / "backends").iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file())
        and p.name.removesuffix(".py") not in BACKEND_COMMONS
    }


def backend_imports(root: Path = TUNA) -> list[str]:
    """Every import of a named backend by a module outside ``tuna/backends/``."""
    named = named_backends(root)
    bad = []
    for path in _sources(root):
        if _top(path, root) == "backends":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["tuna", "backends"] and len(parts) > 2 and parts[2] in named:
                    where = f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}"
                    bad.append(f"{where} imports {'.'.join(parts[:3])}")
                    break
    return bad


def test_only_the_backends_name_a_backend() -> None:
    """Services see a backend through the contract (``tuna/backends/base.py``) and the
    registry (``get_backend``), never by importing it: a new backend is a new folder."""
    from tuna import backends

    # every module of tuna/backends/ is a backend the registry has built in, or a common part
    # (not backend_names(): tests register backends of their own in the same process)
    assert named_backends() == set(backends._BUILT_IN), "place a shared module in BACKEND_COMMONS"
    bad = backend_imports()
    assert not bad, "name a backend only in tuna/backends/:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source",
    [
        "from tuna.backends.cpuconv import solvers\n",
        "def f():\n    import tuna.backends.noop\n",
        "from tuna.backends import bench\n",
        "from tuna.backends.miopen.solvers import BY_NAME\n",
    ],
)
def test_the_check_sees_a_service_naming_a_backend(source: str, tmp_path: Path) -> None:
    root = tmp_path / "tuna"
    for backend in ("cpuconv/__init__.py", "noop.py", "bench/__init__.py", "miopen/__init__.py"):
        (root / "backends" / backend).parent.mkdir(parents=True, exist_ok=True)
        (root / "backends" / backend).write_text("")
    (root / "backends" / "base.py").write_text("")
    (root / "searches").mkdir()
    (root / "searches" / "strategy.py").write_text(
        "from tuna.backends import get_backend\nfrom tuna.backends.base import Backend\n"
    )
    assert backend_imports(root) == []
    (root / "searches" / "x.py").write_text(source)
    (bad,) = backend_imports(root)
    assert bad.startswith("tuna/searches/x.py:"), bad


def test_the_cli_does_not_touch_sqlalchemy() -> None:
    bad = [
        f"{p.relative_to(TUNA.parent)}:{line}"
        for p in sorted((TUNA / "cli").rglob("*.py"))
        for module, line in _imports(p)
        if module.split(".")[0] == "sqlalchemy"
    ]
    assert not bad, f"cli/ goes through the services, never SQLAlchemy: {bad}"


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("problems/x.py", "from tuna.db import Database\n", "problems -> db: problems/ is pure"),
        ("db/x.py", "from tuna import cli\n", "db (db) -> cli (cli) points up (tuna/db/x.py:1)"),
        (
            "backends/x.py",
            "def f():\n    from tuna.jobs.claims import claim_jobs\n",
            "backends (backends) -> jobs (services) points up (tuna/backends/x.py:2)",
        ),
        ("jobs/sub/x.py", "from ...cli import main\n", "jobs (services) -> cli (cli) points up"),
    ],
)
def test_the_check_sees_an_upward_import(
    path: str, source: str, expected: str, tmp_path: Path
) -> None:
    """The guard itself, on a made-up tree: an upward import (also a lazy or relative one)."""
    root = tmp_path / "tuna"
    (root / path).parent.mkdir(parents=True)
    (root / path).write_text(source)
    (root / "cli").mkdir(exist_ok=True)
    (root / "cli" / "__init__.py").write_text("from tuna.jobs import x\n")
    (bad,) = upward_imports(root)
    assert bad.startswith(expected), bad


def _module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_circles(root: Path = TUNA) -> list[list[str]]:
    """Circles of imports between the modules of ``root`` (every import, also a lazy one or
    one under TYPE_CHECKING), each as the modules it passes."""
    paths = {_module_of(p, root): p for p in root.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, up level - 1
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                # from a package import a module: that module (the package runs first anyway)
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else known(base)
                          for a in node.names}  # fmt: skip
        graph[module] = {m for m in found if m and m != module}
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return circles


def test_no_module_of_tuna_imports_itself_round_a_circle() -> None:
    assert module_circles() == []


def test_the_check_sees_a_circle_also_through_a_lazy_import(tmp_path: Path) -> None:
    root = tmp_path / "tuna"
    (root / "jobs").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "jobs" / "__init__.py").write_text("")
    (root / "jobs" / "a.py").write_text("from tuna.jobs.b import x\n")
    (root / "jobs" / "b.py").write_text("def f():\n    from tuna.jobs import a\n")
    assert module_circles(root) == [["tuna.jobs.a", "tuna.jobs.b", "tuna.jobs.a"]]


def test_a_module_over_600_lines_says_why_in_its_first_line() -> None:
    """STYLE.md: past ~500 lines a module is a sign to split along a seam; one that stays
    long says why in a first line ``# Over 600 lines: <reason>.``"""
    unexplained = [
        f"{p.relative_to(TUNA.parent)} ({n} lines)"
        for p in _sources()
        if (n := len(lines := p.read_text().splitlines())) > 600
        and not lines[0].startswith("# Over 600 lines: ")
    ]
    assert unexplained == []


def test_the_docs_map_of_the_code_names_every_package_of_the_tree() -> None:
    layout = page("explanation/layout.md")
    mapped = set(re.findall(r"tuna/(\w+)(?:/|\.py)", layout))
    tree = {p.name.removesuffix(".py") for p in TUNA.iterdir() if p.name != "__init__.py"}
    assert mapped == tree - {"__pycache__"}


def test_the_docs_map_of_the_code_names_every_backend() -> None:
    """README's map of the code (docs/explanation/layout.md) lists the backends by name."""
    entry = page("explanation/layout.md").split("tuna/backends/", 1)[1].split("\ntuna/", 1)[0]
    missing = sorted(b for b in named_backends() if not re.search(rf"\b{b}\b", entry))
    assert missing == [], f"docs/explanation/layout.md: name {missing} under tuna/backends/"
