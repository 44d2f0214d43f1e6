"""C code generation and compilation: candidates -> shared objects.

Several candidates share a translation unit (``per_unit`` of them; one ``.so`` exporting
``kern_0``, ``kern_1``, ...), since the compiler's start-up and the common code cost as much as
a small kernel. The problem's shape is compiled in (``-DCV_N=...``) and a candidate's
parameters are ``#define``s in the generated source, which inlines the headers it uses, so a
unit's source and flags alone decide its binary: the ``.so`` is named after their hash, built
in a directory of its own under that name, and identical units (a retried job, the same problem
in another session) give identical bytes that the content-addressed kernel cache stores once.
Built bytes are also kept per process, and ``ccache`` is used when it is installed
(:mod:`tuna.backends.toolchain`).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.resources
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tuna.backends.base import KernelBinary
from tuna.backends.cpuconv import solvers as sv
from tuna.backends.toolchain import compile_and_link
from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem

_HEADERS = {
    sv.NAIVE: "naive.h",
    sv.TILED: "tiled.h",
    sv.IM2COL: "im2col.h",
    sv.GEMM1X1: "gemm1x1.h",
    sv.WINOGRAD: "winograd.h",
}
# Parameter name -> the macro the C source reads.
_MACROS = {
    sv.TILED: {"TK": "TL_TK", "TH": "TL_TH", "TW": "TL_TW", "U": "TL_U", "NT": "TL_NT"},
    sv.IM2COL: {n: f"GM_{n}" for n in sv.SPECS[sv.IM2COL].names},
    sv.GEMM1X1: {n: f"GM_{n}" for n in sv.SPECS[sv.GEMM1X1].names},
    sv.WINOGRAD: {"MR": "GM_MR", "NV": "GM_NV", "VW": "GM_VW", "TB": "WG_TB", "NT": "GM_NT"},
}
_FIXED = {sv.WINOGRAD: {"GM_KC": 256, "GM_LO": 0, "GM_PB": 0}}
_DIRECTION = {"F": 0, "B": 1, "W": 2}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_ONCE = frozenset({"common.h"})


class BuildError(BackendError):
    """Raised when the C compiler fails on a unit; the message ends with its diagnostics."""


class BudgetExceededError(BackendError):
    """Raised when building runs past its deadline; ``done`` of ``total`` candidates built."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"deadline passed after building {done} of {total} candidates")
        self.done, self.total = done, total


@dataclass(frozen=True)
class Unit:
    """One translation unit: its ``.so`` name, compiler flags, source and exported symbols."""

    name: str
    flags: tuple[str, ...]
    source: str
    symbols: tuple[tuple[str, str], ...]  # (params, symbol) per candidate

    @property
    def args(self) -> str:
        return shlex.join(self.flags)


def kernel_source(name: str) -> str:
    return importlib.resources.files(__package__).joinpath("kernels").joinpath(name).read_text()


def _expand(name: str, seen: set[str]) -> str:
    """The file with its ``#include "..."`` lines replaced by the files they name; those in
    ``_ONCE`` only the first time (``seen`` records that)."""

    def include(m: re.Match[str]) -> str:
        header = m.group(1)
        if header in _ONCE:
            if header in seen:
                return ""
            seen.add(header)
        return _expand(header, seen)

    return _INCLUDE.sub(include, kernel_source(name))


def shape_defines(p: ConvProblem) -> list[str]:
    """The problem as ``-D`` flags (NCHW, 2D)."""
    (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
    values = {
        "CV_DIR": _DIRECTION[p.direction],
        "CV_N": p.batchsize,
        "CV_C": p.in_channels,
        "CV_K": p.out_channels,
        "CV_G": p.group_count,
        "CV_HI": hi,
        "CV_WI": wi,
        "CV_HO": ho,
        "CV_WO": wo,
        "CV_FY": fy,
        "CV_FX": fx,
        "CV_PH": p.pad[0],
        "CV_PW": p.pad[1],
        "CV_SH": p.stride[0],
        "CV_SW": p.stride[1],
        "CV_DH": p.dilation[0],
        "CV_DW": p.dilation[1],
    }
    return [f"-D{k}={v}" for k, v in values.items()]


def compile_flags(p: ConvProblem, *, march: str, opt: str) -> tuple[str, ...]:
    return (
        f"-O{opt}",
        f"-march={march}",
        "-std=gnu11",
        "-fPIC",
        "-shared",
        "-pthread",
        "-fvisibility=hidden",
        *shape_defines(p),
    )


def _candidate_block(solver: str, symbol: str, params: str) -> str:
    values = sv.parse_params(solver, params)
    macros = {"KNAME": symbol, **_FIXED.get(solver, {})}
    for name, value in values.items():
        if name == sv.FAULT_FIELD:
            if value:
                macros["CV_SKIP_TAP"] = 1
        else:
            macros[_MACROS[solver][name]] = value
    defines = "".join(f"#define {k} {v}\n" for k, v in macros.items())
    undefs = "".join(f"#undef {k}\n" for k in macros)
    body = _expand(_HEADERS[solver], set(_ONCE))
    return f"/* {solver} {params or '(no parameters)'} */\n{defines}{body}{undefs}"


def plan_units(
    p: ConvProblem,
    solver: str,
    candidates: Sequence[str],
    *,
    march: str,
    opt: str = "3",
    per_unit: int = 8,
) -> list[Unit]:
    """The units that build ``candidates`` (parameter strings) of ``solver`` for ``p``."""
    flags = compile_flags(p, march=march, opt=opt)
    units = []
    step = max(1, per_unit)
    for start in range(0, len(candidates), step):
        chunk = candidates[start : start + step]
        symbols = tuple((params, f"kern_{i}") for i, params in enumerate(chunk))
        source = "\n".join(
            [
                f"/* cpuconv {solver}: {len(chunk)} candidate(s), generated */",
                kernel_source("common.h"),
                *(_candidate_block(solver, sym, params) for params, sym in symbols),
            ]
        )
        digest = hashlib.sha256(f"{source}\0{shlex.join(flags)}".encode()).hexdigest()
        units.append(Unit(f"cpuconv_{solver}_{digest[:16]}.so", flags, source, symbols))
    return units


_built: OrderedDict[str, bytes] = OrderedDict()
_built_lock = threading.Lock()
_BUILT_KEPT = 256


def _compile(unit: Unit, cc: str, timeout: float) -> bytes:
    key = f"{cc}\0{unit.name}"
    with _built_lock:
        if key in _built:
            _built.move_to_end(key)
            return _built[key]
    stem = unit.name.removesuffix(".so")
    with tempfile.TemporaryDirectory(prefix="cpuconv-build-") as tmp:
        Path(tmp, f"{stem}.c").write_text(unit.source)
        try:
            proc = compile_and_link(
                cc, f"{stem}.c", unit.name, flags=unit.flags, cwd=Path(tmp), timeout=timeout
            )
        except FileNotFoundError as e:
            raise BuildError(f"C compiler {cc!r} not found: {e}") from e
        if not proc.ok:
            tail = (proc.stderr or proc.stdout).strip()[-2000:]
            raise BuildError(f"{cc} failed on {unit.name} (exit {proc.returncode}): {tail}")
        binary = Path(tmp, unit.name).read_bytes()
    with _built_lock:
        _built[key] = binary
        while len(_built) > _BUILT_KEPT:
            _built.popitem(last=False)
    return binary


def build_units(
    units: Sequence[Unit], *, cc: str = "cc", jobs: int = 1, deadline: float | None = None
) -> list[KernelBinary]:
    """Compile ``units`` (``jobs`` at a time); raises :class:`BudgetExceededError` once the
    ``time.monotonic()`` deadline passes and :class:`BuildError` when the compiler fails."""
    total = sum(len(u.symbols) for u in units)
    done = 0
    lock = threading.Lock()

    def build(unit: Unit) -> KernelBinary:
        nonlocal done
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise BudgetExceededError(done, total)
        try:
            binary = _compile(unit, cc, timeout=left if left is not None else 3600)
        except subprocess.TimeoutExpired as e:
            raise BudgetExceededError(done, total) from e
        with lock:
            done += len(unit.symbols)
        return KernelBinary(unit.name, unit.args, binary)

    if jobs <= 1 or len(units) <= 1:
        return [build(u) for u in units]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(build, units))


_reference_path: Path | None = None
_reference_lock = threading.Lock()


def reference_library(cc: str = "cc") -> Path:
    """The verification library (``reference.c``), built once per process, portable flags."""
    global _reference_path
    with _reference_lock:
        if _reference_path is None or not _reference_path.exists():
            unit = Unit(
                "cpuconv_reference.so",
                ("-O2", "-std=gnu11", "-fPIC", "-shared", "-ffp-contract=off"),
                _expand("reference.c", set()),
                (),
            )
            binary = _compile(unit, cc, timeout=300)
            tmp = tempfile.mkdtemp(prefix="cpuconv-ref-")
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            path = Path(tmp) / unit.name
            path.write_bytes(binary)
            _reference_path = path
        return _reference_path
