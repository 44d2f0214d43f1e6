"""What fin runs with: per-worker paths and GPU, the session's settings, devices, no secrets."""

from __future__ import annotations

from pathlib import Path

from tuna.backends import get_backend
from tuna.backends.base import SessionInfo
from tuna.backends.miopen.environment import container_args, fin_environment, worker_environment


def session(**env: str) -> SessionInfo:
    return SessionInfo(id=1, arch="gfx90a", num_cu=104, backend="miopen", environment=env)


def test_evaluate_containers_get_the_gpu_devices_never_privileged():
    args = container_args("eval", 2)
    assert args == [
        "--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
        "--security-opt", "seccomp=unconfined",
    ]  # fmt: skip
    assert container_args("compile", None) == []  # fin on MIOpen's HIPNOGPU build
    assert not any("privileged" in a for a in args)
    assert get_backend("miopen").container_args("eval", 0) == args


def test_each_worker_gets_private_paths_and_an_evaluate_worker_its_gpu():
    s = session(MIOPEN_FIND_MODE="1", MIOPEN_FIND_ENFORCE="3", FIN_PATH="/opt/rocm/bin/fin")
    env = worker_environment(s, "eval", 3, "/tmp/tuna/w3/")
    assert env == {
        "MIOPEN_USER_DB_PATH": "/tmp/tuna/w3/config/miopen",
        "MIOPEN_CUSTOM_CACHE_DIR": "/tmp/tuna/w3/cache",
        "HIP_VISIBLE_DEVICES": "3",
        "MIOPEN_FIND_MODE": "1",
        "MIOPEN_FIND_ENFORCE": "3",
    }
    other = worker_environment(s, "eval", 4, "/tmp/tuna/w4")
    assert other["MIOPEN_USER_DB_PATH"] != env["MIOPEN_USER_DB_PATH"]
    assert "HIP_VISIBLE_DEVICES" not in worker_environment(session(), "compile", None, "/s")
    assert "HIP_VISIBLE_DEVICES" not in worker_environment(session(), "eval", None, "/s")
    assert get_backend("miopen").worker_environment(s, "eval", 3, "/tmp/tuna/w3/") == env


def test_fin_environment(tmp_path: Path):
    base = {
        "PATH": "/usr/bin",
        "TUNA_DB_URL": "mysql+pymysql://tuna:secret@head/tuna",
        "TUNA_DB_USER_PASSWORD": "secret",
        "MIOPEN_LOG_LEVEL": "6",
        "HIP_VISIBLE_DEVICES": "1",
    }
    env = fin_environment(
        base,
        {"MIOPEN_FIND_ENFORCE": "4", "MIOPEN_USER_DB_PATH": "/shared", "MIOPEN_LOG_LEVEL": "5"},
        tmp_path,
    )
    assert not any(k.startswith("TUNA_DB_") for k in env)  # fin copies its env into its output
    assert env["PATH"] == "/usr/bin" and env["HIP_VISIBLE_DEVICES"] == "1"
    assert env["MIOPEN_FIND_ENFORCE"] == "4"
    assert env["MIOPEN_LOG_LEVEL"] == "5"  # the session's setting wins over the worker's
    assert env["MIOPEN_SQLITE_KERN_CACHE"] == "ON"
    assert env["MIOPEN_DEBUG_IMPLICIT_GEMM_FIND_ALL_SOLUTIONS"] == "1"
    # no worker path: private ones under the job's scratch dir, never the session's shared one
    assert env["MIOPEN_USER_DB_PATH"] == str(tmp_path / "config" / "miopen")
    assert env["MIOPEN_CUSTOM_CACHE_DIR"] == str(tmp_path / "cache")
    assert (tmp_path / "cache").is_dir()
    worker = fin_environment({**base, "MIOPEN_USER_DB_PATH": "/w1/db"}, {}, tmp_path)
    assert worker["MIOPEN_USER_DB_PATH"] == "/w1/db"
    assert worker["MIOPEN_LOG_LEVEL"] == "6"
