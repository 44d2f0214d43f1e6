"""MIOpen db keys: ``tuna/problems/keys.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings

import tuna.problems.keys as keys_module
from tuna.errors import DbKeyError
from tuna.problems import (
    ConvProblem,
    InvalidProblemError,
    find_db_key,
    is_legacy_find_entry,
    legacy_find_entry_as_v2,
    network_config,
    parse_driver_line,
    parse_find_db_key,
    parse_perf_db_key,
    parse_text_db_line,
    perf_db_columns,
    perf_db_key,
    to_driver_line,
)

from .test_properties import conv_problems

DATA = Path(__file__).resolve().parents[1] / "data"
FDB_FILES = [  # the samples of keys in the plain forms; the others have their own tests
    DATA / "miopen" / n
    for n in ("gfx90a68.HIP.fdb.sample.txt", "old_gfx90a68.HIP.fdb.txt", "usr_gfx90a68.HIP.fdb.txt")
]

WORKED = "conv -n 128 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -g 1"
WORKED_KEYS = {
    "F": "3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F",
    "B": "64-112-112-7x7-3-224-224-128-3x3-2x2-1x1-0-NCHW-FP32-B",
    "W": "64-112-112-7x7-3-224-224-128-3x3-2x2-1x1-0-NCHW-FP32-W",
}


def one(line: str) -> ConvProblem:
    (p,) = parse_driver_line(line)
    return p


def fdb_keys(path: Path) -> list[str]:
    return [line.split("=", 1)[0] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("forw", "direction"), [(1, "F"), (2, "B"), (4, "W")])
def test_worked_example(forw: int, direction: str) -> None:
    p = one(f"{WORKED} -F {forw}")
    key = WORKED_KEYS[direction]
    assert find_db_key(p) == key
    assert parse_find_db_key(key) == p


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (  # mituna.md §7
            "conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -p 0 -q 0 -u 2 -v 2 -F 2",
            "2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B",
        ),
        (  # the gfx942130 line of reference §4.2
            "convfp16 -n 16 -c 512 -H 13 -W 13 -k 1000 -y 1 -x 1 -F 2",
            "1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B",
        ),
        (  # the real 3D key of reference §2.1
            "conv -_ 3 -n 4 -c 1024 -! 4 -H 14 -W 14 -k 2048 -@ 1 -y 1 -x 1 -# 2 -u 2 -v 2 -p 0 "
            "-q 0 -F 1",
            "1024-4-14-14-1x1x1-2048-2-7-7-4-0x0x0-2x2x2-1x1x1-0-NCDHW-FP32-F",
        ),
        (
            "convbfp16 -n 128 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -I NHWC -f NHWC -O NHWC -F 1",
            "512-7-7-1x1-2048-7-7-128-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-BF16-F",
        ),
        (
            "conv -n 128 -c 256 -H 14 -W 14 -k 256 -p 1 -q 1 --in_layout NHWC --fil_layout NHWC "
            "--out_layout NHWC -F 4",
            "256-14-14-3x3-256-14-14-128-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-W",
        ),
        (  # x NHWC; for B the key's in is dy (y) and its out dx (x)
            "conv -n 2 -c 8 -k 16 -H 8 -W 8 -y 1 -x 1 -I NHWC -F 1",
            "8-8-8-1x1-16-8-8-2-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-F",
        ),
        (
            "conv -n 2 -c 8 -k 16 -H 8 -W 8 -y 1 -x 1 -I NHWC -F 2",
            "16-8-8-1x1-8-8-8-2-0x0-1x1-1x1-0-NCHW-NCHW-NHWC-FP32-B",
        ),
        (
            "conv -n 32 -c 1024 -H 28 -W 28 -k 1024 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32 -F 1",
            "1024-28-28-3x3-1024-14-14-32-1x1-2x2-1x1-0-NCHW-FP32-F_g32",
        ),
        (
            "conv -n 32 -c 1024 -H 28 -W 28 -k 1024 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32 -F 4",
            "1024-14-14-3x3-1024-28-28-32-1x1-2x2-1x1-0-NCHW-FP32-W_g32",
        ),
        (
            "convint8 -n 4 -c 16 -H 8 -W 8 -k 32 -p 1 -q 1 -F 1",
            "16-8-8-3x3-32-8-8-4-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F",
        ),
        (
            "convint8 -n 4 -c 16 -H 8 -W 8 -k 32 -p 1 -q 1 -F 2",
            "32-8-8-3x3-16-8-8-4-1x1-1x1-1x1-0-NCHW-INT32INT8INT8-B",
        ),
        (
            "conv -n 4 -c 16 -H 8 -W 8 -k 32 -p 1 -q 1 -U fp8 -R bf8 -g 2 -F 1",
            "16-8-8-3x3-32-8-8-4-1x1-1x1-1x1-0-NCHW-FP32-F_g2_ciFP8_cwBF8",
        ),
        (  # casts follow their tensors: x's cast is the key's out cast for B
            "conv -n 4 -c 16 -H 8 -W 8 -k 32 -p 1 -q 1 -U fp8 -R bf8 -F 2",
            "32-8-8-3x3-16-8-8-4-1x1-1x1-1x1-0-NCHW-FP32-B_cwBF8_coFP8",
        ),
        (
            "conv -n 1 -c 4 -H 9 -W 5 -k 4 -y 3 -x 1 -p 0 -q 2 -u 1 -v 2 -l 3 -j 1 -F 1",
            "4-9-5-3x1-4-3-5-1-0x2-1x2-3x1-0-NCHW-FP32-F",
        ),
    ],
)
def test_keys(line: str, key: str) -> None:
    p = one(line)
    assert find_db_key(p) == key
    assert parse_find_db_key(key) == p


def test_old_plain_int8_key() -> None:
    p = parse_find_db_key("16-8-8-3x3-32-8-8-4-1x1-1x1-1x1-0-NCHW-INT8-F")
    assert p.types == ("INT8", "INT8", "INT8")
    assert p.cmd == "convint8"


@pytest.mark.parametrize(("forw", "key_dir"), [(1, "B"), (2, "F"), (4, "W")])
def test_transposed_keys(forw: int, key_dir: str) -> None:
    """A transposed conv is keyed as the conv whose x is its y: the worked keys, F and B swapped."""
    trans = one(
        "conv -m trans -n 128 -c 64 -H 112 -W 112 -k 3 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -Y 1 -X 1 "
        f"-F {forw}"
    )
    assert trans.out_size == (224, 224)
    key = WORKED_KEYS[key_dir]
    assert find_db_key(trans) == key
    parsed = parse_find_db_key(key)
    assert parsed == one(f"{WORKED} -F {dict(F=1, B=2, W=4)[key_dir]}")
    assert parsed.mode == "conv"


def test_transposed_key_layouts_follow_the_tensors() -> None:
    line = "conv -m trans -n 1 -c 8 -H 4 -W 4 -k 16 -y 1 -x 1 -I NHWC -F {}"
    assert (
        find_db_key(one(line.format(1))) == "8-4-4-1x1-16-4-4-1-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-B"
    )
    assert (
        find_db_key(one(line.format(2))) == "16-4-4-1x1-8-4-4-1-0x0-1x1-1x1-0-NCHW-NCHW-NHWC-FP32-F"
    )
    assert (
        find_db_key(one(line.format(4))) == "8-4-4-1x1-16-4-4-1-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-W"
    )


@pytest.mark.parametrize("path", FDB_FILES, ids=lambda p: p.name)
def test_every_shipped_key_round_trips(path: Path) -> None:
    keys = fdb_keys(path)
    assert len(keys) == {"gfx90a68.HIP.fdb.sample.txt": 612}.get(path.name, 4)
    for key in keys:
        assert find_db_key(parse_find_db_key(key)) == key
        perf = perf_db_key(parse_find_db_key(key))
        assert perf_db_key(parse_perf_db_key(perf)) == perf


def test_shipped_keys_cover_the_forms() -> None:
    keys = [k for path in FDB_FILES for k in fdb_keys(path)]
    assert len(FDB_FILES) == 3
    assert {len(k.split("-")) for k in keys} == {15, 17}
    problems = [parse_find_db_key(k) for k in keys]
    assert {p.spatial_dim for p in problems} == {2, 3}
    assert {p.direction for p in problems} == {"F", "B", "W"}
    assert any(p.layouts == ("NHWC",) * 3 for p in problems)
    assert max(p.group_count for p in problems) == 1024


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "has 1 dash fields"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32", "has 14 dash fields"),
        ("03-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F", "field 1 (in channels) '03'"),
        ("3-224-2a4-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F", "field 2 (in spatial dims)"),
        ("3-224-224-7x7-64-112-112-128-3x3x3-2x2-1x1-0-NCHW-FP32-F", "field 9 (pads) '3x3x3'"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NHWC-FP32-F", "single layout 'NHWC'"),
        (
            "3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-NCHW-NCHW-FP32-F",
            "would be written '3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F'",
        ),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32FP32FP32-F", "three different"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP33-F", "'FP33' is not a data type"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-X", "field 15 (direction) 'X'"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F_g0", "field 15 (direction)"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F_g1", "would be written"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F_cwFP8_ciFP8", "(direction)"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F_g7", "group_count 7 does not"),
        (
            "3-224-224-7x7-64-111-112-128-3x3-2x2-1x1-0-NCHW-FP32-F",
            "y dims 111x112 do not follow from x 224x224, filter 7x7, pads 3x3, strides 2x2, "
            "dilations 1x1 (the conv formula gives 112x112)",
        ),
        (
            "64-112-112-7x7-3-230-224-128-3x3-2x2-1x1-0-NCHW-FP32-B",
            "y dims 112x112 do not follow from x 230x224",
        ),
        (
            "3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCDHW-NCHW-NCHW-FP32-F",
            "in_layout 'NCDHW' is not a 2D layout",
        ),
        ("1024-4-14-14-1x1x1-2048-2-7-7-4-0x0x0-2x2x2-1x1x1-0-NCHW-FP32-F", "single layout 'NCHW'"),
    ],
)
def test_bad_find_db_keys(key: str, message: str) -> None:
    with pytest.raises(DbKeyError) as info:
        parse_find_db_key(key)
    assert message in str(info.value)
    assert repr(key) in str(info.value)


def test_perf_db_key_and_columns() -> None:
    p = one("convfp16 -n 16 -c 512 -H 13 -W 13 -k 1000 -y 1 -x 1 -F 2")
    row = ("NCHW", "FP16", "B", 2, 1000, 13, 13, 1, 1, 1, 1, 512, 16, 0, 0, 0, 1, 1, 0, 1, 1, 0,
           0, 1)  # fmt: skip
    columns = perf_db_columns(p)
    assert tuple(columns.values()) == row  # the shipped gfx942130 row of reference §2.3
    assert list(columns)[:4] == ["layout", "data_type", "direction", "spatial_dim"]
    assert list(columns)[-2:] == ["bias", "group_count"]
    assert perf_db_key(p.with_direction("W")) == (
        "2x1000x13x13x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xW"
    )
    assert perf_db_key(one(f"{WORKED} -F 1")) == (
        "2x3x224x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF"
    )


def test_perf_db_key_3d_layouts_casts() -> None:
    p = parse_find_db_key("1024-4-14-14-1x1x1-2048-2-7-7-4-0x0x0-2x2x2-1x1x1-0-NCDHW-FP32-F")
    assert perf_db_key(p) == "3x1024x14x14x4x1x1x1x2048x4x0x0x0x2x2x2x1x1x1x0x1xNCDHWxFP32xF"
    assert parse_perf_db_key(perf_db_key(p)) == p
    mixed = one("conv -n 2 -c 8 -k 16 -H 8 -W 8 -y 1 -x 1 -I NHWC -U fp8 -g 8 -F 2")
    assert perf_db_key(mixed) == "2x16x8x8x1x1x1x1x8x2x0x0x0x1x1x0x1x1x0x0x8xNCHWxFP32xB"


def test_perf_db_key_b_w_give_the_smallest_x() -> None:
    p = one("conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2")
    key = perf_db_key(p)
    assert key == "2x2048x7x7x1x1x1x1x1024x128x0x0x0x2x2x0x1x1x0x0x1xNCHWxFP32xB"
    back = parse_perf_db_key(key)
    assert back.in_size == (13, 13)  # 14 and 13 both give y = 7
    assert back.with_direction("F") != p.with_direction("F")
    assert perf_db_key(back) == key
    forward = one("conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 1")
    assert parse_perf_db_key(perf_db_key(forward)) == forward


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("2x3x224", "has 3 x-separated fields; expected 24"),
        ("2x3x224x224x2x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF", "would be written"),
        ("4x3x224x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF", "spatial_dim) 4"),
        ("2x3x224x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xQ", "(direction) 'Q'"),
        ("2x3x224x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNHWCxFP3xF", "(data type)"),
        ("2x3x22a4x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF", "field 3 (in_h)"),
        ("2x3x224x224x1x7x7x1x64x128x3x3x0x2x2x0x1x1x0x0x1xNCDHWxFP32xF", "not a 2D layout"),
        ("2x1x2x2x1x1x1x1x1x1x5x5x0x1x1x0x1x1x0x0x1xNCHWxFP32xB", "y dims 2x2 do not follow"),
    ],
)
def test_bad_perf_db_keys(key: str, message: str) -> None:
    with pytest.raises(DbKeyError, match="perf-db key") as info:
        parse_perf_db_key(key)
    assert message in str(info.value)


def test_network_config() -> None:
    p = one(f"{WORKED} -F 1")
    assert network_config(p) == "3x224x224x7x7x64x112x112x128xNCHWxFP32x3x3x2x2x1x1x1xF"
    assert network_config(p, alpha_beta_case="Default") == (
        "3x224x224x7x7x64x112x112x128xNCHWxFP32x3x3x2x2x1x1x1xFxDefault"
    )
    assert network_config(p.with_direction("B")) == (
        "64x112x112x7x7x3x224x224x128xNCHWxFP32x3x3x2x2x1x1x1xB"
    )
    q = one("conv -n 4 -c 16 -H 8 -W 8 -k 32 -p 1 -q 1 -U fp8 -R bf8 -g 2 -I NHWC -F 1")
    assert network_config(q) == (
        "16x8x8x3x3x32x8x8x4xNHWCxNCHWxNCHWxFP32xciFP8cwBF8x1x1x1x1x1x1x2xF"
    )


# --- text db records ------------------------------------------------------------------------------

GFX942_LINE = (
    "1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B=ConvAsmImplicitGemmGTCDynamicBwdXdlopsNH"
    "WC:0.051639,13714688,miopenConvolutionBwdDataAlgoImplicitGEMM;GemmBwd1x1_stride1:0.059578,0,mi"
    "openConvolutionBwdDataAlgoGEMM;ConvBinWinogradRxSf3x2:0.139621,0,miopenConvolutionBwdDataAlgoW"
    "inograd;ConvBinWinogradRxSf2x3g1:0.322663,0,miopenConvolutionBwdDataAlgoWinograd\n"
)


def test_parse_text_db_line() -> None:
    key, entries = parse_text_db_line(GFX942_LINE)
    assert key == "1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B"
    assert entries == [
        (
            "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC",
            "0.051639,13714688,miopenConvolutionBwdDataAlgoImplicitGEMM",
        ),
        ("GemmBwd1x1_stride1", "0.059578,0,miopenConvolutionBwdDataAlgoGEMM"),
        ("ConvBinWinogradRxSf3x2", "0.139621,0,miopenConvolutionBwdDataAlgoWinograd"),
        ("ConvBinWinogradRxSf2x3g1", "0.322663,0,miopenConvolutionBwdDataAlgoWinograd"),
    ]
    assert not any(is_legacy_find_entry(entry_id) for entry_id, _ in entries)
    ck = "k=ConvHipImplicitGemmFwdXdlops:DeviceConv2dFwdXdl<256, 128, 64, 4, Default, 4>"
    assert parse_text_db_line(ck)[1] == [
        ("ConvHipImplicitGemmFwdXdlops", "DeviceConv2dFwdXdl<256, 128, 64, 4, Default, 4>")
    ]


def test_legacy_find_entries() -> None:
    text = (DATA / "miopen" / "old_gfx90a68.HIP.fdb.txt").read_text().splitlines()[0]
    key, entries = parse_text_db_line(text)
    assert key == "1-160-698-5x5-64-79-348-1-1x1-2x2-1x1-0-NCHW-FP32-F"
    entry_id, values = entries[0]
    assert is_legacy_find_entry(entry_id)
    assert legacy_find_entry_as_v2(entry_id, values) == (
        "ConvHipImplicitGemmForwardV4R4Xdlops_Padded_Gemm",
        "0.02352,0,miopenConvolutionFwdAlgoImplicitGEMM",
    )
    assert is_legacy_find_entry("miopenTransposeBwdDataAlgoGEMM")
    assert not is_legacy_find_entry("miopenConvolutionFwdAlgoMagic")
    with pytest.raises(DbKeyError, match="not an algorithm name"):
        legacy_find_entry_as_v2("GemmFwdRest", "1,2,3,4,5")
    with pytest.raises(DbKeyError, match="expected solver,time,workspace,algo,config"):
        legacy_find_entry_as_v2("miopenConvolutionFwdAlgoGEMM", "GemmFwdRest,0.1,0")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("no-equals-sign", "has no '='"),
        ("=A:1", "key '' is empty"),
        ("k:x=A:1", "key 'k:x' is empty or holds"),
        ("k=", "entry 1 '' is not ID:VALUES"),
        ("k=A", "entry 1 'A' is not ID:VALUES"),
        ("k=:1", "entry 1 ':1' is not ID:VALUES"),
        ("k=A:1;", "entry 2 '' is not ID:VALUES"),
        ("k=A:1;A:2", "id 'A' appears twice"),
        ("k=A:1:2", "holds a second ':'"),
        ("k=A:1=2", "holds a second '='"),
    ],
)
def test_bad_text_db_lines(line: str, message: str) -> None:
    with pytest.raises(DbKeyError, match="text db record") as info:
        parse_text_db_line(line)
    assert message in str(info.value)


def test_every_shipped_record_parses() -> None:
    for path in FDB_FILES:
        for line in path.read_text().splitlines():
            key, entries = parse_text_db_line(line)
            legacy = {is_legacy_find_entry(entry_id) for entry_id, _ in entries}
            assert len(legacy) == 1
            assert legacy == {path.name != "gfx90a68.HIP.fdb.sample.txt"}
            for entry_id, values in entries:
                if legacy == {True}:
                    solver, v2 = legacy_find_entry_as_v2(entry_id, values)
                    assert v2.endswith("," + entry_id)


# --- the keys MIOpen ships that are not of the plain forms (issue #12) ---------------------------

SAME_PADDING = "128-10-10-3x3-256-5-5-100-0x0-2x2-1x1-0-NCHW-BF16-F"  # gfx1030_36, line 301


def test_same_padding_keys_are_problems_and_stay_exact() -> None:
    p = parse_find_db_key(SAME_PADDING)
    assert (p.pad_mode, p.in_size, p.pad, p.stride, p.out_size) == (
        "same", (10, 10), (0, 0), (2, 2), (5, 5),
    )  # fmt: skip
    assert find_db_key(p) == SAME_PADDING
    with pytest.raises(InvalidProblemError, match="cannot be written on a MIOpenDriver line"):
        to_driver_line(p)
    # a key whose y follows from neither formula is still refused
    with pytest.raises(DbKeyError, match="y dims 6x6 do not follow"):
        parse_find_db_key(SAME_PADDING.replace("-5-5-", "-6-6-"))


def test_same_padding_keys_with_the_pads_miopen_computed_are_problems_and_stay_exact() -> None:
    """MIOpen writes a "same"-padding problem with the pads it computed for it
    (``max(fil - (in % stride or stride), 0) // 2``) and y = ceil(x / stride), which the conv
    formula does not give from those pads (issue #24: 24 keys of gfx1030_36 were refused)."""
    keys = fdb_keys(DATA / "miopen" / "gfx1030_samepad.fdb.txt")
    assert len(keys) == 6
    for key in keys:
        p = parse_find_db_key(key)
        assert (p.pad_mode, p.in_size, p.pad, p.stride, p.out_size) == (
            "same", (300, 300), (2, 2), (2, 2), (150, 150),
        ), key  # fmt: skip
        assert find_db_key(p) == key
    # pads that MIOpen would not have computed for the problem are still refused
    key = keys[1].replace("-2x2-2x2-", "-1x1-2x2-")
    with pytest.raises(DbKeyError, match="y dims 150x150 do not follow"):
        parse_find_db_key(key)


def test_every_key_of_the_other_samples_parses_but_the_malformed_legacy_ones() -> None:
    counts = {}
    for name in ("gfx90878.HIP.fdb.sample.txt", "gfx1030_36.HIP.fdb.sample.txt",
                 "gfx906_60.OpenCL.fdb.sample.txt"):  # fmt: skip
        bad = []
        for key in fdb_keys(DATA / "miopen" / name):
            try:
                assert find_db_key(parse_find_db_key(key)) == key
            except DbKeyError as e:
                bad.append(str(e))
        counts[name] = len(bad)
        # the only keys to refuse: 2D pads with 3D filters, in the OpenCL file
        assert all("(pads) '0x0' is not 3 values" in b for b in bad), bad
    assert counts == {
        "gfx90878.HIP.fdb.sample.txt": 0,
        "gfx1030_36.HIP.fdb.sample.txt": 0,
        "gfx906_60.OpenCL.fdb.sample.txt": 3,
    }


def test_int8_keys_have_no_driver_line_but_are_problems() -> None:
    p = parse_find_db_key("1024-14-14-1x1-2048-7-7-1-0x0-2x2-1x1-0-NCHW-INT8-F")
    assert p.types == ("INT8", "INT8", "INT8")
    with pytest.raises(InvalidProblemError, match="no MIOpenDriver base arg"):
        to_driver_line(p)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("3-224-224-7x7-64-112-112-2147483648-3x3-2x2-1x1-0-NCHW-FP32-F",
         "field 8 (batch size) '2147483648' is not canonical integers of at most 2147483647"),
        ("3-224-224-7x7-64-112-112-" + "9" * 5000 + "-3x3-2x2-1x1-0-NCHW-FP32-F",
         "field 8 (batch size) '999999999999...(5000 characters)'"),
        ("3-224-224-7x7-64-112-112-128-3x3-2x2-1x1-0-NCHW-FP32-F_g4294967296",
         "group count '4294967296' is above 2147483647"),
    ],
)  # fmt: skip
def test_key_values_outside_a_c_int_are_refused(key: str, message: str) -> None:
    with pytest.raises(DbKeyError) as e:
        parse_find_db_key(key)
    assert message in str(e.value)


def test_perf_key_values_outside_a_c_int_are_refused() -> None:
    key = "2x3x224x224x1x7x7x1x64x2147483648x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF"
    with pytest.raises(DbKeyError, match="'2147483648' is not a canonical integer of at most"):
        parse_perf_db_key(key)


@given(conv_problems(modes=("conv",)))
@settings(max_examples=300, deadline=None)
def test_the_fast_path_gives_what_the_full_parser_gives(p: ConvProblem) -> None:
    """``_plain`` (the common key forms, fast) agrees with the full parser, or stands aside."""
    key = find_db_key(p)
    fast = keys_module._plain(key)
    full = _full_parse(key)
    assert fast is None or fast == full


def test_the_fast_path_takes_most_shipped_keys() -> None:
    keys = [k for path in FDB_FILES for k in fdb_keys(path)]
    fast = [keys_module._plain(k) for k in keys]
    assert sum(f is not None for f in fast) > 0.9 * len(keys)
    assert all(f is None or f == _full_parse(k) for f, k in zip(fast, keys, strict=True))


def _full_parse(key: str) -> ConvProblem:
    return keys_module._parse_full(key)


def _mutants(key: str) -> list[str]:
    """Keys near ``key`` that the fast path must refuse or read as the full parser does: each
    dash field and each value in it changed to a leading zero, 0, 1, a 10-digit value, one
    more or less; a written group count of 1 and of 2; three default layouts."""
    out = [key + "_g1", key + "_g2", key + "_g01", key.replace("-NCHW-", "-NCHW-NCHW-NCHW-")]
    out.append(key.replace("-NCDHW-", "-NCDHW-NCDHW-NCDHW-"))
    fields = key.split("-")
    for i, f in enumerate(fields):
        values = f.split("x")
        for j, v in enumerate(values):
            if not v.isdigit():
                continue
            for new in ("0" + v, "0", "1", "2147483647", "2147483648", "999999999",
                        str(int(v) + 1), str(max(int(v) - 1, 0)), "16384", "16385"):  # fmt: skip
                changed = [*values[:j], new, *values[j + 1 :]]
                out.append("-".join([*fields[:i], "x".join(changed), *fields[i + 1 :]]))
    return out


def _outcome(parse: Callable[[str], ConvProblem | None], key: str) -> object:
    try:
        return parse(key)
    except DbKeyError as e:
        return f"refused: {e}"


def test_the_fast_path_reads_near_keys_as_the_full_parser_does() -> None:
    """Around every shipped key of the plain forms: where the fast path takes a key, the full
    parser gives the same problem, the problem is plainly valid and its key is the key; where
    the full parser refuses a key, the fast path stands aside (so the error is the same)."""
    keys = [k for path in FDB_FILES for k in fdb_keys(path)]
    taken = 0
    for key in keys[::7]:
        for near in _mutants(key):
            fast = keys_module._plain(near)
            full = _outcome(_full_parse, near)
            if fast is None:
                continue
            taken += 1
            assert fast == full, near
            assert fast._plainly_valid() and find_db_key(fast) == near, near
    assert taken > 1000
