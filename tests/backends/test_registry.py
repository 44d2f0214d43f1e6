from __future__ import annotations

import pytest

from tuna.backends import (
    Backend,
    UnknownBackendError,
    backend_names,
    get_backend,
    register_backend,
)
from tuna.backends.noop import NoopBackend
from tuna.errors import TunaError


def test_noop_is_built_in():
    assert "noop" in backend_names()
    backend = get_backend("noop")
    assert isinstance(backend, NoopBackend) and backend.name == "noop"
    assert get_backend("noop") is not backend  # a new instance per call


def test_an_unknown_backend_names_the_known_ones():
    with pytest.raises(UnknownBackendError, match="unknown backend 'rocm'; known backends: .*noop"):
        get_backend("rocm")
    assert issubclass(UnknownBackendError, TunaError)


def test_registered_backends_are_found(monkeypatch):
    from tuna import backends

    monkeypatch.setattr(backends, "_registered", {})
    register_backend("fake", lambda: NoopBackend(sleep_s=0.5))
    assert "fake" in backend_names()
    fake = get_backend("fake")
    assert isinstance(fake, Backend) and fake.sleep_s == 0.5
