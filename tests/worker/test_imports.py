"""A worker imports only what a worker needs (issue #14: its start-up is mostly imports).

``tuna worker`` builds its statements on the Core tables (``tuna.db.tables``): neither
importing it nor working jobs of both phases loads SQLAlchemy's ORM, the ORM classes,
Alembic, paramiko or another command's module. Each test checks in a fresh interpreter of
its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.seed import ALL_NOOP_SOLVERS, open_test_db, seed

NOT_FOR_A_WORKER = (
    "sqlalchemy.orm",
    "tuna.db.models",
    "alembic",
    "paramiko",
    "tuna.cli.go_fish",
    "tuna.cli.session",
    "tuna.fleet",
)

_REPORT = """
import json, sys
prefixes = tuple(json.loads(sys.argv[1]))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(prefixes))))
"""


def loaded(
    code: str,
    *args: str,
    env: dict[str, str] | None = None,
    names: tuple[str, ...] = NOT_FOR_A_WORKER,
) -> list[str]:
    """The modules of ``names`` (and below) loaded after ``code`` runs, then _REPORT."""
    out = subprocess.run(
        [sys.executable, "-c", code + _REPORT, json.dumps(names), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def loaded_after_each(*steps: tuple[str, tuple[str, ...]]) -> list[list[str]]:
    """:func:`loaded` for several steps in one interpreter (one start-up, not one a step):
    after each step's code, the modules of its names."""
    code = "import json, sys\n" + "".join(
        f"{step}print(json.dumps(sorted(m for m in sys.modules if m.startswith({names!r}))))\n"
        for step, names in steps
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()[-len(steps) :]]


def test_importing_the_worker_command_loads_no_orm_alembic_paramiko_or_other_commands():
    worker, search_job, models = loaded_after_each(
        # Nor rich: a worker prints one plain line, at its end (tuna.cli.console, on first use).
        ("import tuna.cli.worker\n", (*NOT_FOR_A_WORKER, "rich")),
        # What a worker imports on its first search job, too.
        ("import tuna.worker.searchwork\n", NOT_FOR_A_WORKER),
        # The check sees a module that is loaded.
        ("import tuna.db.models\n", NOT_FOR_A_WORKER),
    )
    assert worker == []
    assert search_job == []
    assert "sqlalchemy.orm" in models


def test_working_both_phases_loads_none_of_them_either(sqlite_url):
    db = open_test_db(sqlite_url)
    sd = seed(db, configs=2, solvers=ALL_NOOP_SOLVERS)
    db.dispose()
    code = (
        "import sys\n"
        "from tuna.cli import main\n"
        "for phase in ('compile', 'eval'):\n"
        "    main(['worker', '--session', sys.argv[2], '--phase', phase, '--burst'],\n"
        "         standalone_mode=False)\n"
    )
    assert loaded(code, str(sd.session), env={"TUNA_DB_URL": sqlite_url}) == []
    db = open_test_db(sqlite_url)
    try:
        from tuna.jobs import job_counts

        assert job_counts(db, sd.session).by_state["evaluated"] == 6
    finally:
        db.dispose()
