from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tuna.catalog import records
from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import parse_lines, read_lines
from tuna.db.models import BnConfig, ConfigTag, ConvConfig, Tensor
from tuna.errors import ImportRefusedError
from tuna.problems.keys import find_db_key

LINE = "./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F {f} -t 1"  # noqa: E501


def count(db, model) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(model))


def lines_of(*texts: str) -> list[tuple[int, str]]:
    return read_lines("\n".join(texts))


def test_resnet50_imports_and_reimport_changes_nothing(db, driver_dir):
    lines = read_lines((driver_dir / "resnet50.txt").read_text())
    first = import_configs(db, lines, tag="resnet50")
    assert first.lines == len(lines) == 60
    assert first.bad == []
    assert first.skipped == {"pool": 1}
    assert first.inserted == first.configs == count(db, ConvConfig)
    assert first.tagged == first.configs
    again = import_configs(db, lines, tag="resnet50")
    assert (again.inserted, again.already_present, again.tagged) == (0, first.configs, 0)
    assert count(db, ConvConfig) == first.configs


def test_every_shared_driver_file_imports(db, driver_dir):
    total = 0
    for path in sorted(driver_dir.glob("*.txt")):
        report = import_configs(db, read_lines(path.read_text()), tag=path.stem, source=path.name)
        assert report.bad == [], path.name
        assert report.configs > 0, path.name
        total += report.inserted
    assert count(db, ConvConfig) + count(db, BnConfig) == total
    assert count(db, BnConfig) > 0


def test_a_bad_line_imports_nothing_and_every_bad_line_is_named(db):
    text = [
        LINE.format(f=1),
        LINE.format(f=2),
        LINE.format(f=1) + " --bogus 3",
        LINE.format(f=4),
        LINE.format(f=1).replace("-n 128", "-n abc"),
    ]
    with pytest.raises(ImportRefusedError) as e:
        import_configs(db, lines_of(*text), tag="t", source="net.txt")
    bad = e.value.bad
    assert [b.line_no for b in bad] == [3, 5]
    assert "--bogus" in str(bad[0]) and "abc" in str(bad[1])
    assert "net.txt" in str(e.value) and "--skip-bad" in str(e.value)
    assert count(db, ConvConfig) == 0
    assert count(db, Tensor) == 0


def test_skip_bad_imports_the_good_lines(db):
    text = [LINE.format(f=1), "./bin/MIOpenDriver conv -n 2 -F 9", LINE.format(f=2)]
    report = import_configs(db, lines_of(*text), tag="t", skip_bad=True)
    assert report.inserted == 2
    assert [b.line_no for b in report.bad] == [2]


def test_direction_zero_expands_to_three_configs_with_the_original_line(db):
    line = LINE.format(f=0)
    report = import_configs(db, lines_of(line), tag="t")
    assert report.inserted == 3
    with db.session() as s:
        rows = s.scalars(select(ConvConfig).order_by(ConvConfig.id)).all()
    assert sorted(r.direction for r in rows) == ["B", "F", "W"]
    assert {r.driver for r in rows} == {line}


def test_batches_and_command_overrides(db):
    report = import_configs(
        db, lines_of(LINE.format(f=1)), tag="t", batches=[32, 64], command="convfp16"
    )
    assert report.inserted == 2
    with db.session() as s:
        keys = sorted(s.scalars(select(ConvConfig.fdb_key)))
    assert keys == [
        "1024-14-14-1x1-256-14-14-32-0x0-1x1-1x1-0-NCHW-FP16-F",
        "1024-14-14-1x1-256-14-14-64-0x0-1x1-1x1-0-NCHW-FP16-F",
    ]


def test_tag_only_tags_known_configs_and_inserts_nothing(db):
    import_configs(db, lines_of(LINE.format(f=1)), tag="a")
    report = import_configs(
        db, lines_of(LINE.format(f=1), LINE.format(f=2)), tag="b", tag_only=True
    )
    assert (report.inserted, report.already_present, report.not_in_catalogue) == (0, 1, 1)
    assert report.tagged == 1
    assert count(db, ConvConfig) == 1


def test_tags_accumulate_and_recurrent_is_kept(db):
    import_configs(db, lines_of(LINE.format(f=1)), tag="a")
    report = import_configs(db, lines_of(LINE.format(f=1)), tag="b", recurrent=True)
    assert (report.inserted, report.tagged) == (0, 1)
    with db.session() as s:
        tags = {(t.tag, t.recurrent) for t in s.scalars(select(ConfigTag))}
    assert tags == {("a", False), ("b", True)}


def test_stored_rows_rebuild_the_problem(db, driver_dir):
    lines = read_lines((driver_dir / "resnext101_pytorch.txt").read_text())
    entries = parse_lines(lines).entries
    import_configs(db, lines, tag="x")
    with db.session() as s:
        for e in entries:
            cfg = s.scalars(select(ConvConfig).where(ConvConfig.fdb_key == e.key)).one()
            x = s.get(Tensor, cfg.input_tensor)
            w = s.get(Tensor, cfg.weight_tensor)
            problem = records.conv_problem(cfg, x, w)
            assert problem == e.problem
            assert find_db_key(problem) == cfg.fdb_key


def test_duplicate_lines_in_one_file_count_once(db):
    report = import_configs(db, lines_of(LINE.format(f=1), LINE.format(f=1)), tag="t")
    assert (report.lines, report.configs, report.inserted) == (2, 1, 1)


def test_configs_present_beyond_the_probe_are_recognised_not_duplicated(db, monkeypatch):
    import tuna.catalog.importer as importer

    monkeypatch.setattr(importer, "PROBE", 1)  # probe only the first key: it is new
    import_configs(db, lines_of(LINE.format(f=4)), tag="a")
    report = import_configs(db, lines_of(LINE.format(f=1), LINE.format(f=4)), tag="b")
    assert (report.inserted, report.already_present, report.tagged) == (1, 1, 2)
    assert count(db, ConvConfig) == 2
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(ConfigTag)) == 3
