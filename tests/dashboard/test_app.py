"""The dashboard's pages through Starlette's test client, on SQLite and on MariaDB."""

from __future__ import annotations

import re
import socket
import sys
import warnings

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy import event, text

with warnings.catch_warnings():  # Starlette 1.x would rather use httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard.conftest import LIVE_JS, dashboard_client, scripts
from tests.report.seed import seed, seeded_database
from tests.support.seed import open_test_db
from tuna.cli import main
from tuna.dashboard import bind, create_app, require_extra
from tuna.dashboard.app import DashboardSettings
from tuna.dashboard.readonly import open_readonly
from tuna.db import migrate, open_database
from tuna.db.engine import make_engine
from tuna.errors import DatabaseError, MissingExtraError, SchemaOutOfDateError, TunaError


@pytest.fixture(scope="module")
def lite_client(tmp_path_factory):
    """A client on a seeded SQLite database, shared by the module's bad-request cases."""
    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'tuna.db'}"
    writer = open_test_db(url)
    seed(writer)
    writer.dispose()
    ro = open_readonly(url)
    yield TestClient(create_app(ro), base_url="http://localhost")
    ro.dispose()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def site(request, tmp_path_factory):
    """(client, seeded, read-only db, statements the dashboard sent), one per dialect."""
    tmp_path = tmp_path_factory.mktemp("site")
    with seeded_database(request, tmp_path) as db:
        sd = seed(db)
        yield from _site(db, sd, tmp_path)


def _site(db, sd, tmp_path):
    reports = tmp_path / "reports"
    (reports / "r1").mkdir(parents=True)
    (reports / "r1" / "report.json").write_text(f'{{"sessions": [{sd.tuned}]}}')
    (reports / "r1" / "index.html").write_text("<p>a report</p>")
    with dashboard_client(db, DashboardSettings(refresh_s=7, reports=reports)) as (client, ro):
        sent: list[str] = []
        event.listen(ro.engine, "before_cursor_execute",
                     lambda _c, _cur, stmt, *_a: sent.append(stmt))  # fmt: skip
        yield client, sd, ro, sent


def cells(html: str, table: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S)
    assert body, f"no table {table}"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)[1:]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in rows]  # fmt: skip


def test_pages_show_the_seeded_database_and_send_only_reads(site):
    client, sd, ro, sent = site
    r = client.get("/")
    assert (
        r.status_code == 200
        and '<noscript><meta http-equiv="refresh" content="7"></noscript>' in r.text
    )
    assert scripts(r.text) == [LIVE_JS]  # no inline script: the CSP allows none
    assert float(r.headers["server-timing"].removeprefix("app;dur=")) >= 0
    rows = {int(c[0]): c for c in cells(r.text, "sessions")}
    assert set(rows) == {sd.tuned, sd.failing, sd.leases, sd.empty}
    assert rows[sd.tuned][5] == "36 / 36" and rows[sd.tuned][9] == "done"
    assert rows[sd.failing][7] == "36" and rows[sd.empty][5] == "0 / 0"
    assert rows[sd.tuned][10] == "r1"
    r = client.get(f"/sessions/{sd.failing}")
    assert r.status_code == 200
    assert cells(r.text, "failures") == [["errored", "boom (gave up after 4 tries)", "36"]]
    r = client.get(f"/sessions/{sd.leases}")
    assert ["new", "36"] in cells(r.text, "progress")  # 3 of them lost a lease, reaped
    r = client.get("/machines")
    assert [c[0] for c in cells(r.text, "machines")] == ["node-a", "node-b"]
    r = client.get("/reports/r1/index.html")
    assert r.status_code == 200 and r.text == "<p>a report</p>"
    reads = re.compile(r"\s*(SELECT|PRAGMA|SET|SHOW|BEGIN)\b", re.I)
    assert sent and all(reads.match(s) for s in sent), sent


def test_a_filter_narrows_the_results_and_pages_by_id(site):
    client, sd, _ro, _sent = site
    everything = cells(client.get(f"/results?session={sd.tuned}&limit=1000").text, "results")
    assert len(everything) == 36
    direct = cells(client.get(f"/results?session={sd.tuned}&solver=NoopDirect").text, "results")
    assert 0 < len(direct) < len(everything) and {c[4] for c in direct} == {"NoopDirect"}
    fwd = cells(client.get(f"/results?session={sd.tuned}&family=fwd+3x3").text, "results")
    assert fwd and {c[2] for c in fwd} == {"fwd 3x3"}
    fast = min(float(c[5]) for c in everything)
    few = cells(client.get(f"/results?session={sd.tuned}&max_ms={fast}").text, "results")
    assert [float(c[5]) for c in few] == [fast]
    r = client.get(f"/results?session={sd.tuned}&limit=10")
    first = cells(r.text, "results")
    nxt = re.search(r'id="next" href="([^"]+)"', r.text).group(1).replace("&amp;", "&")
    second = cells(client.get(nxt).text, "results")
    assert first + second == everything[:20]
    assert [int(c[1]) for c in everything] == sorted(int(c[1]) for c in everything)


def test_the_results_page_shows_each_rows_parameters(site):
    client, sd, ro, _sent = site
    from tuna.db.models import FindDb

    with ro.session() as s:
        want = {int(i): p or "—" for i, p in s.execute(
            sa.select(FindDb.id, FindDb.params).where(FindDb.session == sd.tuned))}  # fmt: skip
    shown = cells(client.get(f"/results?session={sd.tuned}&limit=1000").text, "results")
    assert {int(c[0]): c[7] for c in shown} == want
    assert any(p != "—" for p in want.values())


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/results?session=abc", 400, "session=&#39;abc&#39; is not an integer"),
        ("/results?session=1&max_ms=-3", 400, "max_ms=&#39;-3&#39; must be a finite number"),
        ("/results?session=1&max_ms=nan", 400, "must be a finite number"),
        ("/results?session=1&limit=0", 400, "limit=0 is out of range (1 to 1000)"),
        ("/results?session=1&family=sideways", 400, "expected DIRECTION YxX [gGROUPS]"),
        ("/results?session=1&after=7", 400, "after=&#39;7&#39;: expected two integers as A-B"),
        ("/?limit=99999999999999999999999", 400, "out of range"),
        ("/?color=red", 400, "unknown query parameter color; this page takes arch, limit"),
        ("/results?session=999", 404, "session 999 does not exist"),
        ("/sessions/999", 404, "session 999 does not exist"),
        ("/sessions/abc", 404, "no such page"),
        ("/nowhere", 404, "no such page"),
    ],
)
def test_bad_requests_get_a_page_that_says_why(lite_client, url, status, message):
    r = lite_client.get(url)
    assert r.status_code == status and message in r.text, r.text
    assert "Traceback" not in r.text


def test_writes_through_the_dashboard_connection_are_refused(site):
    _client, sd, ro, _sent = site
    with pytest.raises(DatabaseError, match=r"(?i)read.only|readonly"), ro.transaction() as conn:
        conn.execute(text("UPDATE session SET label = 'x' WHERE id = :i"), {"i": sd.tuned})


def test_an_empty_database_and_an_older_revision(db_url, tmp_path):
    engine = make_engine(db_url)
    with engine.begin() as conn:
        migrate.upgrade(conn, "0002")
    engine.dispose()
    with pytest.raises(SchemaOutOfDateError, match=r"revision 0002, .*run `tuna db upgrade`"):
        open_readonly(db_url)
    if db_url.startswith("sqlite"):
        with pytest.raises(DatabaseError, match="no database at .*run `tuna db upgrade`"):
            open_readonly(f"sqlite:///{tmp_path / 'missing.db'}")
        assert not (tmp_path / "missing.db").exists()


def test_cli_names_the_migrate_command_for_an_old_database(sqlite_url, monkeypatch):
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        migrate.upgrade(conn, "0002")
    engine.dispose()
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    monkeypatch.setenv("COLUMNS", "200")
    r = CliRunner().invoke(main, ["dashboard", "--port", "1"])
    assert r.exit_code == 1
    head = migrate.head_revision()
    assert f"this Tuna needs {head}; run `tuna db upgrade` to migrate it" in r.output


def test_a_port_in_use_is_a_clear_error(db, monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(TunaError, match=f"port {port} on 127.0.0.1 is in use"):
            bind("127.0.0.1", port)
        monkeypatch.setenv("TUNA_DB_URL", str(db.url.render_as_string(hide_password=False)))
        monkeypatch.setenv("COLUMNS", "200")
        r = CliRunner().invoke(main, ["dashboard", "--port", str(port)])
        assert r.exit_code == 1 and "choose another with --port" in r.output, r.output
    finally:
        taken.close()


def test_missing_dependencies_name_the_extra(monkeypatch, sqlite_url):
    monkeypatch.setitem(sys.modules, "starlette", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'tuna\[dashboard\]'"):
        require_extra()
    for name in [m for m in sys.modules if m.startswith("tuna.dashboard.")]:
        monkeypatch.delitem(sys.modules, name)  # as if never imported: Starlette is missing
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    monkeypatch.setenv("COLUMNS", "200")
    r = CliRunner().invoke(main, ["dashboard"])
    assert (
        r.exit_code == 1
        and "install the dashboard extra: pip install 'tuna[dashboard]'" in r.output
    )


def test_a_read_only_mysql_user_sees_everything_and_no_password(mysql_url, tmp_path):
    """The README's read-only user: SELECT grants only; its password never reaches a page."""
    url = sa.engine.make_url(mysql_url)
    engine = make_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    writer = open_database(mysql_url)
    sd = seed(writer)
    writer.dispose()
    admin = sa.create_engine(url)
    user = f"ro_{url.database[-8:]}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE USER '{user}'@'%%' IDENTIFIED BY 's3cret-pw'")
        conn.exec_driver_sql(f"GRANT SELECT ON `{url.database}`.* TO '{user}'@'%%'")
    try:
        ro_url = url.set(username=user, password="s3cret-pw", host="127.0.0.1")
        ro = open_readonly(ro_url)
        client = TestClient(create_app(ro), base_url="http://localhost")
        for page in ("/", f"/sessions/{sd.tuned}", "/machines", f"/results?session={sd.tuned}"):
            r = client.get(page)
            assert r.status_code == 200 and "s3cret-pw" not in r.text, page
            assert "***" in r.text  # the masked URL in the footer
        ro.dispose()
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP USER '{user}'@'%%'")
        admin.dispose()


def test_a_time_filter_reads_a_bounded_window_and_its_pages_still_find_every_row(site, monkeypatch):
    from tuna.results import insight

    _client, sd, ro, _sent = site
    everything = insight.filter_results(ro, insight.ResultFilter(sd.tuned), limit=1000).points
    cutoff = sorted(p.time_ms for p in everything)[len(everything) // 3]
    wanted = [p.id for p in everything if p.time_ms <= cutoff]
    monkeypatch.setattr(insight, "SCAN_WINDOW", 5)
    got, after, pages = [], (0, 0), 0
    while True:
        page = insight.filter_results(
            ro, insight.ResultFilter(sd.tuned, max_ms=cutoff), after=after, limit=3
        )
        got += [p.id for p in page.points]
        pages += 1
        assert len(page.points) <= 3 and pages < 100
        if page.next_after is None:
            break
        after = page.next_after
    assert got == wanted and pages > len(wanted) // 3
