"""A job's page and the failed jobs behind a reason (Starlette's test client, both dialects)."""

from __future__ import annotations

import re
from urllib.parse import unquote

import sqlalchemy as sa

from tests.dashboard.test_app import cells, site  # noqa: F401 - the module's fixture
from tuna.db.enums import JobState
from tuna.db.models import ConvConfig, FindDb, Job, Solver


def links(html: str, prefix: str) -> list[str]:
    return [unquote(h).replace("&amp;", "&") for h in re.findall(rf'href="({prefix}[^"]*)"', html)]


def test_a_failure_reason_drills_down_to_its_jobs_with_config_and_solver(site):  # noqa: F811
    client, sd, ro, _sent = site
    page = client.get(f"/sessions/{sd.failing}").text
    (down,) = links(page, f"/sessions/{sd.failing}/failures")
    r = client.get(down)
    assert r.status_code == 200, r.text
    rows = cells(r.text, "failed-jobs")
    with ro.session() as s:
        want = s.execute(
            sa.select(Job.id, ConvConfig.fdb_key, Solver.name)
            .join(ConvConfig, ConvConfig.id == Job.config).join(Solver, Solver.id == Job.solver)
            .where(Job.session == sd.failing, Job.state == JobState.ERRORED).order_by(Job.id)
        ).all()  # fmt: skip
    assert len(want) == 36
    assert [(int(c[0]), c[2], c[3]) for c in rows] == [tuple(w) for w in want]
    assert {c[7] for c in rows} == {"boom (gave up after 4 tries)"}
    assert f'href="/jobs/{want[0].id}"' in r.text
    other = client.get(f"/sessions/{sd.failing}/failures?state=errored&reason=other")
    assert other.status_code == 200 and "No job matches" in other.text
    bad = client.get(f"/sessions/{sd.failing}/failures?state=evaluated")
    assert bad.status_code == 400


def test_a_job_page_shows_what_the_job_did(site):  # noqa: F811
    client, sd, ro, _sent = site
    with ro.session() as s:
        job, driver, key, solver, params = s.execute(
            sa.select(Job.id, ConvConfig.driver, ConvConfig.fdb_key, Solver.name, FindDb.params)
            .join(ConvConfig, ConvConfig.id == Job.config).join(Solver, Solver.id == Job.solver)
            .join(FindDb, FindDb.job == Job.id)
            .where(Job.session == sd.tuned, FindDb.params.is_not(None)).order_by(Job.id).limit(1)
        ).one()  # fmt: skip
    r = client.get(f"/jobs/{job}")
    assert r.status_code == 200, r.text
    html = r.text
    assert (
        f'<code id="driver">{driver}</code>' in html and f'<code id="fdb-key">{key}</code>' in html
    )
    assert f'<td id="solver">{solver}</td>' in html and '<b id="state">evaluated</b>' in html
    assert re.search(r'id="machine">node-[ab]<', html)
    assert [c[1] for c in cells(html, "history")] == [
        "created", "compile started", "compiled", "evaluation started", "evaluated"]  # fmt: skip
    assert ["find_db", params] == cells(html, "results")[0][:2]
    assert cells(html, "measurements") and cells(html, "measurements")[0][0] == params
    with ro.session() as s:
        lost = sa.select(Job.id).where(Job.session == sd.leases, Job.reason.like("lease expired%"))
        lost_id = s.execute(lost.limit(1)).scalar_one()
    html = client.get(f"/jobs/{lost_id}").text
    assert "last one lost its lease" in html and 'id="reason"' in html
    for url in ("/jobs/999999", "/jobs/99999999999999999999"):
        r = client.get(url)
        assert r.status_code == 404 and "does not exist" in r.text, url


def test_job_ids_are_links_where_they_are_shown(site):  # noqa: F811
    client, sd, _ro, _sent = site
    html = client.get(f"/sessions/{sd.failing}/failures?state=errored").text
    assert len(links(html, "/jobs/")) == 36


def test_a_job_page_shows_the_workers_log_lines_about_it(sqlite_url, tmp_path):
    """Real local workers (go_fish's, their logs where go_fish puts them) compile and
    evaluate a session; a job's page shows their lines about that job and no other's."""
    import html as html_lib

    from tests.dashboard.conftest import dashboard_client
    from tests.fleet.test_local import setup
    from tuna.dashboard.app import DashboardSettings
    from tuna.db import open_database
    from tuna.fleet.local import Task, run_local

    db = open_database(sqlite_url)
    sid = setup(db)
    logs = tmp_path / "logs"
    for task in (Task.COMPILE, Task.RUN_PERF):
        report = run_local(db, sid, task, workers=1, log_dir=logs, db_url=sqlite_url,
                           interval=0.2)  # fmt: skip
        assert report.drained
    with db.session() as s:
        first, second = s.execute(
            sa.select(Job.id).where(Job.session == sid).order_by(Job.id).limit(2)
        ).scalars()  # fmt: skip
    with dashboard_client(db, DashboardSettings(logs=logs)) as (client, _ro):
        page = html_lib.unescape(client.get(f"/jobs/{first}").text)
        log = re.search(r'<pre id="log">(.*?)</pre>', page, re.S)
        assert log, page
        lines = log.group(1).splitlines()
        assert [re.search(rf"job {first}: (compile|eval) ", ln).group(1) for ln in lines] == [
            "compile", "eval"]  # fmt: skip
        assert f"job {second}:" not in log.group(1)
        assert str(logs / "compile" / "cpu") in page and str(logs / "eval" / "cpu") in page
        missing = html_lib.unescape(client.get(f"/jobs/{first + 10_000}").text)
        assert "404" in missing or "does not exist" in missing
    elsewhere = tmp_path / "other-logs"
    with dashboard_client(db, DashboardSettings(logs=elsewhere)) as (client, _ro):
        page = html_lib.unescape(client.get(f"/jobs/{first}").text)
        assert f"No line about job {first} in the worker logs under <code>{elsewhere}</code>" in (
            page
        )
        assert "session-&lt;S&gt;" in client.get(f"/jobs/{first}").text
    with dashboard_client(db) as (client, _ro):
        page = html_lib.unescape(client.get(f"/jobs/{first}").text)
        assert "This dashboard reads no worker logs (<code>tuna dashboard --logs DIR</code>)" in (
            page
        )
    db.dispose()
