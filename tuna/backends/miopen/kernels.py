"""fin's kernel objects: code objects as base64 of MIOpen's bz2 compression, md5 checked.

fin writes each compiled kernel as (``BuildJsonKernelList`` in ``fin/src/include/fin.hpp``)::

    {"kernel_file": "conv1x1u_stride2.s", "comp_options": " -Wa,-defsym,...",
     "blob": base64(bz2(code object)), "md5_sum": md5(code object),
     "uncompressed_size": len(code object)}

``uncompressed_size`` 0 means the blob holds the code object itself, not compressed (what
``MIOpenFind`` writes when compression does not pay); when fin fails to compress a kernel it
writes ``md5_sum`` "Failed to compress kernel" and an empty blob. fin refuses to load a
kernel whose md5 does not match, so Tuna checks each one as it takes it in.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuna.backends.base import KernelBinary
from tuna.errors import BackendError


class KernelObjectError(BackendError):
    """Raised when a kernel object of fin's output is unusable: a field is missing, the blob
    does not decode or decompress, or its size or md5 does not match."""


@dataclass(frozen=True)
class KernelMeta:
    """A kernel object without its blob: how a compile payload refers to a stored kernel."""

    kernel_file: str
    comp_options: str
    md5_sum: str
    uncompressed_size: int

    def as_json(self) -> dict[str, Any]:
        return {
            "kernel_file": self.kernel_file,
            "comp_options": self.comp_options,
            "md5_sum": self.md5_sum,
            "uncompressed_size": self.uncompressed_size,
        }


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def decode_kernel_object(obj: Any, *, solver: str) -> tuple[KernelBinary, KernelMeta]:
    """The code object of one fin kernel object, checked; errors name the solver and kernel."""
    if not isinstance(obj, Mapping):
        raise KernelObjectError(f"solver {solver}: a kernel object is not a JSON object: {obj!r}")
    name = obj.get("kernel_file")
    where = f"solver {solver}, kernel {name!r}"
    if not isinstance(name, str) or not name:
        raise KernelObjectError(f"{where}: kernel_file is missing or empty")
    options, digest, size, blob = (
        obj.get(k) for k in ("comp_options", "md5_sum", "uncompressed_size", "blob")
    )
    if not isinstance(options, str):
        raise KernelObjectError(f"{where}: comp_options is missing")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise KernelObjectError(f"{where}: uncompressed_size {size!r} is not a size")
    if not isinstance(digest, str) or not isinstance(blob, str):
        raise KernelObjectError(f"{where}: md5_sum or blob is missing")
    if not blob:
        raise KernelObjectError(f"{where}: empty blob (fin said: md5_sum {digest!r})")
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError) as e:
        raise KernelObjectError(f"{where}: blob is not base64: {e}") from e
    if size:
        try:
            code = bz2.decompress(raw)
        except (OSError, ValueError, EOFError) as e:
            raise KernelObjectError(f"{where}: blob does not bz2-decompress: {e}") from e
        if len(code) != size:
            raise KernelObjectError(
                f"{where}: blob decompresses to {len(code)} bytes, not uncompressed_size {size}"
            )
    else:
        code = raw
    actual = md5_hex(code)
    if actual != digest:
        raise KernelObjectError(
            f"{where}: md5 of the code object is {actual}, not md5_sum {digest}"
        )
    meta = KernelMeta(name, options, digest, len(code))
    return KernelBinary(name=name, args=options, binary=code), meta


def encode_kernel_object(kernel: KernelBinary) -> dict[str, Any]:
    """A kernel object as fin reads one: base64 of bz2 (level 9, as MIOpen compresses)."""
    if not kernel.binary:
        raise KernelObjectError(f"kernel {kernel.name!r}: empty code object")
    return {
        "blob": base64.b64encode(bz2.compress(kernel.binary, 9)).decode("ascii"),
        "comp_options": kernel.args,
        "kernel_file": kernel.name,
        "md5_sum": md5_hex(kernel.binary),
        "uncompressed_size": len(kernel.binary),
    }
