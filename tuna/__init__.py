"""Tuna: a distributed tuning service for kernel libraries, backed by MySQL."""

__version__ = "0.1.0"

_PYTHON_API = (
    "tune",
    "study",
    "validate",
    "Pruned",
    "Trial",
    "TuneResult",
    "Validation",
)  # tuna.searches.tune


def __getattr__(name: str) -> object:
    # ``tuna.tune`` and ``tuna.study`` without importing the database layers for every
    # ``import tuna``.
    if name in _PYTHON_API:
        import tuna.searches.tune as api

        return getattr(api, name)
    raise AttributeError(f"module 'tuna' has no attribute {name!r}")
