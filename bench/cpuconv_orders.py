"""cpuconv: one register tile in each loop order (LO) and B layout (PB), timed in turns.

An A/B comparison for bench/cpuconv.md: for each named ResNet-50 layer (at batch 1) and each
given tile (``MR,NV,VW,KC,NT``), every (LO, PB) the layer's CpuIm2colGemm space holds is
timed head to head with oneDNN (bench/cpuconv.py's :func:`head_to_head`: turns of 3 runs,
each candidate's fastest run). Not a test.

    .venv/bin/python bench/cpuconv_orders.py --layers "2048x7x7 -> 512, 1x1/1" \\
        --tiles 6,2,8,128,2 6,1,16,128,2
"""

from __future__ import annotations

import argparse
import os

from bench.cpuconv import head_to_head, layer_name, load_onednn, named_layers
from tuna.backends.cpuconv import solvers as sv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", nargs="+", required=True, help='e.g. "2048x7x7 -> 512, 1x1/1"')
    ap.add_argument("--tiles", nargs="+", required=True, help="MR,NV,VW,KC,NT each")
    ap.add_argument("--passes", type=int, default=5, help="turns each")
    args = ap.parse_args()
    onednn = load_onednn()
    for p in named_layers(args.layers):
        name = layer_name(p)
        space = set(sv.tuning_space(p, sv.IM2COL))
        finalists = [
            (sv.IM2COL, c)
            for tile in args.tiles
            for lo in (0, 1)
            for pb in (0, 1)
            if (c := f"{tile},{lo},{pb}") in space
        ]
        times, full, _, impl = head_to_head(p, finalists, onednn, 2, args.passes)
        gflop = sv.flops(p) / 1e9
        print(f"{name}: load {os.getloadavg()[0]:.2f}, oneDNN {full:.3f} ms ({impl})")
        for (_, params), t in sorted(times.items(), key=lambda kv: kv[1]):
            print(f"  {params:>18}  {t:8.3f} ms  {gflop / t * 1e3:6.1f} GFLOP/s  oneDNN/this "
                  f"{full / t:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
