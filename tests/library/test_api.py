from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

import tuna.library
from tests.support import docs
from tests.support.history import LINES, add_find, make_configs, session
from tests.support.seed import open_test_db
from tuna.errors import TunaError
from tuna.sessions.history import retire
from tuna.sessions.rules import HistoryRules

PAGE = "how-to/results.md"  # the example of tuna.library a user copies


def _seeded(url: str):
    lib_db = open_test_db(url)
    h = make_configs(lib_db)
    a, b = session(lib_db), session(lib_db, library_commit="new")
    add_find(lib_db, a, h.configs[0], h.solvers["NoopDirect"], 2.5)
    add_find(lib_db, b, h.configs[0], h.solvers["NoopTunable"], 1.25, perf_params="tile=8")
    return lib_db, h, a, b


def test_best_by_driver_line_key_and_problem(db_url):
    db, h, a, b = _seeded(db_url)
    try:
        with tuna.library.open(db_url, arch="gfx90a", num_cu=104) as lib:
            best = lib.best(LINES[0])
            assert best is not None
            assert (best.solver, best.params, best.time_ms, best.session) == (
                "NoopTunable", "tile=8", 1.25, b,
            )  # fmt: skip
            assert lib.best(h.keys[0]) == best
            assert lib.best(LINES[1]) is None  # no history for this problem
            assert lib.best_of([LINES[0], LINES[1]]) == {h.keys[0]: best}
            retire(db, b)  # the library re-reads which sessions count
            assert lib.best(LINES[0]).session == a
        # a session target uses its rules: the default (same fingerprint) excludes b anyway
        with tuna.library.open(db_url, session=a) as lib:
            assert lib.best(LINES[0]).session == a
        with tuna.library.open(db_url, session=a, rules=HistoryRules(library="version")) as lib:
            assert lib.best(LINES[0]).session == a  # b is retired
    finally:
        db.dispose()


def test_bad_input_is_a_clear_error(lite, sqlite_url):
    make_configs(lite)
    with pytest.raises(TunaError, match="session=S, or arch= and num_cu="):
        tuna.library.open(sqlite_url, arch="gfx90a")
    with tuna.library.open(sqlite_url, arch="gfx90a", num_cu=104) as lib:
        with pytest.raises(TunaError, match="gives 3 conv problems.*-F 1"):
            lib.best("./bin/MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3")
        with pytest.raises(TunaError, match="not understood"):
            lib.best("no such problem")


def test_the_docs_example_runs(tmp_path, monkeypatch):
    code = re.search(r"```python\n(import tuna\.library\n.*?)```", docs.page(PAGE), re.S)
    assert code, f"docs/{PAGE} has no tuna.library example"
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///tuna.db"
    db, _h, _a, b = _seeded(url)
    db.dispose()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.group(1), PAGE, "exec"), {})  # noqa: S102
    assert out.getvalue() == "NoopTunable tile=8 1.25\n"
    assert os.path.exists(tmp_path / "tuna.db")
