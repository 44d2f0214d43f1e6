"""One build and one run in a scratch directory: failures are invalid Runs, not exceptions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tuna.backends.bench import BenchSpec, StatsFormat, build, run
from tuna.backends.bench.execute import CONFIG_FILE, run_command


def spec(run_cmd: str, build_cmd: str | None = None, **kw: object) -> BenchSpec:
    return BenchSpec.of(run_cmd, build=build_cmd, **kw)  # type: ignore[arg-type]


def one(
    tmp_path: Path, s: BenchSpec, config: dict[str, object]
) -> tuple[bool, str | None, dict[str, object]]:
    built = build(s, config, tmp_path / "build")
    done = run(s, config, built, tmp_path / "run")
    return done.run.valid, done.run.reason, dict(done.run.stats)


@pytest.mark.parametrize(
    ("run_cmd", "valid", "reason", "stats"),
    [
        ("echo qps: {n}", True, None, {"qps": 3}),
        ("echo '{{\"qps\": {n}}}'", True, None, {"qps": 3}),
        ("echo qps: 1; echo oops >&2; exit 3", False, "run exited with status 3: oops", {}),
        ("kill -SEGV $$", False, "run crashed (killed by SIGSEGV)", {}),
        ("echo hello", False, "run printed no stats (auto format): hello", {}),
        ("echo p95: 2", False, "run printed no qps (it printed: p95)", {"p95": 2}),
        (
            "cat $TUNA_CONFIG | tr -d ' \\n' | sed 's/^{{/{{\"qps\":1,/'",
            True,
            None,
            {"qps": 1, "n": 3},
        ),
    ],
)
def test_run_outcomes(
    tmp_path: Path, run_cmd: str, valid: bool, reason: str | None, stats: dict[str, object]
) -> None:
    s = spec(run_cmd, required_stats=("qps",), run_timeout_s=20)
    assert one(tmp_path, s, {"n": 3}) == (valid, reason, stats)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    # A child that would outlive the shell: the timeout must kill it too.
    s = spec(f"(sleep 5; touch {marker}) & sleep 30", run_timeout_s=0.5)
    start = time.monotonic()
    valid, reason, _ = one(tmp_path, s, {})
    assert (valid, reason) == (False, "run timed out after 0.5 s")
    assert time.monotonic() - start < 5
    r = run_command("sleep 6; echo late", tmp_path, timeout_s=0.2)
    assert r.timed_out and not r.ok and "late" not in r.stdout
    assert not marker.exists()


def test_failed_build_makes_every_run_invalid(tmp_path: Path) -> None:
    s = spec("./bench", "echo 'no compiler here' >&2; exit 1")
    valid, reason, _ = one(tmp_path, s, {})
    assert (valid, reason) == (False, "not run: build exited with status 1: no compiler here")


def test_build_timeout(tmp_path: Path) -> None:
    s = spec("true", "sleep 10", build_timeout_s=0.3)
    built = build(s, {}, tmp_path / "b")
    assert not built.ok and built.reason == "build timed out after 0.3 s"


def test_build_artifact_is_copied_for_each_run(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "input.txt").write_text("7\n")
    s = BenchSpec.of(
        "echo v: $(cat out.txt); echo x > out.txt",
        build="echo $(( $(cat input.txt) * {k} )) > out.txt",
        stats=StatsFormat("lines"),
        source_dir=src,
    )
    built = build(s, {"k": 6}, tmp_path / "build")
    assert built.ok and (built.directory / "out.txt").read_text() == "42\n"
    assert (built.directory / CONFIG_FILE).exists()
    for i in range(2):  # a run writing into its directory does not touch the build or the next run
        done = run(s, {"k": 6}, built, tmp_path / f"run-{i}")
        assert done.run.valid and done.run.stats == {"v": 42}


def test_local_bench_removes_run_directories_and_its_scratch(tmp_path: Path) -> None:
    from tuna.backends.bench import LocalBench
    from tuna.searchers import ParameterSpace

    space = ParameterSpace({"b": [1, 2], "r": [1, 2]}, no_rebuild=("r",))
    s = BenchSpec.of("echo qps: {r}", build="echo {b} > built")
    with LocalBench(s, space, scratch_root=tmp_path) as bench:
        runs = [bench.run({"b": b, "r": r}) for b in (1, 2) for r in (1, 2)]
        assert [r.stats["qps"] for r in runs] == [1, 2, 1, 2]
        assert len(bench.builds) == 2
        assert sorted(p.name for p in bench.scratch.iterdir()) == ["build-0", "build-1"]
    assert not bench.scratch.exists()


def test_a_template_naming_an_unknown_parameter_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    from tuna.backends.bench import LocalBench, TemplateError, run_search
    from tuna.searchers import ParameterSpace, Proposer

    space = ParameterSpace({"threads": [1, 2]}, source="p.py")
    s = BenchSpec.of("./bench {threads} {rate}", build="touch built-{threads}")
    with LocalBench(s, space, scratch_root=tmp_path) as bench:
        with pytest.raises(TemplateError, match="names 'rate', which is neither a parameter"):
            run_search(Proposer(space, base={"seconds": 1}), bench)
        assert list(bench.scratch.iterdir()) == [] and bench.executed == []


# A run that reports a value each step, then its stat: 'tuna:intermediate STEP VALUE' lines.
REPORTING = (
    "for i in 1 2 3 4 5; do echo tuna:intermediate $i $(( {n} * i )); sleep {pause}; done; "
    "echo 'loss: {n}'"
)


def test_intermediate_values_come_back_with_the_run(tmp_path: Path) -> None:
    s = spec(REPORTING, required_stats=("loss",), run_timeout_s=20)
    config = {"n": 2, "pause": 0}
    done = run(s, config, build(s, config, tmp_path / "build"), tmp_path / "run")
    assert done.run.valid and done.run.stats == {"loss": 2}  # the lines are no stats
    assert done.intermediate == {1: 2.0, 2: 4.0, 3: 6.0, 4: 8.0, 5: 10.0}
    assert not done.pruned
    # reported one by one, as printed, to a report callback that lets it go on
    seen: list[tuple[int, float]] = []
    done = run(
        s, config, build(s, config, tmp_path / "b2"), tmp_path / "r2",
        report=lambda step, value: seen.append((step, value)),  # type: ignore[func-returns-value]
    )  # fmt: skip
    assert done.run.valid and seen == sorted(done.intermediate.items())


def test_a_pruned_run_is_killed_with_its_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    # a child that would outlive the shell: pruning must kill it too
    s = spec(
        f"(sleep 3; touch {marker}) & " + REPORTING, required_stats=("loss",), run_timeout_s=60
    )
    config = {"n": 1, "pause": 2}  # 10 s if nothing stopped it

    def report(step: int, value: float) -> str | None:
        return f"pruned at step {step}: {value:g} is hopeless" if step == 2 else None

    start = time.monotonic()
    done = run(s, config, build(s, config, tmp_path / "build"), tmp_path / "run", report)
    assert (done.run.valid, done.run.reason) == (False, "pruned at step 2: 2 is hopeless")
    assert done.pruned and done.intermediate == {1: 1.0, 2: 2.0}
    assert done.result is not None and done.result.stopped == done.run.reason
    assert not done.result.timed_out
    assert time.monotonic() - start < 8  # stopped at step 2, not after step 5
    time.sleep(3.5)
    assert not marker.exists()


@pytest.mark.parametrize("streamed", [False, True])
def test_a_malformed_intermediate_line_makes_the_run_invalid(
    tmp_path: Path, streamed: bool
) -> None:
    s = spec("echo tuna:intermediate one 0.5; echo 'loss: 1'", run_timeout_s=20)
    built = build(s, {}, tmp_path / "build")
    done = run(s, {}, built, tmp_path / "run", (lambda step, value: None) if streamed else None)
    assert not done.run.valid and not done.pruned
    assert done.run.reason == (
        "intermediate line 'tuna:intermediate one 0.5': write 'tuna:intermediate STEP VALUE' "
        "with an integer step >= 0 and a finite number, e.g. 'tuna:intermediate 3 0.25'"
    )


def test_streaming_keeps_the_timeout_and_the_output(tmp_path: Path) -> None:
    lines: list[str] = []
    r = run_command(
        "echo one; echo two >&2; sleep 6; echo late", tmp_path, timeout_s=0.5,
        on_line=lambda line: lines.append(line),  # type: ignore[func-returns-value]
    )  # fmt: skip
    assert r.timed_out and not r.ok and r.stopped is None
    assert r.stdout == "one\n" and r.stderr == "two\n" and lines == ["one\n"]
    r = run_command("echo a; echo b; exit 0", tmp_path, timeout_s=20, on_line=lambda _: None)
    assert r.ok and r.stdout == "a\nb\n"
