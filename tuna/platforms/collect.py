"""What this process runs on, as JSON: the facts a worker records once per start.

:func:`collect` reads what is cheap to read and stable while the machine is unchanged, so
that the same machine or container gives the same document (the ``platform`` row is
content-addressed): CPU model, flags and core count, the frequency governor and bounds
(never the current frequency), kernel, C compiler, libc, Python and Tuna versions, the
container image a worker was started from (``TUNA_IMAGE`` / ``TUNA_IMAGE_ID``, which
go_fish sets) and the GPUs that ``nvidia-smi`` or ``rocm-smi`` report, when on PATH
(``gpus``, one entry each, and ``gpu``, what they all have in common and their count).

It runs the compiler and the GPU tools once each (a few ms, more with GPUs), so the worker
calls it from a background thread (:class:`Probe`) and never on its claim path. Each fact
is best effort: what cannot be read is left out, never guessed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

_TOOL_TIMEOUT_S = 10.0
Runner = Callable[[Sequence[str]], str | None]


def run_tool(argv: Sequence[str]) -> str | None:
    """``argv``'s standard output, or None when it is not on PATH, fails or hangs."""
    import shutil
    import subprocess

    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def cpu_facts(cpuinfo: str, cores: int | None, sys_cpu: Path | None = None) -> dict[str, Any]:
    """Model, flags and cores from /proc/cpuinfo's text (first processor), with the
    frequency governor and bounds under ``sys_cpu`` (/sys/devices/system/cpu) if readable."""
    facts: dict[str, Any] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if facts:
                break  # the first processor's block is enough
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model Name", "cpu model") and "model" not in facts:
            facts["model"] = value
        elif key == "vendor_id":
            facts["vendor"] = value
        elif key in ("flags", "Features"):
            facts["flags"] = sorted(set(value.split()))
        elif key == "CPU implementer":
            facts.setdefault("vendor", value)
        elif key == "CPU part":
            facts.setdefault("model", f"part {value}")
    if cores:
        facts["cores"] = cores
    freq = (sys_cpu or Path("/sys/devices/system/cpu")) / "cpu0" / "cpufreq"
    for name, key in (
        ("scaling_governor", "governor"),
        ("cpuinfo_min_freq", "min_khz"),
        ("cpuinfo_max_freq", "max_khz"),
        ("scaling_driver", "freq_driver"),
    ):
        try:
            text = (freq / name).read_text().strip()
        except OSError:
            continue
        facts[key] = int(text) if text.isdigit() else text
    return facts


def nvidia_facts(run: Runner) -> list[dict[str, Any]]:
    """One entry per GPU nvidia-smi lists: name, driver, memory and the CUDA version."""
    out = run(
        ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
    )
    if not out:
        return []
    cuda = None
    banner = run(["nvidia-smi"]) or ""
    if "CUDA Version:" in banner:
        cuda = banner.split("CUDA Version:", 1)[1].split()[0].strip("|")
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3:
            continue
        gpu = {"vendor": "nvidia", "model": parts[0], "driver": parts[1], "memory": parts[2]}
        if cuda:
            gpu["cuda"] = cuda
        gpus.append(gpu)
    return gpus


def rocm_facts(run: Runner, rocm_root: Path = Path("/opt/rocm")) -> list[dict[str, Any]]:
    """One entry per GPU rocm-smi lists: product name, gfx target, driver, ROCm version."""
    import json

    out = run(["rocm-smi", "--showproductname", "--showdriverversion", "--json"])
    if not out:
        return []
    try:
        cards = json.loads(out)
    except ValueError:
        return []
    if not isinstance(cards, dict):
        return []
    driver = None
    system = cards.get("system")
    if isinstance(system, dict):
        driver = system.get("Driver version")
    try:
        rocm = (rocm_root / ".info" / "version").read_text().strip()
    except OSError:
        rocm = None
    gpus = []
    for name, card in sorted(cards.items()):
        if not name.startswith("card") or not isinstance(card, dict):
            continue
        gpu: dict[str, Any] = {"vendor": "amd"}
        for key, field in (
            ("Card series", "model"),
            ("Card SKU", "sku"),
            ("GFX Version", "gfx"),
            ("Driver version", "driver"),
        ):
            if card.get(key):
                gpu[field] = card[key]
        if driver and "driver" not in gpu:
            gpu["driver"] = driver
        if rocm:
            gpu["rocm"] = rocm
        gpus.append(gpu)
    return gpus


def collect(
    *,
    run: Runner = run_tool,
    environ: Mapping[str, str] | None = None,
    proc: Path = Path("/proc"),
    sys_cpu: Path | None = None,
) -> dict[str, Any]:
    """This machine's facts (see the module's docstring); the arguments are for tests."""
    import platform

    env = os.environ if environ is None else environ
    try:
        cpuinfo = (proc / "cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    info: dict[str, Any] = {"cpu": cpu_facts(cpuinfo, os.cpu_count(), sys_cpu)}
    uname = platform.uname()
    info["os"] = {"system": uname.system, "kernel": uname.release, "arch": uname.machine}
    libc, libc_version = platform.libc_ver()
    cc = run([env.get("CPUCONV_CC") or "cc", "--version"])
    toolchain: dict[str, Any] = {"python": platform.python_version(), "tuna": _tuna_version()}
    if cc:
        toolchain["cc"] = cc.strip().splitlines()[0]
    if libc:
        toolchain["libc"] = f"{libc} {libc_version}"
    info["toolchain"] = toolchain
    container = {
        key: env[var]
        for key, var in (("image", "TUNA_IMAGE"), ("image_id", "TUNA_IMAGE_ID"))
        if env.get(var)
    }
    if container:
        info["container"] = container
    gpus = nvidia_facts(run) + rocm_facts(run)
    if gpus:
        info["gpus"] = gpus
        info["gpu"] = gpu_summary(gpus)
    return info


def gpu_summary(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """What all the GPUs have in common (``gpu.model`` for a compatibility rule), and how
    many there are."""
    common = {k: v for k, v in gpus[0].items() if all(g.get(k) == v for g in gpus)}
    return {**common, "count": len(gpus)}


def _tuna_version() -> str:
    import tuna

    return tuna.__version__


class Probe:
    """:func:`collect` in a background thread, started at once; :meth:`facts` waits for it.

    A worker starts one when it starts, so the compiler and GPU tools run while it claims
    its first jobs, not before.
    """

    def __init__(self, collector: Callable[[], dict[str, Any]] = collect) -> None:
        self._collector = collector
        self._facts: dict[str, Any] | None = None
        self._thread = threading.Thread(target=self._run, name="tuna-platform", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._facts = self._collector()
        except Exception as e:  # a platform still: say what went wrong, in the document
            uname = os.uname()
            self._facts = {
                "os": {"system": uname.sysname, "kernel": uname.release, "arch": uname.machine},
                "error": f"collecting the platform failed: {type(e).__name__}: {e}",
            }

    def facts(self) -> dict[str, Any]:
        self._thread.join()
        assert self._facts is not None
        return self._facts
