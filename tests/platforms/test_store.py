"""Platform rows: content-addressed, composed with the user's additions, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from tuna.db.models import Machine, Platform
from tuna.fleet.machines import add_machine, get_machine
from tuna.platforms import (
    PlatformJsonError,
    canonical,
    compose,
    digest,
    platform_info,
    read_user_platform,
    report_platform,
    store_platform,
)

FACTS = {"cpu": {"model": "EPYC", "cores": 16}, "os": {"kernel": "6.1"}}


def test_the_digest_does_not_depend_on_key_order():
    reordered = {"os": {"kernel": "6.1"}, "cpu": {"cores": 16, "model": "EPYC"}}
    assert canonical(FACTS) == canonical(reordered)
    assert digest(FACTS) == digest(reordered) != digest({**FACTS, "x": 1})


def test_the_session_s_additions_go_over_the_machine_s_under_user():
    info = compose(FACTS, {"cooling": "air", "rack": 3}, {"cooling": "liquid"})
    assert info == {**FACTS, "user": {"cooling": "liquid", "rack": 3}}
    assert compose(FACTS, None, {}) == FACTS


def test_the_same_document_is_stored_once(db):
    with db.transaction() as conn:
        a = store_platform(conn, FACTS)
        b = store_platform(conn, dict(reversed(list(FACTS.items()))))
        c = store_platform(conn, {**FACTS, "gpus": []})
    assert a == b != c
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Platform)) == 2
    assert platform_info(db, a) == FACTS
    assert platform_info(db, 12345) is None


def test_a_worker_s_report_becomes_its_machine_s_platform_with_the_user_s_additions(db):
    m = add_machine(db, "node1", user_platform={"cooling": "liquid"})
    pid = report_platform(db, FACTS, machine=m.id, session_user={"note": "retune"})
    assert get_machine(db, m.id).platform == pid
    assert platform_info(db, pid) == {**FACTS, "user": {"cooling": "liquid", "note": "retune"}}
    assert report_platform(db, FACTS) != pid  # no machine, no additions: another document
    with db.session() as s:
        assert s.scalar(select(Machine.platform).where(Machine.id == m.id)) == pid


def test_user_platform_json_is_one_object(tmp_path: Path):
    good = tmp_path / "good.json"
    good.write_text('{"cooling": "liquid", "fans": [1, 2]}')
    assert read_user_platform(good) == {"cooling": "liquid", "fans": [1, 2]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cooling": "liquid",\n "fans": [1, 2,]}', r"bad\.json:2:16: malformed platform JSON"),
        ("[1, 2]", r"bad\.json: platform JSON must be an object .*not list"),
        ("", r"bad\.json:1:1: malformed platform JSON: Expecting value"),
    ],
)
def test_malformed_platform_json_names_the_file_and_the_position(
    tmp_path: Path, text: str, message: str
):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(PlatformJsonError, match=message):
        read_user_platform(bad)


def test_a_missing_platform_json_file_is_named(tmp_path: Path):
    with pytest.raises(PlatformJsonError, match=r"cannot read platform JSON .*nope\.json"):
        read_user_platform(tmp_path / "nope.json")
