"""Tuna: a distributed tuning service for kernel libraries, backed by MySQL."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # ``tuna.tune`` without importing the database layers for every ``import tuna``.
    if name == "tune":
        from tuna.searches.tune import tune

        return tune
    raise AttributeError(f"module 'tuna' has no attribute {name!r}")
