"""Every MITuna flag and sub-command form either works in Tuna or names what to type instead.

The flags are those of MITuna's commands as ``reference/mituna.md`` §4 lists them (copied
here: tests read only the repo). A flag that works is taken by the command (``--help`` after
it prints the help); one Tuna does not take is refused with a pointer to Tuna's way
(tuna/cli/mituna.py), never with click's "Did you mean" guess.
"""

from __future__ import annotations

import pytest

from tuna.cli import main

# (command, MITuna's flag and a value where it takes one)
FLAGS: list[tuple[str, tuple[str, ...]]] = [
    *(
        ("go_fish", f)
        for f in [
            ("-a", "gfx90a"),
            ("--arch", "gfx90a"),
            ("-n", "104"),
            ("--num_cu", "104"),
            ("-C", "convolution"),
            ("--config_type", "convolution"),
            ("--session_id", "3"),
            ("-m", "1,2"),
            ("--machines", "1,2"),
            ("--remote_machine",),
            ("-l", "L"),
            ("--label", "L"),
            ("-r",),
            ("--restart",),
            ("--docker_name", "img"),
            ("--shutdown_workers",),
            ("--enqueue_only",),
            ("--find_mode", "1"),
            ("--ticket", "T"),
            ("--solver_id", "3"),
            ("--dynamic_solvers_only",),
            ("-B", "MIOPEN_DEBUG_CONV_GEMM"),
            ("--blacklist", "MIOPEN_DEBUG_CONV_GEMM"),
            ("-i", "4"),
            ("--reset_interval", "4"),
            ("--gpu_lim", "2"),
            ("--add_tables",),
            ("--init_session",),
            ("--fin_steps", "miopen_perf_compile"),
            ("--list_solvers",),
            ("--update_solvers",),
            ("--update_applicability",),
            ("--status",),
            ("-e", "ls"),
            ("--exec", "ls"),
            ("--yaml", "steps.yaml"),
            ("--compile",),
            ("--run_perf",),
            ("--run_find",),
            ("--bin_cache",),
            ("-f", "1"),
            ("--find_enforce", "1"),
            ("-d", "ls"),
            ("--docker_exec", "ls"),
            ("--local_machine",),
            ("--arch_num_cu_list", "gfx90a-104"),
        ]  # fmt: skip
    ),
    *(
        ("import_configs", f)
        for f in [
            ("-t", "T"),
            ("--tag", "T"),
            ("-T",),
            ("--tag_only",),
            ("-b", "32"),
            ("--batches", "32"),
            ("--batchsize", "32"),
            ("-c", "conv"),
            ("--command", "conv"),
            ("-d", "conv -n 1"),
            ("--driver", "conv -n 1"),
            ("-f", "f.txt"),
            ("--file_name", "f.txt"),
            ("--mark_recurrent",),
            ("-F", "pytorch"),
            ("--framework", "pytorch"),
            ("--fw_version", "1"),
            ("-m", "resnet50"),
            ("--model", "resnet50"),
            ("--md_version", "1"),
            ("-g", "1"),
            ("--gpu_count", "1"),
            ("--add_framework",),
            ("--add_model",),
            ("--print_models",),
            ("--add_benchmark",),
        ]  # fmt: skip
    ),
    *(
        (cmd, f)
        for cmd in ("load_job", "load_jobs")
        for f in [
            ("-t", "T"),
            ("--tag", "T"),
            ("--all_configs",),
            ("-A", "GEMM"),
            ("--algo", "GEMM"),
            ("-s", "ConvA,ConvB"),
            ("--solvers", "ConvA"),
            ("-d",),
            ("--only_dynamic",),
            ("--tunable",),
            ("-c", "conv"),
            ("--cmd", "conv"),
            ("-l", "L"),
            ("--label", "L"),
            ("--fin_steps", "miopen_perf_compile,miopen_perf_eval"),
            ("--session_id", "3"),
        ]  # fmt: skip
    ),
    *(
        ("export_db", f)
        for f in [
            ("--session_id", "3"),
            ("--golden_v", "2"),
            ("-a", "gfx90a"),
            ("--arch", "gfx90a"),
            ("-n", "104"),
            ("--num_cu", "104"),
            ("--config_tag", "T"),
            ("-c",),
            ("--opencl",),
            ("--filename", "f"),
            ("-k",),
            ("--kern_db",),
            ("-f",),
            ("--find_db",),
            ("-p",),
            ("--perf_db",),
        ]  # fmt: skip
    ),
    *(
        ("update_golden", f)
        for f in [
            ("--golden_v", "2"),
            ("--base_golden_v", "1"),
            ("--session_id", "3"),
            ("-o",),
            ("--overwrite",),
            ("--create_perf_table",),
        ]  # fmt: skip
    ),
    *(
        ("merge_db", f)
        for f in [
            ("-m", "a.db"),
            ("--master_file", "a.db"),
            ("-t", "b.db"),
            ("--target_file", "b.db"),
            ("-p",),
            ("-f",),
            ("-b",),
            ("-c",),
            ("--check_duplicate",),
            ("--copy_only",),
            ("--keep_keys",),
        ]  # fmt: skip
    ),
    *(
        ("import_db", f)
        for f in [("--target_file", "f.db"), ("--rocm_v", "5.7"), ("--miopen_v", "3.0")]
    ),
    *(
        ("query_db", f)
        for f in [
            ("-s",),
            ("--skip_db",),
            ("-j",),
            ("--job_info",),
            ("-d",),
            ("--fdb_info",),
            ("-f", "f.txt"),
            ("--file_name", "f.txt"),
            ("--fdb_filename", "f.fdb.txt"),
        ]  # fmt: skip
    ),
]

# MITuna's switches that Tuna takes with a value of another meaning, used as switches.
DIFFERS = [("go_fish", ("-s",)), ("merge_db", ("-m", "a", "-t", "b", "-o")), ("load_jobs", ("-s",))]

SUBCOMMANDS = [
    ("miopen", "import_configs", "-t", "T", "-f", "f.txt"),
    ("miopen", "load_job", "-t", "T", "--session_id", "3"),
    ("miopen", "export_db", "--session_id", "3", "-f"),
    ("miopen", "update_golden", "--golden_v", "2", "--session_id", "3"),
    ("load_job", "-t", "T", "--session_id", "3"),
]


def _verdict(result) -> str:
    if result.exit_code == 0 and "Usage:" in result.output:
        return "works"
    last = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    return last


@pytest.mark.parametrize(
    ("command", "flag"), FLAGS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
def test_every_mituna_flag_works_or_names_what_to_type_instead(runner, command, flag):
    result = runner.invoke(main, [command, *flag, "--help"])
    verdict = _verdict(result)
    assert "Traceback" not in result.output
    assert "Did you mean" not in result.output, result.output
    assert verdict == "works" or (
        result.exit_code == 2 and f"Error: {flag[0]} is MITuna's; in Tuna: " in verdict
    ), result.output


@pytest.mark.parametrize(
    ("command", "args"), DIFFERS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
def test_a_mituna_switch_that_tuna_takes_with_a_value_says_what_it_means_here(
    runner, command, args
):
    result = runner.invoke(main, [command, *args])
    assert result.exit_code == 2
    assert f"Option '{args[-1]}' requires an argument: {args[-1]} is " in result.output


@pytest.mark.parametrize("args", SUBCOMMANDS, ids=" ".join)
def test_mituna_sub_command_forms_of_go_fish_name_the_tuna_command(runner, args):
    result = runner.invoke(main, ["go_fish", *args])
    assert result.exit_code == 2
    sub = args.index(next(a for a in args if a != "miopen"))
    assert result.output.strip().splitlines()[-1] == (
        f"Error: MITuna's `go_fish.py miopen {args[sub]}` is a command of its own in Tuna: "
        f"type `{' '.join(args[sub:])}`"
    )


def test_every_pointer_is_for_a_flag_tuna_does_not_take():
    """A pointer for a flag the command has would never be shown: the table stays true."""
    from tuna.cli.mituna import INSTEAD

    for name, table in INSTEAD.items():
        cmd = main.commands[name]
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        assert not known & set(table), f"{name} takes {known & set(table)}"
