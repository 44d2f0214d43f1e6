from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.backends.base import SessionInfo
from tuna.sessions.rules import (
    HistoryRules,
    RulesError,
    excluded_by,
    exclusion_hint,
    parse_max_age,
    parse_platform_fields,
    platform_field,
    version_key,
)

NOW = dt.datetime(2026, 11, 24, 12, 0, 0)
TARGET = SessionInfo(
    id=1, arch="gfx90a", num_cu=104, backend="miopen", library_version="3.3.0",
    library_commit="abc", fingerprint="F1",
)  # fmt: skip


def other(**changes: object) -> SessionInfo:
    return SessionInfo(**{**TARGET.__dict__, "id": 2, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * 86400), ("12h", 12 * 3600), ("90m", 5400), ("2w", 14 * 86400), ("45s", 45),
     ("1.5h", 5400), (" 7D ", 7 * 86400)],
)  # fmt: skip
def test_durations_parse(text: str, seconds: float) -> None:
    age = parse_max_age(text)
    assert age.seconds == seconds
    # ages count in whole days: the cutoff is the start of the day the age reaches back to
    assert age.cutoff(NOW) == dt.datetime.combine(
        (NOW - dt.timedelta(seconds=seconds)).date(), dt.time()
    )


def test_an_iso_date_is_a_fixed_cutoff() -> None:
    assert parse_max_age("2026-11-01").cutoff(NOW) == dt.datetime(2026, 11, 1)
    assert parse_max_age("2026-11-01T12:30").cutoff(NOW) == dt.datetime(2026, 11, 1)  # whole days
    # an aware time is compared as naive UTC
    assert parse_max_age("2026-11-01T12:30+02:00").since == dt.datetime(2026, 11, 1, 10, 30)


@pytest.mark.parametrize("text", ["30", "d30", "thirty days", "0d", "12x", "", "2026-13-01"])
def test_a_bad_max_age_says_what_parses(text: str) -> None:
    with pytest.raises(RulesError, match=r"--max-age .*(30d|positive)"):
        parse_max_age(text)


def test_platform_fields_parse_and_bad_ones_are_refused() -> None:
    assert parse_platform_fields(["gpu.model=MI250X", "cpu.cores=64"]) == {
        "gpu.model": "MI250X",
        "cpu.cores": "64",
    }
    for bad in ("gpu.model", "=x", "gpu..model=x"):
        with pytest.raises(RulesError, match="FIELD=VALUE"):
            parse_platform_fields([bad])


def test_platform_field_reads_dotted_paths_as_text() -> None:
    info = {"gpu": {"model": "MI250X", "count": 8, "ecc": True}, "kernel": "6.1"}
    assert platform_field(info, "gpu.model") == "MI250X"
    assert platform_field(info, "gpu.count") == "8"
    assert platform_field(info, "gpu.ecc") == "true"
    assert platform_field(info, "gpu.driver") is None
    assert platform_field(info, "kernel.major") is None


def test_versions_compare_part_by_part() -> None:
    assert version_key("3.2.0") < version_key("3.10.0")
    assert version_key("3.2") < version_key("3.2.1")
    assert version_key("6.3.0-rc1") > version_key("6.3.0")  # a suffix sorts after
    with pytest.raises(RulesError, match="--library-min"):
        HistoryRules(library_min="...")


def test_unknown_library_mode_is_refused() -> None:
    with pytest.raises(RulesError, match="fingerprint, same, version, any"):
        HistoryRules(library="newest")


@pytest.mark.parametrize(
    ("rules", "source", "expected"),
    [
        (HistoryRules(), other(), None),
        (HistoryRules(), other(fingerprint="F2"), "library"),
        (HistoryRules(), other(arch="gfx942"), "arch"),
        (HistoryRules(library="any"), other(num_cu=110), "num_cu"),
        (HistoryRules(library="any"), other(backend="cpuconv"), "backend"),
        (HistoryRules(library="same"), other(fingerprint="F2"), None),
        (HistoryRules(library="same"), other(fingerprint="F2", library_commit="def"), "library"),
        (HistoryRules(library="version"), other(fingerprint="F2", library_commit="def"), None),
        (HistoryRules(library="version"), other(fingerprint="F2", library_version="3.2.0"),
         "library"),
        (HistoryRules(library="any"), other(fingerprint="F2", library_version="1.0"), None),
        (HistoryRules(library="any", library_min="3.3.0"), other(library_version="3.2.9"),
         "library_min"),
        (HistoryRules(library="any", library_min="3.3.0"), other(library_version=None),
         "library_min"),
        (HistoryRules(library="any", library_min="3.3.0"), other(library_version="3.10.0"), None),
    ],
)  # fmt: skip
def test_session_level_rules(rules: HistoryRules, source: SessionInfo, expected: str | None):
    assert excluded_by(rules, TARGET, source) == expected


def test_retired_wins_over_everything_and_the_target_counts_for_itself() -> None:
    assert excluded_by(HistoryRules(), TARGET, other(), retired=True) == "retired"
    assert excluded_by(HistoryRules(), TARGET, TARGET, retired=True) == "retired"
    # a session's own rows count whatever its library rule says
    assert excluded_by(HistoryRules(library_min="99"), TARGET, TARGET) is None


def test_max_age_and_platform_are_row_level() -> None:
    rules = HistoryRules(max_age=parse_max_age("1d"), platform={"gpu.model": "MI250X"})
    old, young = NOW - dt.timedelta(days=2), NOW - dt.timedelta(hours=1)
    assert excluded_by(rules, TARGET, TARGET, taken=old, now=NOW) == "max_age"
    assert excluded_by(rules, TARGET, other(), taken=young, now=NOW) is None
    assert excluded_by(rules, TARGET, other(), taken=NOW - dt.timedelta(days=1), now=NOW) is None
    mi250 = {"gpu": {"model": "MI250X"}}
    assert excluded_by(rules, TARGET, other(), platform=mi250) is None
    assert excluded_by(rules, TARGET, other(), platform={"gpu": {"model": "MI300X"}}) == (
        "platform gpu.model"
    )
    assert excluded_by(rules, TARGET, other(), platform={}) == "platform gpu.model"
    with pytest.raises(ValueError, match="now"):
        excluded_by(rules, TARGET, other(), taken=old)


def test_every_exclusion_has_a_hint() -> None:
    for rule in ("retired", "arch", "library", "library_min", "max_age", "platform gpu.model"):
        assert exclusion_hint(rule), rule


@given(
    library=st.sampled_from(["fingerprint", "same", "version", "any"]),
    library_min=st.none() | st.sampled_from(["3.2.0", "1"]),
    age=st.none() | st.sampled_from(["30d", "12h", "2026-11-01"]),
    platform=st.dictionaries(st.sampled_from(["gpu.model", "cpu"]), st.text(max_size=5)),
)
def test_rules_round_trip_through_json(library, library_min, age, platform) -> None:
    rules = HistoryRules(
        library=library,
        library_min=library_min,
        max_age=parse_max_age(age) if age else None,
        platform=platform,
    )
    again = HistoryRules.from_json(rules.to_json())
    assert again == rules
    assert HistoryRules.from_json(None) == HistoryRules() == HistoryRules.from_json({})
    assert HistoryRules().to_json() == {}
