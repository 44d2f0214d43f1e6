"""MIOpen's convolution solvers, as this version of Tuna knows them.

The names and numeric ids are MIOpen's (``src/solver.cpp``, ``SolverRegistrar``: ids are
assigned in registration order and never reused, so they are stable across versions; the
names are ``SolverDbId()``, the strings in MIOpen's db files). The algorithm family is the
one each solver is registered with. ``tunable`` is what MIOpen 3.3 says; the solver list a
session's own MIOpen build reports through fin (``tuna solvers update``) is authoritative
and replaces these values in the ``solver`` table.

This catalogue is what :meth:`MiopenBackend.solvers` answers without running fin: the names
a session is created with, and the names an export accepts.
"""

from __future__ import annotations

from tuna.backends.base import SolverInfo

DIRECT, GEMM, FFT, WINOGRAD, IGEMM = "Direct", "GEMM", "FFT", "Winograd", "ImplicitGEMM"

# (id, name, family, tunable)
_TABLE: tuple[tuple[int, str, str, bool], ...] = (
    (1, "ConvAsm3x3U", DIRECT, True),
    (2, "ConvAsm1x1U", DIRECT, True),
    (3, "ConvAsm1x1UV2", DIRECT, True),
    (5, "ConvAsm5x10u2v2f1", DIRECT, False),
    (6, "ConvAsm5x10u2v2b1", DIRECT, False),
    (7, "ConvAsm7x7c3h224w224k64u2v2p3q3f1", DIRECT, False),
    (8, "ConvOclDirectFwd11x11", DIRECT, False),
    (9, "ConvOclDirectFwdGen", DIRECT, False),
    (11, "ConvOclDirectFwd", DIRECT, True),
    (13, "ConvOclDirectFwd1x1", DIRECT, True),
    (14, "ConvBinWinograd3x3U", WINOGRAD, False),
    (15, "ConvBinWinogradRxS", WINOGRAD, False),
    (16, "ConvAsmBwdWrW3x3", DIRECT, True),
    (17, "ConvAsmBwdWrW1x1", DIRECT, True),
    (18, "ConvOclBwdWrW2<1>", DIRECT, True),
    (19, "ConvOclBwdWrW2<2>", DIRECT, True),
    (20, "ConvOclBwdWrW2<4>", DIRECT, True),
    (21, "ConvOclBwdWrW2<8>", DIRECT, True),
    (22, "ConvOclBwdWrW2<16>", DIRECT, True),
    (23, "ConvOclBwdWrW2NonTunable", DIRECT, False),
    (24, "ConvOclBwdWrW53", DIRECT, False),
    (25, "ConvOclBwdWrW1x1", DIRECT, False),
    (26, "ConvHipImplicitGemmV4R1Fwd", IGEMM, True),
    (31, "ConvHipImplicitGemmV4R1WrW", IGEMM, True),
    (34, "fft", FFT, False),
    (35, "ConvWinograd3x3MultipassWrW<3-4>", WINOGRAD, False),
    (37, "ConvBinWinogradRxSf3x2", WINOGRAD, True),
    (38, "ConvWinograd3x3MultipassWrW<3-5>", WINOGRAD, False),
    (39, "ConvWinograd3x3MultipassWrW<3-6>", WINOGRAD, False),
    (40, "ConvWinograd3x3MultipassWrW<3-2>", WINOGRAD, False),
    (41, "ConvWinograd3x3MultipassWrW<3-3>", WINOGRAD, False),
    (42, "ConvWinograd3x3MultipassWrW<7-2>", WINOGRAD, False),
    (43, "ConvWinograd3x3MultipassWrW<7-3>", WINOGRAD, False),
    (44, "ConvWinograd3x3MultipassWrW<7-2-1-1>", WINOGRAD, False),
    (45, "ConvWinograd3x3MultipassWrW<7-3-1-1>", WINOGRAD, False),
    (46, "ConvWinograd3x3MultipassWrW<1-1-7-2>", WINOGRAD, False),
    (47, "ConvWinograd3x3MultipassWrW<1-1-7-3>", WINOGRAD, False),
    (48, "ConvWinograd3x3MultipassWrW<5-3>", WINOGRAD, False),
    (49, "ConvWinograd3x3MultipassWrW<5-4>", WINOGRAD, False),
    (53, "ConvBinWinogradRxSf2x3", WINOGRAD, True),
    (54, "ConvHipImplicitGemmV4R4Fwd", IGEMM, True),
    (55, "ConvHipImplicitGemmBwdDataV1R1", IGEMM, True),
    (56, "ConvHipImplicitGemmBwdDataV4R1", IGEMM, True),
    (57, "ConvHipImplicitGemmBwdDataV1R1Xdlops", IGEMM, True),
    (60, "ConvHipImplicitGemmBwdDataV4R1Xdlops", IGEMM, True),
    (61, "ConvHipImplicitGemmV4R4WrW", IGEMM, True),
    (62, "ConvAsmImplicitGemmV4R1DynamicFwd", IGEMM, False),
    (63, "ConvAsmImplicitGemmV4R1DynamicFwd_1x1", IGEMM, False),
    (64, "ConvHipImplicitGemmForwardV4R4Xdlops", IGEMM, True),
    (65, "ConvAsmImplicitGemmV4R1DynamicBwd", IGEMM, False),
    (66, "ConvAsmImplicitGemmV4R1DynamicWrw", IGEMM, False),
    (67, "ConvMPBidirectWinograd<2-3>", WINOGRAD, False),
    (68, "ConvMPBidirectWinograd<3-3>", WINOGRAD, False),
    (69, "ConvMPBidirectWinograd<4-3>", WINOGRAD, False),
    (70, "ConvMPBidirectWinograd<5-3>", WINOGRAD, False),
    (71, "ConvMPBidirectWinograd<6-3>", WINOGRAD, False),
    (72, "ConvAsmImplicitGemmGTCDynamicWrwXdlops", IGEMM, False),
    (73, "ConvHipImplicitGemmWrwV4R4Xdlops", IGEMM, True),
    (74, "ConvAsmImplicitGemmGTCDynamicFwdXdlops", IGEMM, False),
    (75, "ConvMPBidirectWinograd_xdlops<2-3>", WINOGRAD, False),
    (76, "ConvMPBidirectWinograd_xdlops<3-3>", WINOGRAD, False),
    (77, "ConvMPBidirectWinograd_xdlops<4-3>", WINOGRAD, False),
    (78, "ConvMPBidirectWinograd_xdlops<5-3>", WINOGRAD, False),
    (79, "ConvMPBidirectWinograd_xdlops<6-3>", WINOGRAD, False),
    (80, "ConvHipImplicitGemmForwardV4R5Xdlops", IGEMM, True),
    (81, "ConvHipImplicitGemmForwardV4R4Xdlops_Padded_Gemm", IGEMM, True),
    (82, "ConvAsmImplicitGemmGTCDynamicBwdXdlops", IGEMM, False),
    (83, "ConvHipImplicitGemmWrwV4R4Xdlops_Padded_Gemm", IGEMM, True),
    (84, "ConvBinWinogradRxSf2x3g1", WINOGRAD, False),
    (85, "ConvDirectNaiveConvFwd", DIRECT, False),
    (86, "ConvDirectNaiveConvBwd", DIRECT, False),
    (87, "ConvDirectNaiveConvWrw", DIRECT, False),
    (88, "GemmFwd1x1_0_1", GEMM, False),
    (89, "GemmFwd1x1_0_1_int8", GEMM, False),
    (90, "GemmFwd1x1_0_2", GEMM, False),
    (91, "GemmFwdRest", GEMM, False),
    (95, "GemmBwd1x1_stride2", GEMM, False),
    (96, "GemmBwd1x1_stride1", GEMM, False),
    (97, "GemmBwdRest", GEMM, False),
    (98, "ConvMlirIgemmFwd", IGEMM, True),
    (99, "ConvMlirIgemmBwd", IGEMM, True),
    (100, "ConvMlirIgemmWrW", IGEMM, True),
    (101, "GemmWrw1x1_stride1", GEMM, False),
    (102, "GemmWrwUniversal", GEMM, False),
    (103, "ConvMlirIgemmFwdXdlops", IGEMM, True),
    (104, "ConvMlirIgemmBwdXdlops", IGEMM, True),
    (105, "ConvMlirIgemmWrWXdlops", IGEMM, True),
    (107, "ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC", IGEMM, True),
    (108, "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC", IGEMM, True),
    (110, "ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC", IGEMM, True),
    (114, "ConvCkIgemmFwdV6r1DlopsNchw", IGEMM, True),
    (127, "ConvAsmImplicitGemmGTCDynamicFwdDlopsNCHWC", IGEMM, True),
    (128, "ConvHipImplicitGemmFwdXdlops", IGEMM, True),
    (129, "ConvHipImplicitGemmBwdXdlops", IGEMM, True),
    (137, "ConvHipImplicitGemmGroupFwdXdlops", IGEMM, True),
    (138, "ConvHipImplicitGemm3DGroupFwdXdlops", IGEMM, True),
    (139, "ConvWinoFuryRxS<2-3>", WINOGRAD, False),
    (140, "ConvHipImplicitGemm3DGroupWrwXdlops", IGEMM, True),
    (141, "ConvHipImplicitGemm3DGroupBwdXdlops", IGEMM, True),
    (149, "ConvHipImplicitGemmF16F8F16FwdXdlops", IGEMM, True),
    (150, "ConvHipImplicitGemmF16F8F16BwdXdlops", IGEMM, True),
    (151, "ConvHipImplicitGemmF16F8F16WrwXdlops", IGEMM, True),
    (155, "ConvHipImplicitGemmGroupBwdXdlops", IGEMM, True),
    (156, "ConvHipImplicitGemmGroupWrwXdlops", IGEMM, True),
)

SOLVERS: tuple[SolverInfo, ...] = tuple(
    SolverInfo(name, tunable=tunable, numeric_id=sid, algorithm=family)
    for sid, name, family, tunable in _TABLE
)
BY_NAME: dict[str, SolverInfo] = {s.name: s for s in SOLVERS}
