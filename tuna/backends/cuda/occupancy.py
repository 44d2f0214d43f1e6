"""How many blocks of a kernel an SM holds, from ptxas's report and the architecture's limits.

Pure. The arithmetic of CUDA's occupancy calculator (``cuda_occupancy.h``): a block is
limited by the SM's warps, its block slots, its registers (allocated per warp in units of
256, from four sub-partitions of the register file) and its shared memory (allocated per
block in units of 128 bytes, plus 1 KB the system reserves per block). Zero blocks means the
kernel cannot run at all: the compile phase records such a candidate invalid.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArchLimits:
    """One architecture's per-SM and per-block limits."""

    arch: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 65536
    max_regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    sub_partitions: int = 4
    smem_per_sm: int = 228 * 1024
    max_smem_per_block: int = 227 * 1024  # with the opt-in attribute; 48 KB statically
    static_smem_per_block: int = 48 * 1024
    reserved_smem_per_block: int = 1024
    smem_alloc_unit: int = 128
    max_threads_per_block: int = 1024
    warp_size: int = 32


ARCHES: dict[str, ArchLimits] = {
    a.arch: a
    for a in (
        ArchLimits("sm_80", 2048, 32, smem_per_sm=164 * 1024, max_smem_per_block=163 * 1024),
        ArchLimits("sm_86", 1536, 16, smem_per_sm=100 * 1024, max_smem_per_block=99 * 1024),
        ArchLimits("sm_89", 1536, 24, smem_per_sm=100 * 1024, max_smem_per_block=99 * 1024),
        ArchLimits("sm_90", 2048, 32),
    )
}


def limits(arch: str) -> ArchLimits:
    """The limits of ``arch`` (``sm_90``); ``ValueError`` naming those known otherwise."""
    try:
        return ARCHES[arch]
    except KeyError:
        raise ValueError(
            f"unknown CUDA architecture {arch!r}; known: {', '.join(ARCHES)}"
        ) from None


def _up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Blocks per SM and what limits them (warps, blocks, registers, shared memory...)."""

    blocks_per_sm: int
    limited_by: str
    warps_per_sm: int

    def share(self, arch: ArchLimits) -> float:
        """Resident warps as a share of the SM's maximum."""
        return self.warps_per_sm / (arch.max_threads_per_sm // arch.warp_size)


def occupancy(arch: ArchLimits, threads: int, registers: int, smem: int) -> Occupancy:
    """Blocks of ``threads`` threads using ``registers`` each and ``smem`` bytes that fit an SM."""
    warps = -(-threads // arch.warp_size)
    if threads > arch.max_threads_per_block:
        return Occupancy(0, "threads per block", 0)
    by = {
        "warps": (arch.max_threads_per_sm // arch.warp_size) // warps,
        "blocks": arch.max_blocks_per_sm,
    }
    if registers > arch.max_regs_per_thread:
        by["registers"] = 0
    elif registers > 0:
        per_warp = _up(registers * arch.warp_size, arch.reg_alloc_unit)
        if per_warp * warps > arch.max_regs_per_block:
            by["registers"] = 0
        else:
            per_partition = arch.regs_per_sm // arch.sub_partitions
            by["registers"] = (per_partition // per_warp) * arch.sub_partitions // warps
    block_smem = _up(smem + arch.reserved_smem_per_block, arch.smem_alloc_unit)
    if smem > arch.max_smem_per_block:
        by["shared memory"] = 0
    elif smem > 0:
        by["shared memory"] = arch.smem_per_sm // block_smem
    limit = min(by, key=lambda k: by[k])  # on a tie, the first of the order above
    blocks = by[limit]
    return Occupancy(blocks, limit, blocks * warps)
