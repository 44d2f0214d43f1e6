"""Safe to share: only the reports' own files, the Host check, the headers, the login, bad ids."""

from __future__ import annotations

import base64
import os
import warnings

import pytest
from click.testing import CliRunner

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.report.seed import seed
from tests.support.seed import open_test_db
from tuna.cli import main
from tuna.dashboard import create_app
from tuna.dashboard.app import DashboardSettings
from tuna.dashboard.guard import Login, host_allowed, known_names
from tuna.dashboard.readonly import open_readonly
from tuna.errors import TunaError
from tuna.report import ReportOptions, build_report

os.environ.setdefault("MPLCONFIGDIR", str(__import__("tempfile").mkdtemp(prefix="tuna-mpl-")))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The README's ``tuna dashboard --reports .`` in a checkout: a real report beside
    ``.env``, ``.git/config`` and the SQLite database itself."""
    root = tmp_path_factory.mktemp("checkout")
    url = f"sqlite:///{root / 'tuna.db'}"
    writer = open_test_db(url)
    sd = seed(writer)
    build_report(writer, ReportOptions((sd.tuned,), root / "report-s1", problems=2))
    writer.dispose()
    (root / ".env").write_text("TUNA_DB_URL=mysql://tuna:hunter2@head/tuna\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[remote]\n")
    (root / "report-s1" / "notes.txt").write_text("not written by tuna report\n")
    (root / "report-s1" / "figures" / "escape.png").symlink_to(root / ".env")
    ro = open_readonly(url)
    yield root, sd, ro
    ro.dispose()


def client_for(ro, **settings) -> TestClient:
    return TestClient(create_app(ro, DashboardSettings(**settings)), base_url="http://localhost")


def test_reports_serve_only_what_tuna_report_wrote(checkout):
    root, sd, ro = checkout
    client = client_for(ro, reports=root)
    page = client.get(f"/sessions/{sd.tuned}")
    assert 'href="/reports/report-s1/index.html"' in page.text
    index = client.get("/reports/report-s1/index.html")
    assert index.status_code == 200 and "<h1" in index.text
    figures = [f for f in (root / "report-s1" / "figures").iterdir() if f.name != "escape.png"]
    assert figures
    for fig in figures:
        r = client.get(f"/reports/report-s1/figures/{fig.name}")
        assert r.status_code == 200 and r.content == fig.read_bytes(), fig.name
    assert client.get("/reports/report-s1/pareto.json").status_code == 200
    for path in (".env", "tuna.db", ".git/config", "report-s1/notes.txt",
                 "report-s1/figures/escape.png", "report-s1/../.env", "report-s1/%2e%2e/.env",
                 "report-s1/..%2f.env", ".git/config/x", "report-s1/figures/../../tuna.db",
                 "report-s1/"):  # fmt: skip
        r = client.get(f"/reports/{path}")
        assert r.status_code == 404, path
        assert "hunter2" not in r.text and "SQLite" not in r.text, path


def test_an_unknown_host_is_refused_and_every_reply_carries_the_security_headers(checkout):
    _root, sd, ro = checkout
    app = create_app(ro, DashboardSettings(allowed_hosts=("head.lab",)))
    for host, status in (("localhost:8484", 200), ("127.0.0.1:8484", 200), ("[::1]:8484", 200),
                         ("head.lab", 200), ("HEAD.LAB.:80", 200), ("10.1.2.3", 200),
                         ("evil.example", 400), ("evil.example:8484", 400),
                         ("localhost.evil.example", 400)):  # fmt: skip
        r = TestClient(app, base_url=f"http://{host}").get("/")
        assert r.status_code == status, host
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert (
            "script-src 'self'" in csp
            and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        )
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
    assert host_allowed("127.0.0.1", frozenset()) and not host_allowed(None, frozenset())
    assert not host_allowed("", known_names("0.0.0.0"))


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_a_login_is_asked_for_when_one_is_configured(checkout, tmp_path):
    _root, sd, ro = checkout
    users = tmp_path / "users"
    users.write_text("# who may look\nana:correct horse\n\ns3cret-token\n")
    client = client_for(ro, login=Login.read(users))
    r = client.get("/")
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic realm=")
    assert "content-security-policy" in r.headers
    assert client.get("/", headers=basic("ana", "wrong")).status_code == 401
    assert client.get("/", headers=basic("bob", "correct horse")).status_code == 401
    assert client.get("/", headers={"Authorization": "Basic !!"}).status_code == 401
    assert client.get("/", headers=basic("ana", "correct horse")).status_code == 200
    assert client.get("/", headers=basic("anyone", "s3cret-token")).status_code == 200
    assert client.get("/", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    assert client.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/healthz").status_code == 200
    for text, message in (("", "no credentials"), (":pw\n", "empty user or password")):
        users.write_text(text)
        with pytest.raises(TunaError, match=message):
            Login.read(users)
    with pytest.raises(TunaError, match="cannot read it"):
        Login.read(tmp_path / "missing")


def test_cli_refuses_a_login_file_without_credentials(tmp_path, monkeypatch):
    empty = tmp_path / "users"
    empty.write_text("# nobody yet\n")
    monkeypatch.setenv("COLUMNS", "200")
    r = CliRunner().invoke(main, ["dashboard", "--login", str(empty)])
    assert r.exit_code == 1 and f"Error: --login {empty}: no credentials in it" in r.output


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/sessions/9223372036854775808", 404, "session 9223372036854775808 does not exist"),
        ("/sessions/9223372036854775807", 404, "session 9223372036854775807 does not exist"),
        ("/searches/99999999999999999999999999", 404, "does not exist"),
        ("/results?session=1&after=9999999999999999999-1", 400, "out of range"),
        ("/results?session=1&after=1-9999999999999999999", 400, "out of range"),
        ("/results?session=9223372036854775808", 400, "out of range"),
        ("/searches?session=9223372036854775808", 400, "out of range"),
    ],
)
def test_ids_past_bigint_are_400_or_404_not_500(checkout, url, status, message):
    _root, _sd, ro = checkout
    r = client_for(ro).get(url)
    assert r.status_code == status and message in r.text, r.text
