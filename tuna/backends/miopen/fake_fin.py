"""FAKE fin: a stand-in for MIOpen's ``fin`` that replays recorded fin outputs. Not MIOpen.

It compiles nothing and times nothing. It exists so the ``miopen`` backend's whole path (fin
input, fin's command line, fin's output parsed by the real parsers, kernels stored and
exported) runs on machines without a ROCm GPU. It is used only where a session says so:
``FIN_PATH="python -m tuna.backends.miopen.fake_fin"`` (or the path of a script that runs
it). Nothing in Tuna falls back to it.

Command line and files as fin's (``fin/src/main.cpp``): ``fake_fin -i input.json -o
output.json``; the output is a JSON array, ``{"process_env": [...]}`` first, then per input
job the job's step outputs plus ``config_tuna_id``, ``arch``, ``direction`` and ``input``.

What it replays (``recordings/``, or the directory in ``FAKE_FIN_RECORDINGS``):

* ``get_solvers.json``: an ``all_solvers`` list in fin's format. It is *constructed* from
  MIOpen's solver registry (``solvers.py``), not recorded from a fin run.
* every other ``*.json``: real fin outputs of tuning steps. Each evaluate result in one,
  with the compile result echoed in its ``input``, is a *replay*: one solver's compile item
  (its kernel objects, bytes unchanged) and evaluate item, recorded on one config.
  ``fin_output_find_eval.json`` is a real fin output (ConvAsm1x1UV2 on a 1x1 stride-2
  backward-data convolution on gfx906).

How a replay is adapted to the input's config: it *applies* to a config with the recorded
config's spatial dims, filter size, group count, mode and data type (and no other config);
the ``db_key`` and ``network_config`` are computed for the input's config (with Tuna's own
key code), the algorithm name takes the input's direction, and the time is scaled by the
ratio of the configs' multiply-adds (the recorded config gets the recorded time exactly).
Kernel objects handed to an evaluate step are checked as fin checks them (base64, bz2,
md5); a corrupt one aborts the run as fin's exception does. A solver name fin does not know
aborts it too. Steps it does not model (``alloc_buf``, ``fill_buf``) do nothing.
"""

from __future__ import annotations

import base64
import bz2
import hashlib
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna.backends.miopen.solvers import BY_NAME
from tuna.problems.conv import COMMAND_TYPES, ConvProblem
from tuna.problems.keys import find_db_key, network_config

RECORDINGS = Path(__file__).resolve().parent / "recordings"
_DIRECTIONS = {"F": "Fwd", "B": "BwdData", "W": "BwdWeights"}
_DIRECTION_ENUM = {"F": 0, "B": 1, "W": 2}  # miopen::conv::Direction, as fin's perf eval writes it
_ALGORITHM = re.compile(r"miopenConvolution(Fwd|BwdData|BwdWeights)Algo")


class _Abort(Exception):
    """fin would throw here: the process ends without an output file."""


@dataclass(frozen=True)
class Replay:
    solver: str
    config: dict[str, Any]
    compiled: dict[str, Any]
    evaluated: dict[str, Any]

    def applies(self, config: dict[str, Any]) -> bool:
        keys = ["spatial_dim", "fil_h", "fil_w", "group_count", "mode", "cmd"]
        if config.get("spatial_dim") == 3:
            keys.append("fil_d")
        return all(config.get(k) == self.config.get(k) for k in keys)


def load_recordings(root: Path) -> tuple[list[dict[str, Any]], list[Replay]]:
    """The recorded ``all_solvers`` list and the replays in ``root``."""
    solvers = json.loads((root / "get_solvers.json").read_text())[1]["all_solvers"]
    replays = []
    for path in sorted(root.glob("*.json")):
        if path.name == "get_solvers.json":
            continue
        for job in json.loads(path.read_text())[1:]:
            command = job["input"]
            for step in ("find", "perf"):
                compiled = {
                    item["solver_name"]: item
                    for item in command.get(f"miopen_{step}_compile_result", [])
                }
                for item in job.get(f"miopen_{step}_eval_result", []):
                    if item.get("evaluated") and item["solver_name"] in compiled:
                        replays.append(
                            Replay(
                                item["solver_name"],
                                command["config"],
                                compiled[item["solver_name"]],
                                item,
                            )
                        )
    return solvers, replays


def problem_of(config: dict[str, Any]) -> ConvProblem:
    """The problem of a fin ``config`` object (driver semantics, as fin reads it)."""
    three = config["spatial_dim"] == 3

    def dims(name: str) -> tuple[int, ...]:
        prefix = {"in": "in_", "fil": "fil_", "pad": "pad_", "stride": "conv_stride_",
                  "dil": "dilation_"}[name]  # fmt: skip
        keys = ("d", "h", "w") if three else ("h", "w")
        return tuple(int(config[prefix + k]) for k in keys)

    x, w, y = COMMAND_TYPES[config["cmd"]]
    return ConvProblem(
        spatial_dim=config["spatial_dim"],
        batchsize=config["batchsize"],
        in_channels=config["in_channels"],
        out_channels=config["out_channels"],
        in_size=dims("in"),
        fil_size=dims("fil"),
        pad=dims("pad"),
        stride=dims("stride"),
        dilation=dims("dil"),
        group_count=config["group_count"],
        mode=config["mode"],
        direction=config["direction"],
        in_layout=config["in_layout"],
        fil_layout=config["wei_layout"],
        out_layout=config["out_layout"],
        in_type=x,
        wei_type=w,
        out_type=y,
    )


def _macs(p: ConvProblem) -> int:
    n = p.batchsize * p.out_channels * (p.in_channels // p.group_count)
    for v in (*p.out_size, *p.fil_size):
        n *= v
    return n


class FakeFin:
    """Runs the steps of fin jobs against the recordings."""

    def __init__(self, root: Path) -> None:
        self.all_solvers, self.replays = load_recordings(root)
        self.known = {s["name"] for s in self.all_solvers if s.get("type") == "convolution"}

    def run(self, command: dict[str, Any]) -> dict[str, Any]:
        output: dict[str, Any] = {}
        for step in command.get("steps", []):
            if step == "get_solvers":
                output["all_solvers"] = self.all_solvers
            elif step == "applicability":
                names = {r.solver for r in self.replays if r.applies(command["config"])}
                output["applicable_solvers"] = sorted(names)
            elif step in ("miopen_find_compile", "miopen_perf_compile"):
                self._keys(command, output)
                output[f"{step}_result"] = [
                    self._compile_item(step, command, name) for name in self._solvers(command)
                ]
            elif step in ("miopen_find_eval", "miopen_perf_eval"):
                self._keys(command, output)
                compiled = command[step.replace("_eval", "_compile") + "_result"]
                output[f"{step}_result"] = [self._eval_item(step, command, c) for c in compiled]
        output["config_tuna_id"] = command.get("config_tuna_id")
        output["arch"] = command.get("arch")
        output["direction"] = command.get("direction")
        output["input"] = command
        return output

    def _keys(self, command: dict[str, Any], output: dict[str, Any]) -> None:
        p = problem_of(command["config"])
        output["is_winograd_only"] = False
        output["network_config"] = network_config(p)
        output["db_key"] = find_db_key(p)

    def _solvers(self, command: dict[str, Any]) -> list[str]:
        names = command.get("solvers") or sorted(self.known)
        unknown = [n for n in names if n not in self.known]
        if unknown:
            raise _Abort(f"miopen::Exception: invalid solver id {unknown[0]!r}")
        return list(names)

    def _replay(self, command: dict[str, Any], solver: str) -> Replay | None:
        config = command["config"]
        return next((r for r in self.replays if r.solver == solver and r.applies(config)), None)

    def _algorithm(self, command: dict[str, Any], recorded: str | None, solver: str) -> str:
        direction = _DIRECTIONS[command["config"]["direction"]]
        if recorded:
            return _ALGORITHM.sub(f"miopenConvolution{direction}Algo", recorded)
        family = BY_NAME[solver].algorithm if solver in BY_NAME else "Direct"
        return f"miopenConvolution{direction}Algo{family}"

    def _compile_item(self, step: str, command: dict[str, Any], solver: str) -> dict[str, Any]:
        flag = "find_compiled" if step == "miopen_find_compile" else "perf_compiled"
        replay = self._replay(command, solver)
        if replay is None:
            algorithm = self._algorithm(command, None, solver)
            return {"algorithm": algorithm, "reason": "Not Applicable", "solver_name": solver,
                    flag: False}  # fmt: skip
        item = {
            "algorithm": self._algorithm(command, replay.compiled.get("algorithm"), solver),
            "kernel_objects": replay.compiled["kernel_objects"],
            "reason": "Success",
            "solver_name": solver,
            "tunable": replay.evaluated.get("tunable", False),
            flag: True,
        }
        if step == "miopen_find_compile":
            item["params"] = replay.evaluated.get("params", "")
            item["workspace"] = replay.compiled.get("workspace", 0)
        return item

    def _eval_item(
        self, step: str, command: dict[str, Any], compiled: dict[str, Any]
    ) -> dict[str, Any]:
        solver = compiled["solver_name"]
        if solver not in self.known:
            raise _Abort(f"miopen::Exception: invalid solver id {solver!r}")
        replay = self._replay(command, solver)
        algorithm = self._algorithm(command, replay.evaluated.get("algorithm") if replay else None,
                                    solver)  # fmt: skip
        if replay is None:
            return {"algorithm": algorithm, "evaluated": False, "reason": "Not Applicable",
                    "solver_name": solver}  # fmt: skip
        for kernel in compiled.get("kernel_objects", []):
            _check_kernel(kernel)
        problem = problem_of(command["config"])
        scale = _macs(problem) / _macs(problem_of(replay.config))
        item = {
            "algorithm": algorithm,
            "evaluated": True,
            "params": replay.evaluated.get("params", ""),
            "reason": "Success",
            "solver_name": solver,
            "time": replay.evaluated["time"] * scale,
            "tunable": replay.evaluated.get("tunable", False),
            "workspace": replay.evaluated.get("workspace", 0),
        }
        if step == "miopen_perf_eval":
            item.update(
                bias=0,
                data_type=problem.in_type,
                direction=_DIRECTION_ENUM[problem.direction],
                kernel_objects=replay.compiled["kernel_objects"],
                layout=problem.in_layout,
            )
        return item


def _check_kernel(kernel: dict[str, Any]) -> None:
    """What fin's evaluate steps do with a kernel object before loading it."""
    data = base64.b64decode(kernel["blob"])
    size = kernel["uncompressed_size"]
    code = bz2.decompress(data) if size else data
    if hashlib.md5(code, usedforsecurity=False).hexdigest() != kernel["md5_sum"]:
        raise _Abort("Corrupt binary object")


_USAGE = (
    "Usage: ./fin *input_json *output_json\n\n"
    "Supported arguments:\n-i *input_json\n-o *output_json\n\n"
)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv if argv is None else argv)
    if any(a in ("--help", "-help", "-h") for a in args):
        sys.stdout.write(_USAGE)
        return 0
    if len(args) != 5:
        sys.stderr.write("Invalid arguments\n")
        sys.stdout.write(_USAGE)
        return 0  # as fin: Usage() exits 0
    files = {args[i]: args[i + 1] for i in range(1, 4) if args[i] in ("-i", "-o")}
    if "-i" not in files or not os.path.exists(files["-i"]):
        sys.stderr.write(f"File: {files.get('-i')} does not exist\n")
        return 255
    root = Path(os.environ.get("FAKE_FIN_RECORDINGS") or RECORDINGS)
    fin = FakeFin(root)
    jobs = json.loads(Path(files["-i"]).read_text())
    out: list[dict[str, Any]] = [{"process_env": [f"{k}={v}" for k, v in os.environ.items()]}]
    try:
        out += [fin.run(job) for job in jobs]
    except _Abort as e:
        sys.stderr.write(f"terminate called after throwing an instance of 'miopen::Exception'\n"
                         f"  what():  {e}\n")  # fmt: skip
        return 134  # abort(): fin writes its output only at the end, so none is left
    Path(files["-o"]).write_text(json.dumps(out, indent=4) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
