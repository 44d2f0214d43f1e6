"""The solver catalogue and the FAKE fin's constructed solver list agree with MIOpen's registry."""

from __future__ import annotations

import json

from tests.backends.miopen.recorded import RECORDINGS
from tuna.backends.miopen.solvers import BY_NAME, SOLVERS


def test_catalogue_ids_and_names_are_unique():
    assert len({s.numeric_id for s in SOLVERS}) == len(SOLVERS) == len(BY_NAME)


def test_some_ids_from_miopens_registry():
    # src/solver.cpp: ids in registration order, removed solvers keep their slot
    for name, sid, family in [
        ("ConvAsm3x3U", 1, "Direct"),
        ("ConvAsm1x1UV2", 3, "Direct"),
        ("ConvOclDirectFwd", 11, "Direct"),
        ("fft", 34, "FFT"),
        ("ConvBinWinogradRxSf3x2", 37, "Winograd"),
        ("ConvBinWinogradRxSf2x3", 53, "Winograd"),
        ("GemmFwdRest", 91, "GEMM"),
        ("ConvMlirIgemmFwd", 98, "ImplicitGEMM"),
        ("ConvHipImplicitGemmGroupWrwXdlops", 156, "ImplicitGEMM"),
    ]:
        assert (BY_NAME[name].numeric_id, BY_NAME[name].algorithm) == (sid, family)
    for removed in (4, 10, 12, 27, 36, 106):  # fusion, removed solvers, activation
        assert removed not in {s.numeric_id for s in SOLVERS}


def test_the_fakes_solver_list_is_the_catalogue_in_fins_format():
    listed = json.loads((RECORDINGS / "get_solvers.json").read_text())[1]["all_solvers"]
    conv = [s for s in listed if s["type"] == "convolution"]
    assert [(int(s["id"]), s["name"], s["tunable"] == "1") for s in conv] == [
        (s.numeric_id, s.name, s.tunable) for s in SOLVERS
    ]
    assert all(isinstance(v, str) for s in listed for v in s.values())  # fin writes strings
