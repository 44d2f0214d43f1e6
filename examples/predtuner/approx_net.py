"""Predictive tuning (PredTuner's way): speed against accuracy, one knob per layer.

A small numpy network (four 256-wide dense layers and a 10-way classifier) whose every
hidden layer has an approximation knob: level 0 is the exact weight matrix, levels 1-5
replace it by a truncated SVD of rank 96, 64, 48, 32 and 16 (two thin matrix products
instead of one square one: faster, less accurate). Tuned with tuna.tune for two
objectives, ``mflop`` down (the cost of a forward pass over the input set: PredTuner
rates speed by such a cost model, which, unlike a timing on a shared machine, is the same
at every run) and ``accuracy`` up (% of a labelled input set), under a QoS threshold
relative to the exact network, PredTuner's ``qos_tuner_threshold``: ``accuracy >=
baseline.accuracy - 1``. Each run also times its forward pass (``time_ms``, the best of
a few), stored beside them. The baseline, every layer at level 0, is measured first.

The strategy is ``predictive`` (``--strategy``): after a seed set of 16 random
configurations, a model per stat predicts every other configuration's cost and accuracy,
and only those predicted on or near the front (within ``--margin`` of it) and within the
threshold are measured, round after round, until none is left. ``--strategy random``
measures ``--budget`` random configurations instead, ``exhaustive`` all 1,296.

Then PredTuner's validation stage, ``tuna.validate``: every configuration of the front is
measured again on a second input set (the objective reads ``trial.inputs``: ``"tune"``,
then ``"test"``), and kept where it still meets the threshold there against the exact
network on the same inputs (its ``qos_keep_threshold``). The figure (``--png``) shows
every run, the front, the baseline, the threshold and the validated accuracies;
``--validation-png`` the model's predictions against both measurements.

    python examples/predtuner/approx_net.py --png examples/predtuner/front.png \
        --validation-png examples/predtuner/validation.png

``tuna search show -s SESSION predtuner`` and the dashboard show the stored study; run the
script again with the same ``--name`` and it resumes, measuring nothing twice.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

import tuna

LAYERS = 4
WIDTH = 256
CLASSES = 10
RANKS = (WIDTH, 96, 64, 48, 32, 16)  # knob level -> rank of the layer's weights
TUNING, VALIDATION = 1, 2  # the seeds of the two input sets
DECAY = 10.0  # singular value i of a layer is 2.5 exp(-i / DECAY)


@cache
def weights() -> tuple[list[np.ndarray], np.ndarray]:
    """The hidden layers' square weights (singular values decaying, as trained layers'
    do, so a low rank keeps most of a layer) and the classifier's."""
    rng = np.random.default_rng(0)
    hidden = []
    for _ in range(LAYERS):
        u, _r = np.linalg.qr(rng.standard_normal((WIDTH, WIDTH)))
        v, _r = np.linalg.qr(rng.standard_normal((WIDTH, WIDTH)))
        s = 2.5 * np.exp(-np.arange(WIDTH) / DECAY)
        hidden.append(((u * s) @ v.T).astype(np.float32))
    return hidden, (rng.standard_normal((WIDTH, CLASSES)) / np.sqrt(WIDTH)).astype(np.float32)


@cache
def factors(layer: int, level: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The rank-``RANKS[level]`` factors of a layer's weights (None: level 0, exact)."""
    if level == 0:
        return None
    u, s, vt = np.linalg.svd(weights()[0][layer])
    r = RANKS[level]
    return (u[:, :r] * s[:r]).astype(np.float32), vt[:r].astype(np.float32)


def forward(x: np.ndarray, levels: Sequence[int]) -> np.ndarray:
    hidden, out = weights()
    for layer, level in enumerate(levels):
        f = factors(layer, level)
        x = x @ hidden[layer] if f is None else (x @ f[0]) @ f[1]
        x = np.maximum(x, 0.0)
    return x @ out


@cache
def inputs(seed: int, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """An input set and its labels: the exact network's answers, one in ten noisy (so
    the exact network scores about 90%, and an approximation can lose more)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, WIDTH)).astype(np.float32)
    logits = forward(x, [0] * LAYERS)
    labels = logits.argmax(axis=1)
    noisy = rng.random(samples) < 0.1
    labels[noisy] = rng.integers(0, CLASSES, int(noisy.sum()))
    return x, labels


def measure(levels: Sequence[int], seed: int, samples: int, repeats: int) -> dict[str, float]:
    """``accuracy`` on the set, the pass's cost in ``mflop`` and ``time_ms``, the best of
    ``repeats`` timed passes."""
    x, labels = inputs(seed, samples)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        logits = forward(x, levels)
        best = min(best, time.perf_counter() - start)
    accuracy = float((logits.argmax(axis=1) == labels).mean() * 100)
    flops = sum(2 * samples * WIDTH * (WIDTH if lv == 0 else 2 * RANKS[lv]) for lv in levels)
    return {"time_ms": round(best * 1e3, 3), "accuracy": round(accuracy, 2),
            "mflop": round(flops / 1e6, 1)}  # fmt: skip


def levels_of(params: dict[str, Any]) -> list[int]:
    return [int(params[f"layer{i}"]) for i in range(LAYERS)]


STRATEGIES = ("predictive", "random", "exhaustive")


def strategy_of(name: str, seed: int, budget: int | None, margin: float) -> str | None:
    """The searcher expression ``tuna.tune`` takes for ``--strategy`` (None: every point)."""
    if name == "predictive":
        return f"Strategy('predictive', space, seed={seed}, margin={margin:g})"
    if name == "random":
        return f"Random(space, {budget or 80}, seed={seed})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strategy", choices=STRATEGIES, default="predictive", help="how to search")
    p.add_argument("--margin", type=float, default=0.02, help="predictive: near the front")
    p.add_argument("--budget", type=int, help="configurations measured at most (random: 80)")
    p.add_argument("--threshold", type=float, default=1.0, help="accuracy points lost at most")
    p.add_argument("--samples", type=int, default=2048, help="inputs per set")
    p.add_argument("--repeats", type=int, default=3, help="forward passes timed per run")
    p.add_argument("--seed", type=int, default=1, help="the strategy's seed")
    p.add_argument("--storage", help="database URL (default: Tuna's, SQLite under TUNA_DATA_DIR)")
    p.add_argument("--name", default="predtuner", help="the study's name (resumes by it)")
    p.add_argument("--png", help="draw the front here")
    p.add_argument("--validation-png", help="draw predicted against measured here")
    a = p.parse_args(argv)

    space = {f"layer{i}": list(range(len(RANKS))) for i in range(LAYERS)}
    exact = {name: 0 for name in space}

    def objective(params: dict[str, Any], trial: tuna.Trial) -> dict[str, float]:
        """One configuration on the input set the trial names: the tuning set while
        tuning, the test set when the front is validated."""
        seed = TUNING if trial.inputs == "tune" else VALIDATION
        return measure(levels_of(params), seed, a.samples, a.repeats)

    result = tuna.tune(
        objective,
        space,
        directions={"mflop": "min", "accuracy": "max"},
        constraints=[f"accuracy >= baseline.accuracy - {a.threshold:g}"],
        baseline=exact,
        strategy=strategy_of(a.strategy, a.seed, a.budget, a.margin),
        budget=a.budget if a.strategy != "random" else None,
        storage=a.storage,
        name=a.name,
    )
    assert result.baseline is not None  # tune() measured it first
    base = result.baseline.stats
    print(
        f"search {result.search} {result.name!r}: {len(result.runs)} runs; baseline "
        f"mflop={base['mflop']:g} accuracy={base['accuracy']:g} time_ms={base['time_ms']:g}"
    )
    # PredTuner's validation: the front measured again on inputs the tuning never saw.
    v = tuna.validate(result, objective, storage=a.storage)
    assert v.baseline is not None and v.baseline.measured is not None
    keep = float(v.baseline.measured["accuracy"]) - a.threshold
    print(f"front: {len(result.pareto)} runs; validation keeps accuracy >= {keep:g}")
    print(f"{'levels':>6} {'mflop':>7} {'speedup':>7} {'time_ms':>8} {'accuracy':>8} "
          f"{'predicted':>9} {'validated':>9}  kept")  # fmt: skip
    by_config = {tuple(levels_of(r.config)): r for r in v.runs}
    validated = []
    for run in result.pareto:
        levels = levels_of(dict(run.config))
        again = by_config[tuple(levels)]
        validated.append(float((again.measured or {}).get("accuracy", float("nan"))))
        speedup = float(base["mflop"]) / float(run.stats["mflop"])
        guess = (again.predicted or {}).get("accuracy")
        print(
            f"{''.join(map(str, levels)):>6} {run.stats['mflop']:>7g} {speedup:>6.2f}x "
            f"{run.stats['time_ms']:>8g} {run.stats['accuracy']:>8g} "
            f"{'-' if guess is None else f'{guess:.2f}':>9} {validated[-1]:>9g}  "
            f"{'yes' if again.kept else 'no'}"
        )
    if a.png:
        draw(result, validated, keep, a.threshold, a.png)
        print(f"figure: {a.png}")
    if a.validation_png:
        from tuna.report.validation import draw_validation

        draw_validation(v, a.validation_png)
        print(f"figure: {a.validation_png}")
    return 0


def draw(
    result: tuna.TuneResult, validated: list[float], keep: float, threshold: float, path: str
) -> None:
    """Left, every run (those past the threshold crossed out), the front, the baseline and
    the threshold; right, the same near the threshold, with the front's accuracies on the
    validation inputs and the validation threshold (``keep``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert result.baseline is not None
    base = result.baseline.stats
    limit = float(base["accuracy"]) - threshold
    ok = [r for r in result.runs if r.valid and r.stats["accuracy"] >= limit]
    out = [r for r in result.runs if r.valid and r.stats["accuracy"] < limit]
    front_x = [r.stats["mflop"] for r in result.pareto]
    front_y = [r.stats["accuracy"] for r in result.pareto]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    for ax, zoom in zip(axes, (False, True), strict=True):
        ax.scatter([r.stats["mflop"] for r in ok], [r.stats["accuracy"] for r in ok],
                   s=14, color="0.6", label="runs within the threshold")  # fmt: skip
        ax.scatter([r.stats["mflop"] for r in out], [r.stats["accuracy"] for r in out], s=14,
                   marker="x", color="#d62728", alpha=0.5,
                   label="runs past it (ineligible)")  # fmt: skip
        ax.step(front_x, front_y, where="post", color="#1f77b4", marker="o",
                label="Pareto front (tuning inputs)")  # fmt: skip
        ax.scatter([base["mflop"]], [base["accuracy"]], marker="*", s=160, color="black",
                   label="baseline (exact)", zorder=3)  # fmt: skip
        ax.axhline(limit, color="#d62728", linestyle="--", linewidth=1,
                   label=f"threshold: baseline - {threshold:g}")  # fmt: skip
        ax.set_xlabel("mflop (one forward pass over the input set; lower is faster)")
        ax.set_ylabel("accuracy (%; higher is better)")
        if zoom:
            ax.scatter(front_x, validated, facecolors="none", edgecolors="#2ca02c", s=40,
                       label="front on the validation inputs")  # fmt: skip
            ax.axhline(keep, color="#2ca02c", linestyle=":", linewidth=1,
                       label="validation threshold")  # fmt: skip
            ys = [*front_y, *validated, limit, keep]
            ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
            for x, y, r in zip(front_x, front_y, result.pareto, strict=True):
                levels = "".join(str(r.config[f"layer{i}"]) for i in range(LAYERS))
                ax.annotate(levels, (x, y), textcoords="offset points", xytext=(4, -10),
                            fontsize=7)  # fmt: skip
            ax.set_title("near the threshold; labels: each layer's level")
            ax.legend(fontsize=7, loc="upper left")
        else:
            ax.set_title(f"{result.name}: {len(result.runs)} configurations, "
                         f"{len(result.pareto)} on the front")  # fmt: skip
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
