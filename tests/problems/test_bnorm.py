"""Batch norm: ``tuna/problems/bnorm.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuna.errors import DbKeyError, DriverLineError
from tuna.problems import (
    BnProblem,
    InvalidProblemError,
    bnorm_key,
    is_bnorm_line,
    parse_bnorm_key,
    parse_bnorm_line,
    to_bnorm_driver_line,
)

DATA = Path(__file__).resolve().parents[1] / "data"


def test_batch_norm_file() -> None:
    lines = [line for line in (DATA / "driver" / "batch_norm.txt").read_text().splitlines() if line]
    assert len(lines) == 28
    problems = [parse_bnorm_line(line) for line in lines]
    assert [p.direction for p in problems].count("BWD") == 12
    assert [p.direction for p in problems].count("FWD_TRAIN") == 12
    assert [p.direction for p in problems].count("FWD_INFER") == 4
    assert len({bnorm_key(p) for p in problems}) == 28
    for p in problems:
        assert (p.data_type, p.param_type, p.batchsize, p.mode, p.layout) == (
            "FP16",
            "FP16",
            256,
            1,
            "NCHW",
        )
        assert parse_bnorm_key(bnorm_key(p)) == p
        assert parse_bnorm_line(to_bnorm_driver_line(p)) == p
    assert problems[0] == BnProblem(
        data_type="FP16",
        param_type="FP16",
        batchsize=256,
        in_channels=1024,
        in_d=0,
        in_h=14,
        in_w=14,
        layout="NCHW",
        mode=1,
        direction="BWD",
        save=False,
        run=True,
        alpha=1.0,
        beta=0.0,
    )
    assert bnorm_key(problems[0]) == "bn-FP16-NCHW-256-1024-14-14-m1-BWD-r"
    assert bnorm_key(problems[1]) == "bn-FP16-NCHW-256-1024-14-14-m1-FWD_TRAIN-s-r"
    assert bnorm_key(problems[2]) == "bn-FP16-NCHW-256-1024-14-14-m1-FWD_INFER-s"
    assert to_bnorm_driver_line(problems[1]) == (
        "./bin/MIOpenDriver bnormfp16 -n 256 -c 1024 -H 14 -W 14 -m 1 --forw 1 -b 0 -s 1 -r 1 "
        "--layout NCHW"
    )


def test_defaults_and_long_flags() -> None:
    p = parse_bnorm_line("MIOpenDriver bnorm -F 1")
    assert p == BnProblem()
    assert (p.batchsize, p.in_channels, p.in_h, p.in_w, p.in_d, p.layout) == (
        32,
        3,
        32,
        32,
        0,
        "NCHW",
    )
    assert bnorm_key(p) == "bn-FP32-NCHW-32-3-32-32-m0-FWD_TRAIN"
    q = parse_bnorm_line(
        "bnormbfp16fp32 --batchsize 8 --in_channels 4 --in_d 2 --in_h 5 --in_w 6 --layout ndhwc "
        "--mode 0 --back 1 --save 1 --run 0 --alpha 0.5 --beta 1e-05 --iter 3 --verify 0 "
        "--time 1 --printconv 0 --wall 1"
    )
    assert (q.data_type, q.param_type, q.in_d, q.layout, q.direction) == (
        "BF16",
        "FP32",
        2,
        "NDHWC",
        "BWD",
    )
    assert (q.alpha, q.beta, q.save, q.run) == (0.5, 1e-05, True, False)
    assert bnorm_key(q) == "bn-BF16FP32-NDHWC-8-4-2-5-6-m0-BWD-s-a0.5-b1e-05"
    assert parse_bnorm_key(bnorm_key(q)) == q
    assert to_bnorm_driver_line(q) == (
        "./bin/MIOpenDriver bnormbfp16fp32 -n 8 -c 4 -D 2 -H 5 -W 6 -m 0 --forw 0 -b 1 -s 1 "
        "-A 0.5 -B 1e-05 --layout NDHWC"
    )
    assert parse_bnorm_line(to_bnorm_driver_line(q)) == q
    assert parse_bnorm_line("bnorm -D 3 -F 2 -A -2 -B -.5").layout == "NCDHW"
    assert bnorm_key(parse_bnorm_line("bnormfp16fp32 -D 3 -F 2 -A -2 -B -.5")) == (
        "bn-FP16FP32-NCDHW-32-3-3-32-32-m0-FWD_INFER-a-2.0-b-0.5"
    )


def test_routing() -> None:
    assert is_bnorm_line("miopenBatchNormalizationForwardTraining: ./bin/MIOpenDriver bnorm -F 1")
    assert not is_bnorm_line("./bin/MIOpenDriver conv -n 2")
    assert not is_bnorm_line("nothing here")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bnorm -n 2", "neither --forw (1 or 2) nor -b 1 is set"),
        ("bnorm --forw 0 -b 0", "neither --forw (1 or 2) nor -b 1 is set"),
        ("bnorm --forw 1 -b 1", "--forw 1 and -b 1 are both set"),
        ("bnorm -F 3", "flag -F (--forw): '3' is not between 0 and 2"),
        ("bnorm -F 1 -b 2", "flag -b (--back): '2' is not between 0 and 1"),
        ("bnorm -F 1 -m 2", "flag -m (--mode): '2' is not between 0 and 1"),
        ("bnorm -F 1 -n x", "flag -n (--batchsize): 'x' is not an integer"),
        ("bnorm -F 1 -A one", "flag -A (--alpha): 'one' is not a number"),
        ("bnorm -F 1 -B nan", "flag -B (--beta): 'nan' is not a number"),
        (
            "bnorm -F 1 -L nhwc",
            "flag -L (--layout): 'nhwc' is not one of NCHW, NHWC (in_d 0); short",
        ),
        ("bnorm -F 1 --layout NCDHW", "'NCDHW' is not one of NCHW, NHWC (in_d 0)"),
        ("bnorm -F 1 -D 2 -L NHWC", "'NHWC' is not one of NCDHW, NDHWC (in_d 2)"),
        ("bnorm -F 1 -k 3", "unknown flag '-k'"),
        ("bnorm -F 1 --verification_cache x", "unknown flag '--verification_cache'"),
        ("bnorm -F", "flag -F (--forw) has no value"),
        ("bnorm -F 1 -c 0", "impossible batch norm: in_channels 0 is not positive"),
        ("bnorm -F 1 -D -1", "impossible batch norm: in_d -1 is negative"),
        ("./bin/MIOpenDriver conv -n 2", "'conv' is a convolution line, not batch norm"),
        ("./bin/MIOpenDriver bnormbfp16 -F 1", "MIOpenDriver does not accept it"),
        ("./bin/MIOpenDriver bnormfp32 -F 1", "unknown base arg 'bnormfp32'"),
    ],
)
def test_errors(line: str, message: str) -> None:
    with pytest.raises(DriverLineError) as info:
        parse_bnorm_line(line)
    assert message in info.value.reason


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("bn-FP16-NCHW-256-1024-14-14-m1", "is not of the form"),
        ("bn-FP64-NCHW-256-1024-14-14-m1-BWD", "data type 'FP64' is not known"),
        ("bn-FP16-NCHW-256-1024-14-14-m1-SIDEWAYS", "direction 'SIDEWAYS'"),
        ("bn-FP16-NCHW-256-1024-14-14-m2-BWD", "mode 2"),
        ("bn-FP16-NCHW-256-1024-3-14-14-m1-BWD", "layout 'NCHW' is not one of NCDHW, NDHWC"),
        ("bn-FP16-NCHW-0256-1024-14-14-m1-BWD", "is not canonical"),
        ("bn-FP16FP16-NCHW-256-1024-14-14-m1-BWD", "is not canonical"),
        ("bn-FP16-NCHW-256-1024-14-14-m1-BWD-a1.0", "is not canonical"),
        ("bn-FP16-NCHW-256-1024-14-14-m1-BWD-a1.50", "is not canonical"),
        ("bn-FP16-NCHW-256-1024-14-14-m1-BWD-ax", "batch-norm key"),
        ("bn-FP16-NCHW-256-1024-14-14-m1-BWD-r-s", "is not of the form"),
    ],
)
def test_bad_keys(key: str, message: str) -> None:
    with pytest.raises(DbKeyError) as info:
        parse_bnorm_key(key)
    assert message in str(info.value)


def test_problem_validation() -> None:
    with pytest.raises(InvalidProblemError, match="types FP16/BF16 match no bnorm base arg"):
        BnProblem(data_type="FP16", param_type="BF16")
    with pytest.raises(InvalidProblemError, match="must be finite"):
        BnProblem(alpha=float("inf"))
    assert BnProblem(in_d=4).layout == "NCDHW"
    assert BnProblem(data_type="FP16", param_type="FP32").cmd == "bnormfp16fp32"


def test_conveniences() -> None:
    p = parse_bnorm_line("bnormfp16 -n 256 -c 64 -H 56 -W 56 -m 1 --forw 2")
    assert p.with_batchsize(32).batchsize == 32
    assert p.with_batchsize(32).in_channels == 64
    assert p.to_driver_line() == to_bnorm_driver_line(p)
