"""A cost model: gradient-boosted trees that predict a candidate's time on a problem.

It learns ``log(time)`` from a candidate's parameters and the problem's features (numbers
the caller names, e.g. a convolution's channels, sizes and strides: :mod:`tuna.searchers` does
not know what a problem is), and from derived features the backend may add. Times of
different problems differ by orders of magnitude, so each problem's times are taken
relative to its best (:func:`capped_log_times`) before training: the model learns which
parameters are fast *for a problem like this one*, which is what ranking needs, and what
carries over from one problem to another (transfer).

Why LightGBM: gradient-boosted trees handle the integer, gapped parameter grids and their
interactions with no scaling; LightGBM's wheel is small (no compiler, no GPU runtime, unlike
XGBoost's on Linux), trains a few thousand rows in well under a second on one thread, and
is deterministic with ``deterministic=True``. scikit-learn's HistGradientBoosting would do
as well but brings scikit-learn, joblib and threadpoolctl for one class.

The library is LightGBM (``pip install 'tuna[model]'``), imported only when a model is
trained: without it, :class:`ModelLibraryMissing` names the extra to install.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.searchers.errors import SearchError
from tuna.searchers.run import Primitive

#: One measurement of history: (the problem's features, the candidate's parameters, time).
HistoryEntry = tuple[Mapping[str, float], Mapping[str, Primitive], float]
#: Features of a candidate on a problem that the trees cannot form themselves (ratios and
#: products of the two, e.g. the share of a register tile that falls off the matrix's
#: edge): the backend's own knowledge, given by the caller.
Derive = Callable[[Mapping[str, float], Mapping[str, Primitive]], Mapping[str, float]]

EXTRA = "model"


class ModelLibraryMissing(SearchError):
    """Raised when the cost model's library (LightGBM) is not installed."""


def lightgbm() -> Any:
    """The ``lightgbm`` module, or :class:`ModelLibraryMissing` naming the extra."""
    try:
        import lightgbm as lgb
    except ImportError as e:
        raise ModelLibraryMissing(
            f"the model and predictive strategies need LightGBM, which is not installed ({e}); "
            f"install Tuna's '{EXTRA}' extra: pip install 'tuna[{EXTRA}]' (or pick another "
            "strategy)"
        ) from e
    return lgb


@dataclass(frozen=True)
class Settings:
    """The trees' settings: small, deterministic, one thread (workers share the machine)."""

    trees: int = 200
    learning_rate: float = 0.08
    leaves: int = 31
    min_leaf: int = 3
    seed: int = 0

    def params(self) -> dict[str, Any]:
        return {
            "objective": "regression",
            "learning_rate": self.learning_rate,
            "num_leaves": self.leaves,
            "min_data_in_leaf": self.min_leaf,
            "min_sum_hessian_in_leaf": 0.0,
            "lambda_l2": 1.0,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": 1,
            "seed": self.seed,
            "verbose": -1,
        }


class Encoder:
    """Rows of numbers from (problem features, parameters), in a fixed column order."""

    def __init__(
        self,
        feature_names: Sequence[str],
        param_names: Sequence[str],
        derive: Derive | None = None,
        derived_names: Sequence[str] = (),
    ) -> None:
        self.feature_names = tuple(feature_names)
        self.param_names = tuple(param_names)
        self.derive = derive
        self.derived_names = tuple(derived_names)
        self._codes: dict[str, dict[str, int]] = {}

    @property
    def columns(self) -> list[str]:
        return [
            *(f"problem.{n}" for n in self.feature_names),
            *self.param_names,
            *(f"derived.{n}" for n in self.derived_names),
        ]

    def row(self, features: Mapping[str, float], params: Mapping[str, Primitive]) -> list[float]:
        out = [float(features[n]) for n in self.feature_names]
        for n in self.param_names:
            v = params[n]
            if isinstance(v, bool | int | float):
                out.append(float(v))
            else:  # a string value: a stable code per parameter (trees split on it as numbers)
                codes = self._codes.setdefault(n, {})
                out.append(float(codes.setdefault(str(v), len(codes))))
        if self.derive is not None:
            derived = self.derive(features, params)
            out += [float(derived[n]) for n in self.derived_names]
        return out


class Trees:
    """One fitted regressor of LightGBM over an :class:`Encoder`'s rows."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._booster: Any = None
        self._constant = 0.0

    def fit(
        self,
        rows: Sequence[Sequence[float]],
        targets: Sequence[float],
        weights: Sequence[float] | None = None,
        trees: int | None = None,
    ) -> Trees:
        lgb = lightgbm()
        import numpy as np

        if len(rows) < 2:  # nothing to split: predict the mean
            self._booster, self._constant = None, (sum(targets) / len(targets) if targets else 0)
            return self
        data = lgb.Dataset(
            np.asarray(rows, dtype=np.float64),
            label=np.asarray(targets, dtype=np.float64),
            weight=None if weights is None else np.asarray(weights, dtype=np.float64),
            params={"min_data_in_bin": 1, "verbose": -1},
            free_raw_data=True,
        )
        self._booster = lgb.train(
            self.settings.params(), data, num_boost_round=trees or self.settings.trees
        )
        return self

    def predict(self, rows: Sequence[Sequence[float]]) -> list[float]:
        if not rows:
            return []
        if self._booster is None:
            return [self._constant] * len(rows)
        import numpy as np

        return [float(v) for v in self._booster.predict(np.asarray(rows, dtype=np.float64))]


def split_gains(trees: Trees, columns: Sequence[str]) -> dict[str, float]:
    """Each column's total split gain in the fitted trees (0 where they never split on it;
    all 0 for trees that made no split): the error reduction its splits gave."""
    if trees._booster is None:
        return {c: 0.0 for c in columns}
    gains = [float(g) for g in trees._booster.feature_importance(importance_type="gain")]
    return dict(zip(columns, gains, strict=True))


def shares(gains: Mapping[str, float]) -> dict[str, float]:
    """Gains as shares of their total (0 to 1; all 0 when the total is 0)."""
    total = sum(gains.values())
    return {c: (g / total if total > 0 else 0.0) for c, g in gains.items()}


def importance(trees: Trees, columns: Sequence[str]) -> dict[str, float]:
    """Each column's share of the fitted trees' total split gain (0 to 1; all 0 when the
    trees made no split): which parameters the model found to matter."""
    return shares(split_gains(trees, columns))


def centred_log_times(times: Sequence[float]) -> list[float]:
    """``log(t) - mean(log(t))``: one problem's times on a scale other problems share."""
    logs = [math.log(t) for t in times]
    mean = sum(logs) / len(logs)
    return [v - mean for v in logs]


def capped_log_times(times: Sequence[float], cap: float | None) -> list[float]:
    """``log(t / best)``, at most ``log(cap)``: how much slower than the problem's best each
    candidate is, with everything ``cap`` times slower or worse alike. A search only needs
    the top of the ranking right, so the trees should not spend their splits ordering
    candidates that are hopeless anyway. None: :func:`centred_log_times`."""
    if cap is None:
        return centred_log_times(times)
    best = min(times)
    limit = math.log(cap)
    return [min(math.log(t / best), limit) for t in times]


def problem_key(features: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, float(v)) for k, v in features.items()))
