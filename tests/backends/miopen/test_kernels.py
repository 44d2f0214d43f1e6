"""Kernel objects: base64 of bz2, md5 checked; a bad one is an error naming solver and kernel."""

from __future__ import annotations

import base64
import bz2
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.backends.base import KernelBinary
from tuna.backends.miopen.kernels import (
    KernelObjectError,
    decode_kernel_object,
    encode_kernel_object,
)

CODE = b"\x7fELF" + bytes(range(256)) * 8


def obj(code: bytes = CODE, **changes: object) -> dict[str, object]:
    o: dict[str, object] = {
        "kernel_file": "MIOpenConvDirUni.cl",
        "comp_options": " -DMLO_HW_WAVE_SZ=64",
        "blob": base64.b64encode(bz2.compress(code)).decode(),
        "md5_sum": hashlib.md5(code).hexdigest(),
        "uncompressed_size": len(code),
    }
    o.update(changes)
    return o


def test_decode_checks_and_returns_the_code_object():
    kernel, meta = decode_kernel_object(obj(), solver="ConvOclDirectFwd")
    assert kernel == KernelBinary("MIOpenConvDirUni.cl", " -DMLO_HW_WAVE_SZ=64", CODE)
    assert meta.md5_sum == hashlib.md5(CODE).hexdigest() and meta.uncompressed_size == len(CODE)


def test_uncompressed_size_zero_means_a_raw_blob():
    raw = obj(blob=base64.b64encode(CODE).decode(), uncompressed_size=0)
    kernel, meta = decode_kernel_object(raw, solver="S")
    assert kernel.binary == CODE and meta.uncompressed_size == len(CODE)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"md5_sum": "0" * 32}, r"md5 of the code object is [0-9a-f]{32}, not md5_sum 0{32}"),
        ({"uncompressed_size": 10}, r"blob decompresses to 2052 bytes, not uncompressed_size 10"),
        ({"blob": "not base64!"}, r"blob is not base64"),
        ({"blob": base64.b64encode(b"BZh9 garbage").decode()}, r"blob does not bz2-decompress"),
        ({"blob": "", "md5_sum": "Failed to compress kernel", "uncompressed_size": 0},
         r"empty blob \(fin said: md5_sum 'Failed to compress kernel'\)"),
        ({"comp_options": None}, r"comp_options is missing"),
        ({"uncompressed_size": -1}, r"uncompressed_size -1 is not a size"),
    ],
)  # fmt: skip
def test_a_bad_kernel_object_names_solver_and_kernel(changes, message):
    with pytest.raises(
        KernelObjectError, match=rf"^solver ConvAsm3x3U, kernel 'MIOpenConvDirUni.cl': {message}"
    ):
        decode_kernel_object(obj(**changes), solver="ConvAsm3x3U")


def test_a_flipped_byte_in_the_compressed_blob_is_caught():
    compressed = bytearray(bz2.compress(CODE))
    compressed[len(compressed) // 2] ^= 0x40
    bad = obj(blob=base64.b64encode(bytes(compressed)).decode())
    with pytest.raises(KernelObjectError, match="solver S, kernel 'MIOpenConvDirUni.cl'"):
        decode_kernel_object(bad, solver="S")


def test_encode_writes_what_fin_reads():
    o = encode_kernel_object(KernelBinary("k.s", "-O3", CODE))
    assert o["uncompressed_size"] == len(CODE)
    assert o["md5_sum"] == hashlib.md5(CODE).hexdigest()
    assert base64.b64decode(o["blob"])[:3] == b"BZh"  # bz2, as MIOpen compresses
    assert bz2.decompress(base64.b64decode(o["blob"])) == CODE
    with pytest.raises(KernelObjectError, match="empty code object"):
        encode_kernel_object(KernelBinary("k.s", "", b""))


@given(
    name=st.text(min_size=1, max_size=20),
    args=st.text(max_size=40),
    code=st.binary(min_size=1, max_size=2000),
)
def test_encode_then_decode_gives_the_kernel_back(name, args, code):
    kernel = KernelBinary(name, args, code)
    back, meta = decode_kernel_object(encode_kernel_object(kernel), solver="S")
    assert back == kernel
    assert (meta.kernel_file, meta.comp_options, meta.uncompressed_size) == (name, args, len(code))
