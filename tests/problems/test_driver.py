"""MIOpenDriver conv grammar: ``tuna/problems/driver.py`` and ``ConvProblem``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings

import tuna.problems.driver as driver_module
from tuna.errors import DriverLineError
from tuna.problems import (
    ConvProblem,
    InvalidProblemError,
    base_arg,
    is_conv_line,
    parse_driver_line,
    to_driver_line,
)
from tuna.problems.driver import FlagSpec, FlagTable, parse_flags

from .test_properties import conv_problems

DATA = Path(__file__).resolve().parents[1] / "data"
DRIVER_FILES = sorted((DATA / "driver").glob("*.txt"))

WORKED = "conv -n 128 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -g 1"


def one(line: str) -> ConvProblem:
    problems = parse_driver_line(line)
    assert len(problems) == 1
    return problems[0]


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def test_shared_data_is_there() -> None:
    assert DATA.is_dir(), f"{DATA} is missing: the data-driven tests below would test nothing"
    assert len(DRIVER_FILES) == 9


def test_worked_example_fields() -> None:
    p = one(WORKED + " -F 1")
    assert p == ConvProblem(
        spatial_dim=2,
        batchsize=128,
        in_channels=3,
        out_channels=64,
        in_size=(224, 224),
        fil_size=(7, 7),
        pad=(3, 3),
        stride=(2, 2),
        dilation=(1, 1),
        trans_output_pad=(0, 0),
        group_count=1,
        mode="conv",
        direction="F",
        in_layout="NCHW",
        fil_layout="NCHW",
        out_layout="NCHW",
        in_type="FP32",
        wei_type="FP32",
        out_type="FP32",
        in_cast=None,
        wei_cast=None,
        out_cast=None,
        bias=0,
    )
    assert p.out_size == (112, 112)
    assert p.cmd == "conv"


def test_2d_defaults() -> None:
    # -n 100 is the default: a line must give one shape flag (see test_cut_short_lines)
    problems = parse_driver_line("./bin/MIOpenDriver conv -n 100")
    assert [p.direction for p in problems] == ["F", "B", "W"]
    p = problems[0]
    assert (p.batchsize, p.in_channels, p.out_channels) == (100, 3, 32)
    assert (p.in_size, p.fil_size, p.pad, p.stride, p.dilation) == (
        (32, 32),
        (3, 3),
        (0, 0),
        (1, 1),
        (1, 1),
    )
    assert p.out_size == (30, 30)
    assert (p.group_count, p.mode, p.layouts) == (1, "conv", ("NCHW", "NCHW", "NCHW"))


def test_3d_defaults_and_flags() -> None:
    p = one("MIOpenDriver conv -_ 3 -n 100 -F 4")
    assert (p.spatial_dim, p.in_size, p.fil_size, p.pad, p.stride, p.dilation) == (
        3,
        (32, 32, 32),
        (3, 3, 3),
        (0, 0, 0),
        (1, 1, 1),
        (1, 1, 1),
    )
    assert p.layouts == ("NCDHW", "NCDHW", "NCDHW")
    q = one(
        "MIOpenDriver conv --spatial_dim 3 -n 4 -c 8 --in_d 5 -H 6 -W 7 -k 16 --fil_d 2 -y 3 "
        "-x 1 --pad_d 1 -p 2 -q 0 --conv_stride_d 2 -u 1 -v 3 --dilation_d 2 -l 1 -j 1 -F 1"
    )
    assert (q.in_size, q.fil_size, q.pad, q.stride, q.dilation) == (
        (5, 6, 7),
        (2, 3, 1),
        (1, 2, 0),
        (2, 1, 3),
        (2, 1, 1),
    )
    assert q.out_size == (3, 8, 3)
    assert one("conv -_ 3 -! 5 -@ 2 -$ 1 -# 2 -^ 2 -n 4 -c 8 -k 16 -F 1").in_size == (5, 32, 32)


def test_long_flags_equal_short_flags() -> None:
    short = one(
        "conv -n 8 -c 16 -H 10 -W 12 -k 32 -y 3 -x 1 -p 1 -q 0 -u 2 -v 1 -l 2 -j 1 -g 4 -F 2"
    )
    long = one(
        "conv --batchsize 8 --in_channels 16 --in_h 10 --in_w 12 --out_channels 32 --fil_h 3 "
        "--fil_w 1 --pad_h 1 --pad_w 0 --conv_stride_h 2 --conv_stride_w 1 --dilation_h 2 "
        "--dilation_w 1 --group_count 4 --forw 2"
    )
    old = one(
        "conv -n 8 -c 16 -H 10 -W 12 -k 32 -y 3 -x 1 -p 1 -q 0 --conv_stride_0 2 "
        "--conv_stride_1 1 -l 2 -j 1 -g 4 -F 2"
    )
    assert short == long == old
    assert short.stride == (2, 1)


def test_last_value_wins() -> None:
    assert one("conv -H 10 --in_h 20 -H 30 -F 1").in_size == (30, 32)


@pytest.mark.parametrize(
    ("forw", "directions"),
    [
        (0, "FBW"),
        (1, "F"),
        (2, "B"),
        (3, "FB"),
        (4, "W"),
        (5, "FW"),
        (6, "BW"),
        (7, "FBW"),
    ],
)
def test_forw_bit_mask(forw: int, directions: str) -> None:
    problems = parse_driver_line(f"conv -n 2 -F {forw}")
    assert "".join(p.direction for p in problems) == directions
    assert {p.with_direction("F") for p in problems} == {problems[0].with_direction("F")}


@pytest.mark.parametrize(
    "line",
    [
        "./bin/MIOpenDriver " + WORKED,
        "miopenConvolutionBackwardData: ./bin/MIOpenDriver " + WORKED,
        "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver " + WORKED,
        "   \t ./bin/MIOpenDriver " + WORKED,
        "MIOpenDriver " + WORKED,
        "/opt/rocm/bin/MIOpenDriver " + WORKED,
        WORKED,
        "some log text: " + WORKED,
        WORKED + "\n",
    ],
)
def test_preamble_is_ignored(line: str) -> None:
    assert parse_driver_line(line.rstrip("\n") + " -F 1") == [one(WORKED + " -F 1")]
    assert is_conv_line(line)
    assert base_arg(line) == "conv"


def test_routing_helpers() -> None:
    assert base_arg("./bin/MIOpenDriver bnormfp16 -n 2") == "bnormfp16"
    assert base_arg("MIOpenDriver pool -n 2") == "pool"
    assert not is_conv_line("./bin/MIOpenDriver bnorm -n 2")
    assert not is_conv_line("hello world")
    assert not is_conv_line("")
    assert is_conv_line("convint8 -n 2")
    with pytest.raises(DriverLineError, match="no MIOpenDriver command"):
        base_arg("hello world")


@pytest.mark.parametrize(
    ("cmd", "types"),
    [
        ("conv", ("FP32", "FP32", "FP32")),
        ("convfp16", ("FP16", "FP16", "FP16")),
        ("convbfp16", ("BF16", "BF16", "BF16")),
        ("convint8", ("INT8", "INT8", "INT32")),
    ],
)
def test_base_arg_types(cmd: str, types: tuple[str, str, str]) -> None:
    p = one(f"MIOpenDriver {cmd} -n 2 -F 1")
    assert p.types == types
    assert p.cmd == cmd
    assert one("conv -n 2 -F 1").with_command(cmd) == p


@pytest.mark.parametrize(
    ("flags", "pad"),
    [
        ("-H 224 -W 224 -y 7 -x 7 -u 2 -v 2 -p 9 -q 9", (2, 2)),  # max(7 - 2, 0) // 2
        ("-H 225 -W 225 -y 7 -x 7 -u 2 -v 2", (3, 3)),  # max(7 - 225 % 2, 0) // 2
        ("-H 32 -W 31 -y 3 -x 3", (1, 1)),
        ("-H 32 -W 32 -y 1 -x 1 -u 2 -v 2", (0, 0)),  # never below 0
        ("-H 32 -W 32 -y 1 -x 5 -u 4 -v 4", (0, 0)),  # max(1 - 4, 0), max(5 - 4, 0) // 2
        ("-H 32 -W 32 -y 3 -x 3 -l 2 -j 2 -p 5 -q 6", (5, 6)),  # dilated: the driver leaves pads
        ("-H 32 -W 32 -y 1 -x 1 -l 2 -j 2 -u 3 -v 3", (0, 0)),  # 1x1 filter: recomputed anyway
    ],
)
def test_pad_mode_same(flags: str, pad: tuple[int, int]) -> None:
    assert one(f"conv {flags} -z same -F 1").pad == pad
    assert one(f"conv {flags} --pad_mode same -F 1").pad == pad


def test_pad_mode_same_output_size_follows_the_pads() -> None:
    p = one("conv -H 224 -W 224 -y 7 -x 7 -u 2 -v 2 -z same -F 1")
    assert p.out_size == (111, 111)  # (224 + 2*2 - 7) // 2 + 1, as the driver's descriptor has it


def test_pad_mode_valid_and_default() -> None:
    assert one("conv -p 3 -q 2 -z valid -F 1 -n 100").pad == (0, 0)
    assert one("conv -p 3 -q 2 -z default -F 1 -n 100").pad == (3, 2)
    assert one("conv -p 3 -q 2 -m trans -z valid -F 1 -n 100").pad == (3, 2)  # trans: ignored
    assert one("conv -p 3 -q 2 -m trans -z same -F 1 -n 100").pad == (3, 2)


def test_layouts() -> None:
    p = one("conv --in_layout nhwc --fil_layout Nhwc --out_layout NHWC -F 1 -n 100")
    assert p.layouts == ("NHWC", "NHWC", "NHWC")
    assert one("conv -I NHWC -f NCHW -O CHWN -F 1 -n 100").layouts == ("NHWC", "NCHW", "CHWN")
    assert one("conv -_ 3 -I NDHWC -F 1 -n 100").layouts == ("NDHWC", "NCDHW", "NCDHW")


def test_cast_types_and_trans() -> None:
    p = one("conv --in_cast_type fp8 -R bf8 -T -1 -F 1 -n 100")
    assert p.casts == ("FP8", "BF8", None)
    t = one("conv -m trans -H 7 -W 7 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 0 -F 1")
    assert (t.mode, t.trans_output_pad, t.out_size) == ("trans", (1, 0), (14, 13))
    assert one("conv -Y 1 -X 1 -F 1 -n 100").trans_output_pad == (0, 0)  # mode conv ignores them


def test_ignored_flags_and_tensor_vect() -> None:
    noisy = (
        "conv -n 2 -i 5 -V 0 -C /tmp/c -t 1 -w 2 -s 1 -P 0 -o 1 -d in.bin -e w.bin -b 1 -a b.bin "
        "-D dy.bin -S ConvDirectNaiveConvFwd -G 1 -r 0 -Z 0 -L 4 -F 1"
    )
    assert one(noisy) == one("conv -n 2 -F 1")
    long = (
        "conv -n 2 --iter 5 --verify 0 --time 1 --wall 1 --search 1 --printconv 0 --in_data x "
        "--weights y --bias 1 --in_bias z --dout_data q --solution -1 --gpualloc 1 --pad_val 0 "
        "--tensor_vect 0 -F 1"
    )
    assert one(long) == one("conv -n 2 -F 1")


@pytest.mark.parametrize(
    ("line", "message", "flag"),
    [
        ("conv -n 2 -K 3", "unknown flag '-K'", "-K"),
        ("conv -n 2 --foo 3", "unknown flag '--foo'", "--foo"),
        ("conv -n 2 --in_h=3", "--name=value form is not supported", "--in_h=3"),
        ("conv -n", "flag -n (--batchsize) has no value", "-n"),
        ("conv -F 1 --in_h", "flag -H (--in_h) has no value", "--in_h"),
        ("conv -n abc", "flag -n (--batchsize): 'abc' is not an integer", "-n"),
        ("conv -n 3x", "flag -n (--batchsize): '3x' is not an integer", "-n"),
        ("conv --in_w 2.5", "flag -W (--in_w): '2.5' is not an integer", "--in_w"),
        ("conv --in_d 1x", "flag -! (--in_d): '1x' is not an integer", "--in_d"),
        ("conv -n 2 stray", "unexpected argument 'stray'", "stray"),
        ("conv -I nhwc", "flag -I (--in_layout): 'nhwc' is not a layout", "-I"),
        ("conv --in_layout NCDHW", "'NCDHW' is not a 2D layout", "--in_layout"),
        ("conv -_ 3 -O NHWC", "flag -O (--out_layout): 'NHWC' is not a 3D layout", "-O"),
        ("conv -f NWHC", "flag -f (--fil_layout): 'NWHC' is not a layout", "-f"),
        ("conv -F 8", "flag -F (--forw): '8' is not a direction", "-F"),
        ("conv --forw -1", "flag -F (--forw): '-1' is not a direction", "--forw"),
        ("conv -_ 4", "flag -_ (--spatial_dim): '4' is not a spatial dimension", "-_"),
        ("conv -c 48 -k 64 -g 32", "flag -g (--group_count): '32' does not divide", "-g"),
        ("conv -c 64 -k 48 -g 32", "does not divide in_channels 64 and out_channels 48", "-g"),
        ("conv -g 0", "flag -g (--group_count): '0' does not divide", "-g"),
        ("conv -m deconv", "flag -m (--mode): 'deconv' is not one of conv, trans", "-m"),
        ("conv -z full", "flag -z (--pad_mode): 'full' is not one of default, same, valid", "-z"),
        ("conv -Z 1", "flag -Z (--tensor_vect): '1' asks for vectorised tensors", "-Z"),
        ("conv -U fp64", "flag -U (--in_cast_type): 'fp64' is not a cast type", "-U"),
        ("conv --wei_cast_type FP8", "'FP8' is not a cast type", "--wei_cast_type"),
    ],
)
def test_errors_name_the_flag_and_value(line: str, message: str, flag: str) -> None:
    with pytest.raises(DriverLineError) as info:
        parse_driver_line(line)
    assert message in info.value.reason
    assert info.value.flag == flag


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("./bin/MIOpenDriver convfp32 -n 2", "unknown base arg 'convfp32'"),
        ("./bin/MIOpenDriver", "has no base arg"),
        ("", "no MIOpenDriver command"),
        (
            "./bin/MIOpenDriver bnormfp16 -n 256 -c 64 -H 56 -W 56 -m 1 --forw 1 -b 0",
            "'bnormfp16' is a batch-norm line, not a convolution; parse it with parse_bnorm_line",
        ),
        ("./bin/MIOpenDriver pool -n 2 -m max", "'pool' is not a convolution or batch-norm line"),
        ("./bin/MIOpenDriver convfp8 -n 2", "use conv with --in_cast_type fp8"),
        ("conv -n 0", "impossible convolution: batchsize 0 is not positive"),
        ("conv -H -3", "impossible convolution: in_size (-3, 32) has a value below 1"),
        ("conv -u 0 -n 100", "impossible convolution: stride (0, 1) has a value below 1"),
        ("conv -p -1 -n 100", "impossible convolution: pad (-1, 0) is negative"),
    ],
)
def test_line_errors(line: str, message: str) -> None:
    with pytest.raises(DriverLineError) as info:
        parse_driver_line(line)
    assert message in info.value.reason


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            WORKED + " -F 2 -t 1",
            "./bin/MIOpenDriver conv -n 128 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 "
            "-v 2 -l 1 -j 1 -m conv -g 1 -F 2",
        ),
        (
            "convfp16 -_ 3 -n 4 -c 1024 -! 4 -H 14 -W 14 -k 2048 -@ 1 -y 1 -x 1 -# 2 -u 2 -v 2 "
            "-p 0 -q 0 -F 4",
            "./bin/MIOpenDriver convfp16 -n 4 -c 1024 --in_d 4 -H 14 -W 14 -k 2048 --fil_d 1 -y 1 "
            "-x 1 --pad_d 0 -p 0 -q 0 --conv_stride_d 2 -u 2 -v 2 --dilation_d 1 -l 1 -j 1 "
            "--spatial_dim 3 -m conv -g 1 -F 4",
        ),
        (
            "convbfp16 -n 8 -c 64 -k 64 -I NHWC -f NHWC -O NCHW -g 2 --in_cast_type fp8 -F 1",
            "./bin/MIOpenDriver convbfp16 -n 8 -c 64 -H 32 -W 32 -k 64 -y 3 -x 3 -p 0 -q 0 -u 1 "
            "-v 1 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --in_cast_type fp8 -m conv -g 2 "
            "-F 1",
        ),
        (
            "conv -m trans -n 1 -c 4 -k 8 -H 7 -W 7 -u 2 -v 2 -Y 1 -F 1",
            "./bin/MIOpenDriver conv -n 1 -c 4 -H 7 -W 7 -k 8 -y 3 -x 3 -p 0 -q 0 -u 2 -v 2 -l 1 "
            "-j 1 -Y 1 -X 0 -m trans -g 1 -F 1",
        ),
    ],
)
def test_to_driver_line(line: str, expected: str) -> None:
    p = one(line)
    assert to_driver_line(p) == expected
    assert parse_driver_line(expected) == [p]


def test_to_driver_line_refuses_what_the_driver_cannot_say() -> None:
    p = one("convint8 -n 2 -F 1")
    with pytest.raises(InvalidProblemError, match="no MIOpenDriver base arg"):
        to_driver_line(dataclasses.replace(p, out_type="INT8"))
    with pytest.raises(InvalidProblemError, match="bias 1"):
        to_driver_line(dataclasses.replace(p, bias=1))
    with pytest.raises(InvalidProblemError, match="x type FP8 has no MIOpenDriver base arg"):
        to_driver_line(dataclasses.replace(p, in_type="FP8"))


# --- every line of the shipped driver files -------------------------------------------------------

EXPECTED_COUNTS = {
    # file: (conv lines, conv problems, other lines)
    "alexnet.txt": (14, 14, 3),
    "batch_norm.txt": (0, 0, 28),
    "inception3.txt": (129, 129, 11),
    "long_flags_NCHW.txt": (4, 4, 0),
    "long_flags_NHWC.txt": (5, 5, 0),
    "resnet50.txt": (59, 59, 1),
    "resnet50_pytorch.txt": (60, 180, 0),
    "resnext101_pytorch.txt": (72, 184, 0),  # 56 lines without -F, 16 with
    "vgg16.txt": (26, 26, 5),
}


@pytest.mark.parametrize("path", DRIVER_FILES, ids=lambda p: p.name)
def test_every_driver_file_line(path: Path) -> None:
    conv_lines = problems = others = 0
    for line in lines_of(path):
        if not is_conv_line(line):
            others += 1
            assert base_arg(line) in ("pool", "bnormfp16")
            with pytest.raises(DriverLineError, match="not a convolution"):
                parse_driver_line(line)
            continue
        conv_lines += 1
        for p in parse_driver_line(line):
            problems += 1
            assert parse_driver_line(to_driver_line(p)) == [p]
    assert (conv_lines, problems, others) == EXPECTED_COUNTS[path.name]


def test_pytorch_preamble_lines_have_no_forw_and_give_all_three_directions() -> None:
    seen = 0
    for name in ("resnet50_pytorch.txt", "resnext101_pytorch.txt"):
        for line in lines_of(DATA / "driver" / name):
            first = line.split()[0]
            if first == "./bin/MIOpenDriver":
                assert " -F " in line
                continue
            seen += 1
            assert first.startswith("miopen") and first.endswith(":")
            assert " -F " not in line
            assert [p.direction for p in parse_driver_line(line)] == ["F", "B", "W"]
    assert seen == 60 + 56


def test_resnext_groups() -> None:
    lines = lines_of(DATA / "driver" / "resnext101_pytorch.txt")
    groups = [parse_driver_line(line)[0].group_count for line in lines]
    assert sorted(set(groups)) == [1, 32]
    assert groups.count(32) == 27
    p = parse_driver_line(lines[1])[0]
    assert (p.in_channels, p.out_channels, p.group_count) == (1024, 1024, 32)


def test_long_flag_files() -> None:
    nchw = [one(line) for line in lines_of(DATA / "driver" / "long_flags_NCHW.txt")[:1]][0]
    assert (nchw.batchsize, nchw.in_channels, nchw.out_channels, nchw.in_size) == (
        256,
        128,
        128,
        (28, 28),
    )
    assert (nchw.pad, nchw.direction, nchw.layouts) == ((1, 1), "F", ("NCHW",) * 3)
    nhwc = [one(line) for line in lines_of(DATA / "driver" / "long_flags_NHWC.txt")]
    assert all(p.layouts == ("NHWC",) * 3 for p in nhwc)
    assert nhwc[0].in_size == (54, 54) and nhwc[0].fil_size == (3, 3)
    assert [p.direction for p in nhwc] == ["F", "F", "W", "B", "B"]


def test_problem_validation() -> None:
    base = one("conv -n 2 -c 8 -k 8 -F 1")
    with pytest.raises(InvalidProblemError, match="spatial_dim 4"):
        ConvProblem(spatial_dim=4, batchsize=1, in_channels=1, out_channels=1, in_size=(1,) * 4,
                    fil_size=(1,) * 4)  # fmt: skip
    with pytest.raises(InvalidProblemError, match="in_size .* is not 3 integers"):
        ConvProblem(spatial_dim=3, batchsize=1, in_channels=1, out_channels=1, in_size=(4, 4),
                    fil_size=(1, 1, 1))  # fmt: skip
    with pytest.raises(InvalidProblemError, match="trans_output_pad .* mode is 'conv'"):
        ConvProblem(spatial_dim=2, batchsize=1, in_channels=1, out_channels=1, in_size=(4, 4),
                    fil_size=(1, 1), trans_output_pad=(1, 0))  # fmt: skip
    with pytest.raises(InvalidProblemError, match="direction 'X'"):
        base.with_direction("X")  # type: ignore[arg-type]
    with pytest.raises(InvalidProblemError, match="group_count 3 does not divide"):
        dataclasses.replace(base, group_count=3)
    with pytest.raises(InvalidProblemError, match="not a conv base arg"):
        base.with_command("convfp8")
    with pytest.raises(InvalidProblemError, match="in_cast 'fp8' is not a data type"):
        dataclasses.replace(base, in_cast="fp8")
    assert base.with_batchsize(7).batchsize == 7
    assert hash(base) == hash(one("conv -n 2 -c 8 -k 8 -F 1"))


def test_out_size_formulas() -> None:
    assert one("conv -H 5 -W 3 -y 7 -x 3 -F 1").out_size == (1, 1)  # max(1, ...)
    assert one("conv -H 10 -W 10 -y 3 -x 3 -l 2 -j 3 -u 2 -v 1 -F 1").out_size == (3, 4)
    assert one("conv -m trans -H 4 -W 4 -y 3 -x 3 -u 3 -v 1 -p 1 -q 0 -l 2 -j 1 -F 1").out_size == (
        12,
        6,
    )


@pytest.mark.parametrize(
    ("line", "message", "flag"),
    [
        # with several bad flags, the first the parser reads is reported, wherever it stands
        ("conv -n x -m deconv", "flag -m (--mode): 'deconv' is not one of conv, trans", "-m"),
        ("conv -H q -m deconv", "flag -m (--mode): 'deconv' is not one of conv, trans", "-m"),
        ("conv -g x -H y", "flag -H (--in_h): 'y' is not an integer", "-H"),
        ("conv -W 5 -x q --in_d z", "flag -! (--in_d): 'z' is not an integer", "--in_d"),
        ("conv -U bad -n x", "flag -U (--in_cast_type): 'bad' is not a cast type", "-U"),
        ("conv -c +4 -k 08 -g x", "flag -g (--group_count): 'x' is not an integer", "-g"),
        ("conv -_ x -Z y", "flag -_ (--spatial_dim): 'x' is not an integer", "-_"),
        ("conv -F 9 -_ 4", "flag -_ (--spatial_dim): '4' is not a spatial dimension", "-_"),
        ("conv -p -1 -q x", "flag -q (--pad_w): 'x' is not an integer", "-q"),
        ("conv --in_layout nchw -f chwn", "flag -f (--fil_layout): 'chwn' is not a layout", "-f"),
        # a repeated flag: the spelling of the last one is blamed
        (
            "conv -g 3 --group_count 0",
            "flag -g (--group_count): '0' does not divide",
            "--group_count",
        ),
        ("conv --group_count 0 -g 0", "flag -g (--group_count): '0' does not divide", "-g"),
        # digits other than 0-9 are not integers, even where Python's int() takes them
        ("conv -n \u0663", "flag -n (--batchsize): '\u0663' is not an integer", "-n"),
        ("conv -n \u00b2", "flag -n (--batchsize): '\u00b2' is not an integer", "-n"),
        ("conv -n 1_0", "flag -n (--batchsize): '1_0' is not an integer", "-n"),
    ],
)
def test_the_first_bad_flag_read_is_reported(line: str, message: str, flag: str) -> None:
    with pytest.raises(DriverLineError) as info:
        parse_driver_line(line)
    assert info.value.reason.startswith(message)
    assert info.value.flag == flag


def test_signs_leading_zeros_and_large_values() -> None:
    assert one("conv -n +8 -c 016 -k 0032 -p -0 -F 1") == one("conv -n 8 -c 16 -k 32 -p 0 -F 1")
    p = one("conv -H 5000 -W 4096 -n 123456 -F 1")
    assert (p.in_size, p.batchsize) == ((5000, 4096), 123456)


def test_parse_flags_and_flag_tables() -> None:
    specs = (FlagSpec("in_layout", "I", upper=True), FlagSpec("batchsize", "n"))
    flags = parse_flags(
        ["-n", "3", "--old_n", "4", "--in_layout", "nhwc"], specs, {"old_n": "batchsize"}
    )
    assert flags.raw == {"batchsize": "4", "in_layout": "NHWC"}
    assert flags.integer("batchsize", 1) == 4 and flags.text("in_layout", "") == "NHWC"
    assert FlagTable(specs).read(["-I", "nhwc"]).raw == {"in_layout": "nhwc"}
    with pytest.raises(DriverLineError, match="unknown flag '--batchsize'"):
        parse_flags(["--batchsize", "3"], specs, {"batchsize": "gone"})  # an alias to nothing
    with pytest.raises(DriverLineError, match=r"flag -n \(--batchsize\) has no value"):
        FlagTable(specs).read(["-n", "3", "-n"])
    with pytest.raises(DriverLineError, match="the --name=value form is not supported"):
        FlagTable(specs).read(["--batchsize=3"])
    with pytest.raises(DriverLineError, match="unexpected argument '3'"):
        FlagTable(specs).read(["3", "-n"])


# --- lines users feed that are not whole (issue #12) ---------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # cut from a real list: the "conv" of "-m conv" is a flag's value, not the operation
        (
            " 64 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 "
            "-F 4 -t 1",
            "no MIOpenDriver command in line",
        ),
        ("./bin/MIOpenDriver conv", "gives no shape flag"),
        ("./bin/MIOpenDriver convfp16 -F 1 -t 1 -m conv", "gives no shape flag"),
    ],
)
def test_cut_short_lines_are_bad_lines(line: str, message: str) -> None:
    with pytest.raises(DriverLineError, match=message):
        parse_driver_line(line)


def test_a_trailing_run_flag_without_a_value_is_dropped_with_a_warning() -> None:
    # from MITuna's own all.txt: "-t" (time the run) at the end, with no value
    line = "./bin/MIOpenDriver conv -n 128 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1 -t"
    warnings: list[str] = []
    (p,) = parse_driver_line(line, warnings)
    assert p == one(line.removesuffix(" -t"))
    assert warnings == [
        "flag -t (--time) at the end of the line has no value; it says how to run the driver, "
        "not what the problem is, so it was ignored"
    ]
    with pytest.raises(DriverLineError, match=r"flag -k \(--out_channels\) has no value"):
        parse_driver_line("conv -n 128 -c 64 -H 56 -W 56 -F 1 -k")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("-n 2147483648", "flag -n (--batchsize): '2147483648' is above 2147483647"),
        ("-H 99999999999999999999", "flag -H (--in_h): '99999999999999999999' is above"),
        ("-c " + "7" * 5000, "flag -c (--in_channels): '777777777777...(5000 characters)'"),
        ("-p -2147483649", "flag -p (--pad_h): '-2147483649' is below -2147483648"),
        ("--out_channels 4294967296", "flag -k (--out_channels): '4294967296' is above"),
    ],
)
def test_values_outside_a_c_int_name_the_flag_and_the_bound(flags: str, message: str) -> None:
    with pytest.raises(DriverLineError) as e:
        parse_driver_line(f"conv -n 2 -c 4 -H 8 -W 8 -k 4 {flags} -F 1")
    assert message in str(e.value)
    assert "the bound of the C int MIOpenDriver reads it into" in str(e.value)


def test_values_up_to_int_max_parse() -> None:
    (p,) = parse_driver_line("conv -n 2147483647 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 1")
    assert p.batchsize == 2**31 - 1


def test_a_transposed_problem_whose_y_leaves_a_c_int_is_refused() -> None:
    with pytest.raises(DriverLineError, match="y's dims .* above 2147483647"):
        parse_driver_line("conv -m trans -n 1 -c 1 -k 1 -H 65536 -W 1 -u 65536 -v 1 -F 1")


@given(conv_problems(modes=("conv", "trans")))
@settings(max_examples=400, deadline=None)
def test_the_one_format_line_is_the_full_writers_line(p: ConvProblem) -> None:
    """``_plain_driver_line`` (the common problem in one format) writes what the full writer
    writes, or stands aside."""
    for q in (p, p.with_command("convfp16"), p.with_command("convint8")):
        plain = driver_module._plain_driver_line(q)
        if plain is not None:
            assert plain == driver_module._full_driver_line(q)


def test_the_one_format_line_takes_the_common_problems() -> None:
    lines = [
        "conv -n 128 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -g 1 -F 2",
        "convfp16 -n 4 -c 8 --in_d 4 -H 9 -W 9 -k 16 --fil_d 3 -y 3 -x 3 --spatial_dim 3 -F 4",
        "convbfp16 -n 4 -c 32 -H 9 -W 9 -k 64 -y 3 -x 3 -g 32 -F 1",
    ]
    for line in lines:
        p = parse_driver_line(line)[0]
        plain = driver_module._plain_driver_line(p)
        assert plain is not None and plain == driver_module._full_driver_line(p)
        assert parse_driver_line(plain) == [p]
