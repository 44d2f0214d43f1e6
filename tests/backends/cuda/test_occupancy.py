from __future__ import annotations

import pytest

from tuna.backends.cuda import occupancy as occ

SM90 = occ.limits("sm_90")


@pytest.mark.parametrize(
    ("threads", "registers", "smem", "blocks", "limit"),
    [
        (1024, 76, 0, 0, "registers"),  # 2,560 registers a warp x 32 warps > 65,536
        (1024, 64, 0, 1, "registers"),  # the whole register file
        (1024, 32, 0, 2, "warps"),
        (1024, 80, 33024, 0, "registers"),
        (256, 32, 0, 8, "warps"),  # 64 warps an SM / 8
        (256, 128, 0, 2, "registers"),
        (256, 255, 0, 1, "registers"),
        (32, 32, 0, 32, "blocks"),
        (128, 32, 48 * 1024, 4, "shared memory"),  # (48 KB + 1 KB reserved) into 228 KB
        (128, 32, 228 * 1024, 0, "shared memory"),
        (2048, 16, 0, 0, "threads per block"),
    ],
)
def test_blocks_per_sm_on_sm90(threads, registers, smem, blocks, limit):
    o = occ.occupancy(SM90, threads, registers, smem)
    assert (o.blocks_per_sm, o.limited_by) == (blocks, limit)
    assert o.warps_per_sm == blocks * -(-threads // 32)


def test_an_unknown_arch_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown CUDA architecture 'sm_99'; known: sm_80"):
        occ.limits("sm_99")


def test_the_share_of_resident_warps():
    assert occ.occupancy(SM90, 256, 128, 0).share(SM90) == 0.25
