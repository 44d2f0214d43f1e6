"""``tuna db``: the example of docs/how-to/head-node.md shows what the command prints."""

from __future__ import annotations

import re

from click.testing import CliRunner

from tests.support.docs import page
from tuna.cli import main
from tuna.config import mask_url
from tuna.db import migrate


def test_the_docs_db_upgrade_example_is_real_output(mysql_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", mysql_url)
    runner = CliRunner()
    head = migrate.head_revision()
    shown = mask_url(mysql_url)
    up = runner.invoke(main, ["db", "upgrade"])
    assert up.exit_code == 0, up.output
    assert up.output == f"{shown}: upgraded (empty) -> {head}\n"
    cur = runner.invoke(main, ["db", "current"])
    assert cur.output == f"{shown}: revision {head}, head {head} (up to date)\n"

    example = page("how-to/head-node.md").split("$ tuna db upgrade", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"^mysql\+pymysql://\S+: ", "", ln) for ln in example.splitlines()]
    assert f"upgraded (empty) -> {head}" in lines, "head-node.md: stale upgrade"
    assert f"revision {head}, head {head} (up to date)" in lines
