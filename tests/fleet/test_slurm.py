"""go_fish on Slurm without a Slurm (tuna/fleet/slurm.py): the pool's settings, the task's
batch script (run here by bash, as a node would), sbatch's environment. The cluster tier
runs it on a real Slurm (tests/fleet/test_cluster_slurm.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tuna.errors import ConfigurationError
from tuna.fleet.slurm import (
    SlurmPool,
    batch_script,
    parse_partitions,
    sbatch_environment,
    task_log,
)
from tuna.fleet.slurm_client import _gres_gpus


def test_partitions_are_one_name_or_one_per_phase():
    assert parse_partitions("gpu") == {"compile": "gpu", "eval": "gpu"}
    assert parse_partitions("compile=cpu, eval=mi250") == {"compile": "cpu", "eval": "mi250"}
    assert parse_partitions("") == {}
    with pytest.raises(ConfigurationError, match="name a phase"):
        parse_partitions("gpus=x")


def test_the_pool_comes_from_the_environment_and_the_command_line_wins():
    env = {
        "TUNA_SLURM_PARTITION": "compile=cpu,eval=gpu",
        "TUNA_SLURM_ACCOUNT": "tuning",
        "TUNA_SLURM_QOS": "low",
        "TUNA_SLURM_TIME": "2:00:00",
        "TUNA_SLURM_CPUS_PER_TASK": "8",
        "TUNA_SLURM_SBATCH_ARGS": "--constraint=mi250 '--comment=a b'",
    }
    pool = SlurmPool.from_env(env, partitions={"eval": "mi300"}, qos="high", sbatch_args=("-N1",))
    assert pool.partition("compile") == "cpu" and pool.partition("eval") == "mi300"
    assert pool.cpus_per_task == 8
    assert pool.sbatch_options() == [
        "--account=tuning",
        "--qos=high",
        "--time=2:00:00",
        "--constraint=mi250",
        "--comment=a b",
        "-N1",
    ]
    assert SlurmPool.from_env({}).sbatch_options() == []
    with pytest.raises(ConfigurationError, match="TUNA_SLURM_CPUS_PER_TASK='0'"):
        SlurmPool.from_env({"TUNA_SLURM_CPUS_PER_TASK": "0"})


def test_gpus_are_counted_from_gres():
    assert _gres_gpus("gpu:2") == 2
    assert _gres_gpus("gpu:a100:4(S:0-1)") == 4
    assert _gres_gpus("(null)") == 0 and _gres_gpus("mps:100") == 0


def test_sbatch_gets_no_database_url_and_no_allocation_of_go_fish():
    env = sbatch_environment(
        {
            "PATH": "/usr/bin",
            "TUNA_DB_URL": "mysql://u:secret@h/db",
            "TUNA_WORKER_DB_URL": "mysql://u:secret@h/db",
            "TUNA_DB_URL_FILE": "/x",
            "SLURM_JOB_ID": "7",
            "SBATCH_PARTITION": "x",
            "SLURM_CONF": "/etc/slurm/slurm.conf",
            "TUNA_LOG_DIR": "/logs",
        }
    )
    assert env == {
        "PATH": "/usr/bin",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "TUNA_LOG_DIR": "/logs",
    }


def test_the_batch_script_runs_the_worker_with_the_url_file_and_logs_per_node(tmp_path):
    url_file = tmp_path / "run" / "db_url"
    url_file.parent.mkdir()
    url_file.write_text("mysql+pymysql://tuna:secret@10.77.0.1/tuna\n")
    probe = (
        "import os; print('file', os.environ['TUNA_DB_URL_FILE']);"
        "print('name', os.environ['TUNA_WORKER_NAME']);"
        "print('cache', os.environ['CACHE']);"
        "print('quoted', os.environ['ODD']);"
        "print('locks', os.environ.get('TUNA_LOCK_DIR'));"
        "print('url in env', 'TUNA_DB_URL' in os.environ)"
    )
    script = batch_script(
        argv=[sys.executable, "-c", probe],
        db_url_file=url_file,
        log=task_log(tmp_path / "logs", "compile", "gfx", 7, "run1"),
        env={"CACHE": "$scratch/cache", "ODD": 'a "b" $HOME `x`'},
        own_lock_dir=True,
    )
    assert "secret" not in script
    env = {
        "PATH": os.environ["PATH"],
        "SLURM_ARRAY_JOB_ID": "41",
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURM_JOB_ID": "43",
        "TMPDIR": str(tmp_path),
    }
    done = subprocess.run(["bash", "-s"], input=script, env=env, text=True, timeout=60)
    assert done.returncode == 0
    node = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    log = (tmp_path / "logs/compile/gfx" / node / "session-7/run1/slurm-41_2.log").read_text()
    assert f"file {url_file}" in log and f"name {node}/slurm-41_2" in log, log
    assert "cache /" in log and "/tuna-slurm-41_2." in log and log.count("/cache") == 1, log
    assert 'quoted a "b" $HOME `x`' in log, log
    assert "/locks" in log and "url in env False" in log and "=== worker exited 0 ===" in log
    assert not list(tmp_path.glob("tuna-slurm-*")), "the task's scratch folder stays behind"
