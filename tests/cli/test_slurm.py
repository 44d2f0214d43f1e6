"""go_fish --slurm's options and the errors it gives before asking Slurm anything
(tuna/cli/slurm.py); on a real Slurm: tests/fleet/test_cluster_slurm.py."""

from __future__ import annotations

from tests.cli.test_go_fish import noop_session
from tuna.cli import main


def test_without_sbatch_on_path_go_fish_slurm_says_what_to_do(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = runner.invoke(
        main,
        ["go_fish", "--session", "1", "--compile", "--slurm"],
        env={"PATH": str(tmp_path / "empty")},
    )
    assert r.exit_code == 1, r.output
    assert r.output.strip().endswith(
        "Error: --slurm: sbatch is not on PATH; run go_fish where Slurm's client commands are "
        "(a login node), or install them (Debian: apt-get install slurm-client)"
    ), r.output


def test_slurm_settings_without_slurm_are_refused(runner, tmp_path):
    r = runner.invoke(main, ["go_fish", "--session", "1", "--compile", "--partition", "gpu"])
    assert r.exit_code == 2 and "go with --slurm" in r.output, r.output
