"""The problems a hand-written FP32 NCHW 2D convolution kernel can run, checked once for every
backend whose kernels are of that kind (cpuconv's C kernels, cuda's CUDA kernels)."""

from __future__ import annotations

from tuna.problems.conv import ConvProblem


def plain_conv_reason(p: ConvProblem, kernels: str, by: str) -> str | None:
    """Why ``p`` is outside a 2D, non-transposed, FP32, NCHW convolution, or None.

    ``kernels`` names the kernels in the reason (``"cpuconv kernels"``), ``by`` what does not
    support a transposed convolution (``"cpuconv"``)."""
    if p.spatial_dim != 2:
        return f"{p.spatial_dim}D convolution: {kernels} are 2D only"
    if p.mode != "conv":
        return f"transposed convolution (mode trans) is not supported by {by}"
    return None


def fp32_nchw_reason(p: ConvProblem, kernels: str) -> str | None:
    """Why ``p``'s data types or layouts are not FP32 NCHW throughout, or None."""
    if p.types != ("FP32", "FP32", "FP32") or any(p.casts):
        return f"data types {'/'.join(p.types)}: {kernels} compute FP32 only, no casts"
    if p.layouts != ("NCHW", "NCHW", "NCHW"):
        return f"layouts {'/'.join(p.layouts)}: {kernels} are NCHW only"
    return None
