"""How ``kernel_cache`` stores a kernel's bytes: zlib, or raw when ``uncompressed_size`` is 0."""

from __future__ import annotations

import zlib

BlobError = zlib.error
"""Raised by :func:`unpack_kernel` for a blob that does not decompress."""


def pack_kernel(binary: bytes) -> tuple[bytes, int]:
    """(blob, uncompressed size) as ``kernel_cache`` stores a kernel; size 0: not compressed."""
    if not binary:
        return b"", 0
    return zlib.compress(binary, 6), len(binary)


def unpack_kernel(blob: bytes, uncompressed_size: int) -> bytes:
    return zlib.decompress(blob) if uncompressed_size else bytes(blob)
