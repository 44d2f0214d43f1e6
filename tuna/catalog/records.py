"""How a problem maps onto catalogue rows (tensor, conv_config, bn_config) and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, select

from tuna.problems.conv import ConvProblem

if TYPE_CHECKING:  # a worker needs conv problems only: no bnorm grammar, no ORM loaded for it
    from tuna.db.models import ConvConfig, Tensor
    from tuna.problems.bnorm import BnProblem

TensorKey = tuple[int, int, int, int, int, int, str, str]
"""(num_dims, dim0..dim4, layout, data_type): the unique identity of a tensor row."""

TENSOR_COLUMNS = ("num_dims", "dim0", "dim1", "dim2", "dim3", "dim4", "layout", "data_type")


def _tensor(lengths: list[int], layout: str, data_type: str) -> TensorKey:
    padded = lengths + [0] * (5 - len(lengths))
    return (len(lengths), padded[0], padded[1], padded[2], padded[3], padded[4], layout, data_type)


def input_tensor(p: ConvProblem) -> TensorKey:
    """x: [N, C, (D,) H, W]."""
    return _tensor([p.batchsize, p.in_channels, *p.in_size], p.in_layout, p.in_type)


def weight_tensor(p: ConvProblem) -> TensorKey:
    """w: [K, C/G, ...] for convolution, [C, K/G, ...] for transposed convolution."""
    if p.mode == "trans":
        lead = [p.in_channels, p.out_channels // p.group_count]
    else:
        lead = [p.out_channels, p.in_channels // p.group_count]
    return _tensor([*lead, *p.fil_size], p.fil_layout, p.wei_type)


def _dhw(values: tuple[int, ...], default: int) -> tuple[int, int, int]:
    if len(values) == 3:
        return values[0], values[1], values[2]
    return default, values[0], values[1]


def conv_config_values(p: ConvProblem, fdb_key: str, driver: str | None) -> dict[str, Any]:
    """The conv_config columns of ``p``, less the two tensor ids."""
    pad_d, pad_h, pad_w = _dhw(p.pad, 0)
    st_d, st_h, st_w = _dhw(p.stride, 1)
    dil_d, dil_h, dil_w = _dhw(p.dilation, 1)
    top_d, top_h, top_w = _dhw(p.trans_output_pad, 0)
    return {
        "fdb_key": fdb_key,
        "spatial_dim": p.spatial_dim,
        "direction": p.direction,
        "mode": p.mode,
        "pad_mode": p.pad_mode,
        "group_count": p.group_count,
        "pad_d": pad_d,
        "pad_h": pad_h,
        "pad_w": pad_w,
        "conv_stride_d": st_d,
        "conv_stride_h": st_h,
        "conv_stride_w": st_w,
        "dilation_d": dil_d,
        "dilation_h": dil_h,
        "dilation_w": dil_w,
        "trans_output_pad_d": top_d,
        "trans_output_pad_h": top_h,
        "trans_output_pad_w": top_w,
        "bias": p.bias,
        "out_layout": p.out_layout,
        "out_type": p.out_type,
        "in_cast": p.in_cast,
        "wei_cast": p.wei_cast,
        "out_cast": p.out_cast,
        "driver": driver or "",  # empty: no MIOpenDriver line gives the problem
    }


def configs_with_tensors(tag: str | None = None) -> Select[ConvConfig, Tensor, Tensor]:
    """(config, input tensor, weight tensor) of every config, or of those tagged ``tag``, by
    id: what :func:`conv_problem` takes."""
    from sqlalchemy.orm import aliased

    from tuna.db.models import ConfigTag, ConvConfig, Tensor

    x, w = aliased(Tensor), aliased(Tensor)
    query = (
        select(ConvConfig, x, w)
        .join(x, x.id == ConvConfig.input_tensor)
        .join(w, w.id == ConvConfig.weight_tensor)
        .order_by(ConvConfig.id)
    )
    if tag is not None:
        query = query.join(ConfigTag, ConfigTag.config == ConvConfig.id).where(ConfigTag.tag == tag)
    return query


def conv_problem(cfg: ConvConfig | Any, x: Tensor | Any, w: Tensor | Any) -> ConvProblem:
    """Rebuild the problem a conv_config row (with its two tensors) describes: ORM objects,
    or anything else with the columns as attributes (a worker reads them with Core)."""
    dims = cfg.spatial_dim
    spatial = [x.dim2, x.dim3, x.dim4][:dims]
    fil = [w.dim2, w.dim3, w.dim4][:dims]

    def pick(d: int, h: int, w_: int) -> tuple[int, ...]:
        return (d, h, w_) if dims == 3 else (h, w_)

    out_channels = w.dim1 * cfg.group_count if cfg.mode == "trans" else w.dim0
    return ConvProblem(
        spatial_dim=dims,
        batchsize=x.dim0,
        in_channels=x.dim1,
        out_channels=out_channels,
        in_size=tuple(spatial),
        fil_size=tuple(fil),
        pad=pick(cfg.pad_d, cfg.pad_h, cfg.pad_w),
        stride=pick(cfg.conv_stride_d, cfg.conv_stride_h, cfg.conv_stride_w),
        dilation=pick(cfg.dilation_d, cfg.dilation_h, cfg.dilation_w),
        trans_output_pad=pick(
            cfg.trans_output_pad_d, cfg.trans_output_pad_h, cfg.trans_output_pad_w
        ),
        group_count=cfg.group_count,
        mode=cfg.mode,  # type: ignore[arg-type]
        pad_mode=cfg.pad_mode,  # type: ignore[arg-type]
        direction=cfg.direction,  # type: ignore[arg-type]
        in_layout=x.layout,
        fil_layout=w.layout,
        out_layout=cfg.out_layout,
        in_type=x.data_type,
        wei_type=w.data_type,
        out_type=cfg.out_type,
        in_cast=cfg.in_cast,
        wei_cast=cfg.wei_cast,
        out_cast=cfg.out_cast,
        bias=cfg.bias,
    )


def bn_config_values(p: BnProblem, bn_key: str, driver: str) -> dict[str, Any]:
    return {
        "bn_key": bn_key,
        "data_type": p.data_type,
        "layout": p.layout,
        "batchsize": p.batchsize,
        "in_channels": p.in_channels,
        "in_d": p.in_d,
        "in_h": p.in_h,
        "in_w": p.in_w,
        "mode": p.mode,
        "direction": p.direction,
        "save": bool(p.save),
        "run": bool(p.run),
        "alpha": p.alpha,
        "beta": p.beta,
        "driver": driver,
    }


def tensor_row(key: TensorKey) -> dict[str, Any]:
    return dict(zip(TENSOR_COLUMNS, key, strict=True))


__all__ = [
    "TensorKey",
    "bn_config_values",
    "conv_config_values",
    "conv_problem",
    "input_tensor",
    "tensor_row",
    "weight_tensor",
]
