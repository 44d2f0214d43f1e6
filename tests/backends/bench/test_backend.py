"""The bench backend as the queue calls it: builds packed into artifacts, runs on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuna.backends import get_backend
from tuna.backends.artifact import ArtifactError, ArtifactTooLarge, pack, unpack
from tuna.backends.base import SearchWork
from tuna.backends.bench.backend import BenchBackend, spec_from_dict
from tuna.backends.bench.templates import BenchError

SPEC = {"build": "echo {b} > built.txt", "run": 'echo "t: $(cat built.txt) {a}"', "owns": "nothing"}


def work(step: str, config: dict, tmp_path: Path, **kw: object) -> SearchWork:
    return SearchWork(
        job_id=1, attempt=1, step=step, search_id=1, spec=kw.pop("spec", SPEC), config=config,
        scratch=tmp_path / "scratch", **kw,
    )  # fmt: skip


def test_the_registry_gives_the_bench_backend():
    assert isinstance(get_backend("bench"), BenchBackend)


def test_a_build_comes_back_as_an_artifact_a_run_uses(tmp_path: Path):
    backend = BenchBackend()
    built = backend.build(work("build", {"b": 7}, tmp_path))
    assert built.built and built.artifact is not None
    directory = unpack(built.artifact, tmp_path / "cache")
    assert (directory / "built.txt").read_text() == "7\n"
    ran = backend.run(work("run", {"a": 3, "b": 7}, tmp_path, build_dir=directory))
    assert ran.ok and ran.valid and dict(ran.stats) == {"t": "7 3"}
    assert (directory / "built.txt").read_text() == "7\n"  # a run works on a copy
    assert list((tmp_path / "scratch").iterdir()) == []  # per-job scratch removed


def test_a_failed_build_and_a_failed_run_are_outcomes_not_retries(tmp_path: Path):
    backend = BenchBackend()
    spec = {**SPEC, "build": "exit 4", "run": "exit 5"}
    built = backend.build(work("build", {"b": 1}, tmp_path, spec=spec))
    assert built.ok and not built.built
    assert built.failure is not None and built.failure.startswith("build exited with status 4")
    ran = backend.run(work("run", {"a": 1}, tmp_path, spec={"run": "exit 5"}))
    assert ran.ok and not ran.valid and ran.failure.startswith("run exited with status 5")
    slow = backend.run(work("run", {}, tmp_path, spec={"run": "sleep 5", "run_timeout_s": 0.2}))
    assert not slow.valid and slow.failure == "run timed out after 0.2 s"


def test_artifacts_are_reproducible_and_capped(tmp_path: Path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "x").write_text("x" * 1000)
    (d / "run.sh").write_text("#!/bin/sh\n")
    (d / "run.sh").chmod(0o755)
    first = pack(d)
    (d / "sub" / "x").touch()  # a new time stamp, the same content
    assert pack(d) == first
    out = unpack(first, tmp_path / "out")
    assert (out / "sub" / "x").read_text() == "x" * 1000
    assert (out / "run.sh").stat().st_mode & 0o111
    with pytest.raises(ArtifactTooLarge, match="over the cap"):
        pack(d, max_bytes=10)


def test_an_oversized_build_is_a_failed_build(tmp_path: Path):
    spec = {**SPEC, "build": "head -c 100000 /dev/urandom > blob", "artifact_max_bytes": 1000}
    built = BenchBackend().build(work("build", {"b": 1}, tmp_path, spec=spec))
    assert not built.built and "over the cap" in (built.failure or "")


def test_specs_are_checked():
    with pytest.raises(BenchError, match="unknown setting"):
        spec_from_dict({"run": "x", "bulid": "y"})
    with pytest.raises(BenchError, match="a run command is needed"):
        spec_from_dict({"build": "y"})
    assert BenchBackend().needs_build({"run": "x", "source_dir": "/src"})
    assert not BenchBackend().needs_build({"run": "x"})


def test_a_search_calling_a_python_function_builds_no_parameter_in():
    """The one build of a --objective-fn search is its sources: every parameter runtime-only."""
    fn = {"run": "x", "function": {"ref": "m:f", "stat": "value"}}
    assert BenchBackend().runtime_only(fn)
    assert not BenchBackend().runtime_only({"run": "x"})
    assert not BenchBackend().runtime_only({"run": "x", "function": None})


def test_an_older_python_without_tar_filters_unpacks_and_refuses_escapes(tmp_path, monkeypatch):
    import gzip
    import io
    import tarfile

    d = tmp_path / "d"
    d.mkdir()
    (d / "f").write_text("ok")
    data = pack(d)
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    assert (unpack(data, tmp_path / "out") / "f").read_text() == "ok"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ArtifactError, match="would land outside"):
        unpack(gzip.compress(raw.getvalue()), tmp_path / "evil")
    assert not (tmp_path / "escaped").exists()
