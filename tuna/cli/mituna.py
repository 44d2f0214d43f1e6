"""MITuna's flags and sub-command forms that Tuna does not take, and what to type instead.

Every flag of MITuna's commands (``reference/mituna.md`` §4) either works in Tuna (the
command has the option) or is in :data:`INSTEAD` with a pointer, which the command prints
in place of click's "No such option" and its "Did you mean" guess (which named the wrong
flag: ``--md_version`` -> ``--driver``). ``go_fish miopen import_configs ...`` and the other
sub-command forms (MITuna's ``go_fish.py miopen <sub>``) name the Tuna command to type.
"""

from __future__ import annotations

# command -> MITuna's flag -> what to type in Tuna (or why there is nothing to type)
INSTEAD: dict[str, dict[str, str]] = {
    "go_fish": {
        "-C": "Tuna tunes convolutions only: leave -C/--config_type out",
        "--config_type": "Tuna tunes convolutions only: leave -C/--config_type out",
        "--remote_machine": "registered machines are used by default (`tuna machine add`); "
        "--local runs on this machine",
        "-l": "labels belong to jobs: `load_jobs ... -l LABEL`",
        "--label": "labels belong to jobs: `load_jobs ... -l LABEL`",
        "-r": "Tuna reboots no machine: `go_fish -e 'sudo reboot' -m IDS`",
        "--restart": "Tuna reboots no machine: `go_fish -e 'sudo reboot' -m IDS`",
        "--docker_name": "--image IMAGE (default: the session's docker image)",
        "--shutdown_workers": "Ctrl-C or SIGTERM to go_fish stops its workers; "
        "`go_fish --clean` removes what a killed run left",
        "--enqueue_only": "queue with `load_jobs`; go_fish only works the queue",
        "--find_mode": "the find mode is the session's: `tuna session create ... --env "
        "MIOPEN_FIND_MODE=1`",
        "--ticket": "`tuna session create ... --ticket T`",
        "--solver_id": "`load_jobs ... --solvers NAME` picks the solvers a session works",
        "--dynamic_solvers_only": "`load_jobs ... --solvers NAME,...` picks the solvers",
        "-B": "`tuna session create ... --env MIOPEN_DEBUG_CONV_GEMM=0` (one --env per family)",
        "--blacklist": "`tuna session create ... --env MIOPEN_DEBUG_CONV_GEMM=0` "
        "(one --env per family)",
        "-i": "leases replace reset intervals: a lost worker's jobs come back by themselves",
        "--reset_interval": "leases replace reset intervals: a lost worker's jobs come back "
        "by themselves",
        "--gpu_lim": "-m IDS picks the machines; go_fish starts one evaluation worker per GPU",
        "--add_tables": "`tuna db upgrade`",
        "--init_session": "`tuna session create --arch A --num-cu N --backend miopen -l L`",
        "--list_solvers": "`tuna solvers list --session_id N`",
        "--update_solvers": "`tuna solvers update --session_id N`",
        "--update_applicability": "`tuna applicability update --session_id N -t TAG`",
        "--yaml": "one go_fish per step: `go_fish -s N --compile --run_perf`",
        "-d": "`go_fish -e 'docker exec ...' -m IDS`",
        "--docker_exec": "`go_fish -e 'docker exec ...' -m IDS`",
        "--local_machine": "--local",
        "--arch_num_cu_list": "`tuna applicability update --session_id N` per session",
    },
    "import_configs": {
        "--batchsize": "-b/--batches N (one batch size is a list of one)",
        "-F": "tags say where a config comes from: -t TAG",
        "--framework": "tags say where a config comes from: -t TAG",
        "--fw_version": "tags say where a config comes from: -t TAG",
        "-m": "tags say where a config comes from: -t TAG (e.g. -t resnet50)",
        "--model": "tags say where a config comes from: -t TAG (e.g. -t resnet50)",
        "--md_version": "tags say where a config comes from: -t TAG (e.g. -t resnet50-v2)",
        "-g": "Tuna keeps no GPU count per config: leave -g/--gpu_count out",
        "--gpu_count": "Tuna keeps no GPU count per config: leave -g/--gpu_count out",
        "--add_framework": "tags replace frameworks: `import_configs -t TAG -f FILE`",
        "--add_model": "tags replace models: `import_configs -t TAG -f FILE`",
        "--print_models": "`SELECT DISTINCT tag FROM config_tag` lists the tags",
        "--add_benchmark": "tags replace benchmarks: `import_configs -t TAG -f FILE`",
    },
    "load_jobs": {
        "-A": "--solvers NAME,... (`tuna solvers list` shows each solver's algorithm)",
        "--algo": "--solvers NAME,... (`tuna solvers list` shows each solver's algorithm)",
        "-d": "--solvers NAME,... picks the solvers (there is no dynamic-only switch)",
        "--only_dynamic": "--solvers NAME,... picks the solvers (there is no dynamic-only switch)",
        "-c": "a config's precision is part of it: tag the configs you want (-t TAG)",
        "--cmd": "a config's precision is part of it: tag the configs you want (-t TAG)",
    },
    "update_golden": {
        "-o": "versions are immutable: make a new one with --golden_v NEW --base_golden_v OLD",
        "--overwrite": "versions are immutable: make a new one with --golden_v NEW "
        "--base_golden_v OLD",
        "--create_perf_table": "update_golden lists the keys slower than the base version; "
        "`export_db --golden_v V` writes a version's files",
    },
    "merge_db": {
        "-p": "the kind comes from the files' names: leave -p out",
        "-f": "the kind comes from the files' names: leave -f out",
        "-b": "the kind comes from the files' names: leave -b out",
        "-c": "duplicates are always checked: leave -c/--check_duplicate out",
        "--check_duplicate": "duplicates are always checked: leave -c/--check_duplicate out",
        "--copy_only": "copy the file (cp BASE OUT); Tuna's -o is --output",
        "--keep_keys": "perf records merge per solver, a find record is replaced whole",
    },
    "import_db": {
        "--target_file": "the file is an argument: `import_db FILE --arch A --num-cu N "
        "--backend miopen`",
        "--rocm_v": "the ROCm version is the session's toolchain: `tuna session create "
        "--rocm_v V ...`, then `import_db FILE -s N`",
    },
    "query_db": {
        "-s": "query_db shows config, tags, jobs and results at once: leave -s out",
        "--skip_db": "query_db shows config, tags, jobs and results at once: leave --skip_db out",
        "-j": "query_db shows jobs with everything else: leave -j out",
        "--job_info": "query_db shows jobs with everything else: leave --job_info out",
        "-d": "query_db shows find-db results with everything else: leave -d out",
        "--fdb_info": "query_db shows find-db results with everything else: leave --fdb_info out",
        "--fdb_filename": "`import_db FILE ...` then `query_db -f LINES`",
    },
}

# Flags Tuna takes with another meaning than MITuna's, said when MITuna's use of them (as
# a switch, without a value) fails; a value that is not a session id says so too.
DIFFERS: dict[str, dict[str, str]] = {
    "go_fish": {"-s": "-s is the session in Tuna; MITuna's go_fish -s (status) is --status"},
    "merge_db": {"-o": "-o is --output in Tuna; for MITuna's -o (--copy_only) copy the file"},
    "load_jobs": {"-s": "-s is the session in Tuna; MITuna's load_job -s (solvers) is --solvers"},
}

# MITuna's ``go_fish.py miopen <sub> ...``: in Tuna each is a command of its own.
SUBCOMMANDS = ("import_configs", "load_job", "export_db", "update_golden")


def instead(command: str, flag: str, *, differs: bool = False) -> str | None:
    """What to type in Tuna for MITuna's ``flag`` of ``command`` (None: not MITuna's);
    ``differs``: for a flag Tuna takes with another meaning."""
    tables = DIFFERS if differs else INSTEAD
    table = tables.get("load_jobs" if command == "load_job" else command, {})
    return table.get(flag.partition("=")[0])


def subcommand_form(args: list[str]) -> str | None:
    """The Tuna command line for MITuna's ``go_fish [LIB] SUB ...`` (None if not that form)."""
    for words in (args[:], args[1:]):
        if words and words[0] in SUBCOMMANDS:
            return " ".join(words)
    return None
