from __future__ import annotations

import json

import pytest

from tuna.backends import CompileOutcome, EvalOutcome, JobWork, SessionInfo, TuningSpace
from tuna.backends.noop import NoopBackend
from tuna.problems.conv import ConvProblem

SESSION = SessionInfo(id=1, arch="gfx-noop", num_cu=1, backend="noop")


def problem(fil: int = 3, stride: int = 1, groups: int = 1) -> ConvProblem:
    return ConvProblem(
        spatial_dim=2,
        batchsize=8,
        in_channels=16,
        out_channels=32,
        in_size=(14, 14),
        fil_size=(fil, fil),
        pad=(fil // 2, fil // 2),
        stride=(stride, stride),
        group_count=groups,
    )


def work(solver: str, p: ConvProblem, phase: str = "compile", **kw) -> JobWork:
    return JobWork(
        job_id=7,
        attempt=1,
        phase=phase,
        session=kw.pop("session", SESSION),
        config_id=3,
        problem=p,
        solver=solver,
        step="perf",
        **kw,
    )


@pytest.mark.parametrize(
    ("solver", "p", "reason"),
    [
        ("NoopDirect", problem(), None),
        ("NoopGemm1x1", problem(fil=1), None),
        ("NoopGemm1x1", problem(fil=3), "filter is not 1x1"),
        ("NoopWinograd3x3", problem(fil=3), None),
        ("NoopWinograd3x3", problem(fil=3, stride=2), "filter is not 3x3 with stride 1"),
        ("NoopTunable", problem(groups=2), "grouped convolution"),
        ("Nope", problem(), "unknown noop solver 'Nope'"),
    ],
)
def test_applicability(solver, p, reason):
    assert NoopBackend().applicability(p, solver) == reason


def test_solvers_and_tuning_space():
    b = NoopBackend()
    tunable = [s.name for s in b.solvers() if s.tunable]
    assert tunable == ["NoopTunable"]
    space = b.tuning_space(problem(), "NoopTunable")
    assert space.names == ("M", "N") and len(space) == 9 and space.features
    assert b.parse_params("NoopTunable", space.candidates[0]) == {"M": 1, "N": 8}
    assert b.tuning_space(problem(), "NoopDirect") == TuningSpace()
    assert b.tuning_space(problem(groups=2), "NoopTunable") == TuningSpace()


def test_a_strategy_round_times_its_candidates_and_only_the_final_job_chooses():
    b = NoopBackend()
    mine = ("1,8", "4,32")
    built = b.compile(work("NoopTunable", problem(), candidates=mine))
    kw = dict(kernels=built.kernels, payload=built.payload, strategy="random", budget=4)
    round_ = b.evaluate(work("NoopTunable", problem(), "eval", choose=False, **kw))
    assert round_.ok and round_.perf is None and round_.find is None
    assert [(m.params, m.strategy, m.budget) for m in round_.measurements] == [
        ("1,8", "random", 4),
        ("4,32", "random", 4),
    ]
    final = b.evaluate(work("NoopTunable", problem(), "eval", measured=round_.measurements, **kw))
    best = min(round_.measurements, key=lambda m: m.time_ms)
    assert final.measurements == ()  # measured before: reused, not timed again
    assert (final.perf.params, final.find.time_ms) == (best.params, best.time_ms)
    bad = b.compile(work("NoopTunable", problem(), candidates=("1x8",)))
    assert not bad.ok and "bad candidate" in bad.reason


def test_compile_then_evaluate_is_deterministic():
    b = NoopBackend()
    c1 = b.compile(work("NoopTunable", problem()))
    assert c1 == b.compile(work("NoopTunable", problem()))
    assert c1.ok and len(c1.kernels) == 1
    params = json.loads(c1.payload)["params"]
    assert params in b.tuning_space(problem(), "NoopTunable").candidates
    ev = b.evaluate(work("NoopTunable", problem(), "eval", kernels=c1.kernels, payload=c1.payload))
    assert ev.ok and ev.perf.params == params and ev.find.algorithm == "implicit_gemm"
    assert [(m.params, m.time_ms, m.valid) for m in ev.measurements] == [
        (params, ev.find.time_ms, True)
    ]
    assert ev == b.evaluate(
        work("NoopTunable", problem(), "eval", kernels=c1.kernels, payload=c1.payload)
    )
    other = b.evaluate(
        work("NoopTunable", problem(fil=1), "eval", kernels=c1.kernels, payload=c1.payload)
    )
    assert other.find.time_ms != ev.find.time_ms


def test_evaluate_names_the_kernel_it_compiled_as_the_solutions():
    b = NoopBackend()
    (own,) = b.compile(work("NoopTunable", problem())).kernels
    (foreign,) = b.compile(work("NoopDirect", problem())).kernels
    c = b.compile(work("NoopTunable", problem()))
    ev = b.evaluate(
        work("NoopTunable", problem(), "eval", kernels=(foreign, own), payload=c.payload)
    )
    assert ev.ok and ev.kernels == (own,) and own.name == "noop_NoopTunable"


def test_identical_kernels_for_every_problem_of_a_solver():
    b = NoopBackend()
    assert (
        b.compile(work("NoopDirect", problem())).kernels
        == b.compile(work("NoopDirect", problem(fil=1))).kernels
    )


def test_inapplicable_and_uncompiled_jobs():
    b = NoopBackend()
    assert b.compile(work("NoopGemm1x1", problem())) == CompileOutcome.inapplicable(
        "filter is not 1x1"
    )
    assert b.evaluate(work("NoopDirect", problem(), "eval")) == EvalOutcome.failed(
        "nothing compiled for this job"
    )


def test_knobs_fail_crash_and_log(tmp_path):
    log = tmp_path / "calls.log"
    assert NoopBackend(fail="boom").compile(work("NoopDirect", problem())) == (
        CompileOutcome.failed("boom")
    )
    env = SessionInfo(id=1, arch="a", num_cu=1, backend="noop", environment={"NOOP_FAIL": "env"})
    assert NoopBackend().compile(work("NoopDirect", problem(), session=env)).reason == "env"
    with pytest.raises(RuntimeError, match="crashed on job 7"):
        NoopBackend(crash=True).compile(work("NoopDirect", problem()))
    NoopBackend(log_path=log).compile(work("NoopDirect", problem()))
    assert log.read_text().split()[:3] == ["compile", "7", "1"]


def test_outcomes_need_a_reason_to_fail():
    with pytest.raises(ValueError, match="needs a reason"):
        CompileOutcome(ok=False)
    with pytest.raises(ValueError, match="both ok and not applicable"):
        EvalOutcome(not_applicable=True)
