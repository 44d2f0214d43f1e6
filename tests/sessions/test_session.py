from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.seed import make_session
from tuna.backends import UnknownBackendError
from tuna.db.models import Solver
from tuna.errors import NotFoundError, TunaError
from tuna.sessions import SessionSpec, create_session, fingerprint, get_session, list_sessions

SPEC = SessionSpec(
    arch="gfx90a",
    num_cu=104,
    backend="noop",
    library_version="3.3.0",
    library_commit="2d1fd997",
    environment={"MIOPEN_FIND_MODE": "1"},
)


def test_fingerprint_covers_what_makes_results_comparable():
    base = fingerprint(SPEC)
    assert fingerprint(SessionSpec(**{**SPEC.__dict__, "label": "x", "ticket": "T-1"})) == base
    for change in (
        {"arch": "gfx942"},
        {"num_cu": 110},
        {"library_commit": "abc"},
        {"environment": {"MIOPEN_FIND_MODE": "3"}},
        {"toolchain": "rocm-6.3"},
        {"docker_image": "tuna:1"},
    ):
        assert fingerprint(SessionSpec(**{**SPEC.__dict__, **change})) != base, change


def test_digest_wins_over_image_name():
    a = SessionSpec(**{**SPEC.__dict__, "docker_image": "tuna:1", "docker_digest": "sha256:1"})
    b = SessionSpec(**{**SPEC.__dict__, "docker_image": "tuna:2", "docker_digest": "sha256:1"})
    assert fingerprint(a) == fingerprint(b)


def test_create_records_the_session_and_its_backends_solvers(db):
    row = create_session(db, SPEC)
    again = get_session(db, row.id)
    assert again == row
    assert (row.arch, row.num_cu, row.environment) == ("gfx90a", 104, {"MIOPEN_FIND_MODE": "1"})
    assert row.fingerprint == fingerprint(SPEC)
    with db.session() as s:
        names = set(s.scalars(select(Solver.name).where(Solver.backend == "noop")))
    assert {"NoopDirect", "NoopTunable"} <= names
    create_session(db, SPEC)
    assert [r.id for r in list_sessions(db)] == [row.id, row.id + 1]


def test_unknown_backend_and_missing_session_are_clear_errors(db):
    with pytest.raises(UnknownBackendError, match="noop"):
        create_session(db, SessionSpec(arch="x", num_cu=1, backend="nope"))
    with pytest.raises(NotFoundError, match="tuna session list"):
        get_session(db, 999)


def test_a_session_records_its_runtime(db):
    row = create_session(
        db, SessionSpec(arch="gfx906", num_cu=60, backend="noop", runtime="OpenCL")
    )
    assert get_session(db, row.id).runtime == "OpenCL"
    assert get_session(db, create_session(db, SPEC).id).runtime is None  # HIP, MIOpen's default
    with pytest.raises(TunaError, match="runtime 'CUDA' is not one of HIP, OpenCL"):
        create_session(db, SessionSpec(arch="gfx906", num_cu=60, backend="noop", runtime="CUDA"))


def test_a_session_keeps_the_user_s_platform_additions_outside_its_fingerprint(db):
    spec = SessionSpec(**{**SPEC.__dict__, "user_platform": {"cooling": "liquid"}})
    assert fingerprint(spec) == fingerprint(SPEC)
    row = create_session(db, spec)
    assert get_session(db, row.id).user_platform == {"cooling": "liquid"}
    assert get_session(db, create_session(db, SPEC).id).user_platform == {}


def test_a_default_strategy_is_stored_as_given(db):
    # a share of the space stays a share (0.1, 1.0) and a count a count (1), on both databases
    for budget in (0.1, 1.0, 1):
        default = {"strategy": "model", "budget": budget, "patience": None, "seed": 0,
                   "round_size": 8, "transfer": True}  # fmt: skip
        spec = SessionSpec(arch="cpu", num_cu=1, backend="cpuconv", default_strategy=default)
        stored = get_session(db, create_session(db, spec).id).default_strategy
        assert stored == default and type(stored["budget"]) is type(budget)
    assert get_session(db, create_session(db, SPEC).id).default_strategy == {}
    assert [s.default_strategy.get("budget") for s in list_sessions(db)] == [0.1, 1.0, 1, None]


def test_a_missing_session_is_one_error_written_in_one_place():
    root = Path(__file__).resolve().parents[2] / "tuna"
    pattern = re.compile(r"session \{[^\"]*\} does not exist")  # an f-string's message
    writers = [
        f"{p.relative_to(root)}:{n}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert writers == ["sessions/session.py:" + str(_line_of("does not exist; "))]


def _line_of(text: str) -> int:
    source = Path(__file__).resolve().parents[2] / "tuna" / "sessions" / "session.py"
    return next(n for n, line in enumerate(source.read_text().splitlines(), 1) if text in line)


def test_list_sessions_oldest_first_or_the_newest_first_of_an_arch(db):
    a = make_session(db, arch="gfx90a")
    b = make_session(db, arch="gfx906")
    c = make_session(db, arch="gfx90a", label="later")
    assert [s.id for s in list_sessions(db)] == [a, b, c]
    assert [s.id for s in list_sessions(db, newest=5, arch="gfx90a")] == [c, a]
    assert [s.id for s in list_sessions(db, newest=1)] == [c]
