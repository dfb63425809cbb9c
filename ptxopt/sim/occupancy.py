"""Occupancy: how many blocks (and warps) of a kernel are resident on one SM.

The formula is the CUDA Occupancy Calculator's (the spreadsheet shipped with
the CUDA toolkit up to 11.x, whose rules Nsight Compute's occupancy section
reproduces); the per-architecture limits are the CUDA C++ Programming Guide's
table "Technical Specifications per Compute Capability" (and, for the
allocation granularities, the calculator's "GPU Data" sheet)::

    warps/block      = ceil(threads/block / 32)
    limit by warps   = floor(max warps/SM / warps/block), and <= max blocks/SM
    regs/warp        = ceil(regs/thread * 32, 256)              (register allocation unit)
    warps by regs    = floor(floor(65536 / regs/warp), 4)       (warp allocation granularity 4)
    limit by regs    = floor(warps by regs / warps/block)       (0 if regs/thread > 255)
    smem/block       = ceil(static + dynamic smem + reserved/block, allocation unit)
    limit by smem    = floor(max smem/SM / smem/block)          (0 if over max smem/block)
    blocks/SM        = min(the limits above)

The shared-memory limit assumes the driver picks the largest L1/shared
carveout (what it does when a kernel needs it); a kernel whose
``cudaFuncAttributePreferredSharedMemoryCarveout`` asks for less has fewer
blocks resident than this says.

Worked example checked in the tests (CUDA C++ Best Practices Guide,
"Calculating Occupancy"): on compute capability 7.0, 128-thread blocks with
37 registers per thread reach 75% occupancy (12 blocks), 320-thread blocks
with the same registers 63% (4 blocks).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SmLimits:
    """Per-SM resource limits of one compute capability (see the module doc for sources)."""

    arch: str
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    registers: int = 65536  # 32-bit registers per SM
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers, allocated per warp
    warp_alloc_granularity: int = 4
    max_threads_per_block: int = 1024
    smem_per_sm: int = 0  # bytes, largest carveout
    max_smem_per_block: int = 0  # bytes, with the opt-in attribute
    smem_reserved_per_block: int = 0  # bytes the CUDA runtime reserves per block
    smem_alloc_unit: int = 128  # bytes
    schedulers: int = 4  # SM sub-partitions (warp schedulers), one instruction/cycle each


KB = 1024

#: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
LIMITS: dict[str, SmLimits] = {
    # 7.0 (V100): 64 warps, 32 blocks, 96 KB shared per SM and per block, no reserved
    # shared memory; calculator: shared allocation unit 256 B.
    "sm_70": SmLimits("sm_70", max_warps=64, max_blocks=32, smem_per_sm=96 * KB, max_smem_per_block=96 * KB,
                      smem_reserved_per_block=0, smem_alloc_unit=256),
    # 8.0 (A100): 64 warps, 32 blocks, 164 KB shared per SM, 163 KB per block,
    # 1 KB reserved per block (CUDA 11+).
    "sm_80": SmLimits("sm_80", max_warps=64, max_blocks=32, smem_per_sm=164 * KB, max_smem_per_block=163 * KB,
                      smem_reserved_per_block=1 * KB),
    # 8.6 (GA10x): 48 warps, 16 blocks, 100 KB shared per SM, 99 KB per block.
    "sm_86": SmLimits("sm_86", max_warps=48, max_blocks=16, smem_per_sm=100 * KB, max_smem_per_block=99 * KB,
                      smem_reserved_per_block=1 * KB),
    # 8.9 (AD10x: L4, L40, RTX 40): 48 warps, 24 blocks, 100 KB shared per SM, 99 KB per block.
    "sm_89": SmLimits("sm_89", max_warps=48, max_blocks=24, smem_per_sm=100 * KB, max_smem_per_block=99 * KB,
                      smem_reserved_per_block=1 * KB),
    # 9.0 (H100): 64 warps, 32 blocks, 228 KB shared per SM, 227 KB per block.
    "sm_90": SmLimits("sm_90", max_warps=64, max_blocks=32, smem_per_sm=228 * KB, max_smem_per_block=227 * KB,
                      smem_reserved_per_block=1 * KB),
}


def limits_for(arch: str) -> SmLimits:
    """The limits of ``arch`` (``sm_90a`` -> ``sm_90``); ValueError for an unknown one."""
    base = arch.rstrip("af") if arch.startswith("sm_") else arch
    if base in LIMITS:
        return LIMITS[base]
    raise ValueError(f"no occupancy limits for {arch} (known: {', '.join(LIMITS)}); add them to ptxopt/sim/occupancy.py")


@dataclass(frozen=True)
class Occupancy:
    arch: str
    threads_per_block: int
    warps_per_block: int
    registers: int
    smem_per_block: int  # bytes the block is charged, reserved part and rounding included
    blocks_per_sm: int  # resident blocks per SM (0: the block cannot launch)
    limited_by: str  # "warps", "blocks", "registers", "shared memory" (ties: the first of these)
    limits: dict  # blocks per SM allowed by each resource

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    def occupancy(self, arch_limits: SmLimits | None = None) -> float:
        lim = arch_limits or limits_for(self.arch)
        return self.warps_per_sm / lim.max_warps

    def to_json(self) -> dict:
        return {"arch": self.arch, "threads_per_block": self.threads_per_block,
                "warps_per_block": self.warps_per_block, "registers": self.registers,
                "smem_per_block": self.smem_per_block, "blocks_per_sm": self.blocks_per_sm,
                "warps_per_sm": self.warps_per_sm, "occupancy": self.occupancy(),
                "limited_by": self.limited_by, "limits": dict(self.limits)}


def _ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(arch: str, threads_per_block: int, registers: int, shared_bytes: int = 0) -> Occupancy:
    """Resident blocks per SM for blocks of ``threads_per_block`` threads using
    ``registers`` registers per thread and ``shared_bytes`` of shared memory
    per block (static + dynamic; the runtime's reserved part is added here)."""
    lim = limits_for(arch)
    if threads_per_block < 1:
        raise ValueError("threads_per_block must be >= 1")
    warps = -(-threads_per_block // 32)
    by_warps = lim.max_warps // warps if threads_per_block <= lim.max_threads_per_block else 0
    regs = max(1, int(registers))
    if regs > lim.max_regs_per_thread:
        by_regs = 0
    else:
        per_warp = _ceil_to(regs * 32, lim.reg_alloc_unit)
        warps_by_regs = (lim.registers // per_warp) // lim.warp_alloc_granularity * lim.warp_alloc_granularity
        by_regs = warps_by_regs // warps
    smem = _ceil_to(int(shared_bytes) + lim.smem_reserved_per_block, lim.smem_alloc_unit)
    if shared_bytes > lim.max_smem_per_block:
        by_smem = 0
    else:
        by_smem = lim.smem_per_sm // smem if smem else lim.max_blocks
    table = {"warps": by_warps, "blocks": lim.max_blocks, "registers": by_regs, "shared memory": by_smem}
    blocks = min(table.values())
    limited = next(k for k, v in table.items() if v == blocks)
    return Occupancy(lim.arch, threads_per_block, warps, regs, smem, blocks, limited, table)


__all__ = ["SmLimits", "LIMITS", "limits_for", "Occupancy", "occupancy"]


# ---------------------------------------------------------------------------
# per-SM throughput of one product per architecture (for the many-warp bounds)


@dataclass(frozen=True)
class SmThroughput:
    """Per-SM bandwidths (bytes per SM cycle) of one product; see the comments for sources."""

    product: str
    sms: int  # SMs on the product
    clock_mhz: float  # SM boost clock the per-cycle figures are taken at
    dram_bytes_per_cycle: float  # DRAM bandwidth / (SMs x clock)
    l2_bytes: int  # L2 capacity (a working set above it streams from DRAM)
    l2_bytes_per_cycle: float  # L2 -> SM bandwidth per SM
    l1_bytes_per_cycle: float = 128.0  # L1/shared bandwidth per SM (LSU path)
    lsu_instructions_per_cycle: float = 1.0  # memory warp instructions the MIO hands the LSU pipe per SM cycle


def _per_sm(gb_per_s: float, sms: int, mhz: float) -> float:
    return gb_per_s * 1e9 / (sms * mhz * 1e6)


#: The product each architecture's bounds assume.  The L1 figure (128 B per
#: cycle per SM) is NVIDIA's for Volta through Hopper (Volta/A100/H100
#: whitepapers: "128 bytes/clock" L1/shared per SM); the L2 figures are
#: educated estimates where no per-product number was verified (marked).
THROUGHPUT: dict[str, SmThroughput] = {
    # NVIDIA L4 datasheet: 7,424 CUDA cores (58 SMs), 300 GB/s GDDR6, 2,040 MHz max boost;
    # AD104: 48 MB L2.  L2 bandwidth: educated estimate (no L4 measurement found):
    # 32 B/cycle/SM, one sector per SM cycle.
    "sm_89": SmThroughput("L4", sms=58, clock_mhz=2040, dram_bytes_per_cycle=_per_sm(300, 58, 2040),
                          l2_bytes=48 << 20, l2_bytes_per_cycle=32.0),
    # A100 SXM4 80 GB datasheet: 108 SMs, 2,039 GB/s HBM2e, 1,410 MHz boost, 40 MB L2;
    # A100 whitepaper: L2 read bandwidth 5,120 B/clk for the chip -> 47.4 B/clk/SM.
    "sm_80": SmThroughput("A100-SXM4-80GB", sms=108, clock_mhz=1410,
                          dram_bytes_per_cycle=_per_sm(2039, 108, 1410), l2_bytes=40 << 20,
                          l2_bytes_per_cycle=5120 / 108),
    # H100 SXM5 datasheet: 132 SMs, 3,350 GB/s HBM3, 1,980 MHz boost, 50 MB L2.
    # L2 bandwidth: educated estimate, the A100's per-SM figure.
    "sm_90": SmThroughput("H100-SXM5", sms=132, clock_mhz=1980, dram_bytes_per_cycle=_per_sm(3350, 132, 1980),
                          l2_bytes=50 << 20, l2_bytes_per_cycle=5120 / 108),
}


def throughput_for(arch: str) -> SmThroughput:
    base = arch.rstrip("af") if arch.startswith("sm_") else arch
    if base in THROUGHPUT:
        return THROUGHPUT[base]
    if base in ("sm_70", "sm_86"):  # educated substitute: the product name in the notes says so
        from dataclasses import replace

        sub = THROUGHPUT["sm_80"]
        return replace(sub, product=f"{sub.product} figures substituted for {base}")
    raise ValueError(f"no per-SM throughput table for {arch} (known: {', '.join(THROUGHPUT)})")


__all__ += ["SmThroughput", "THROUGHPUT", "throughput_for"]


_DTYPE_BYTES = {"u8": 1, "s8": 1, "b8": 1, "f16": 2, "bf16": 2, "u16": 2, "s16": 2, "b16": 2, "f32": 4, "u32": 4,
                "s32": 4, "b32": 4, "f64": 8, "u64": 8, "s64": 8, "b64": 8}


def footprint_of_spec(spec) -> int | None:
    """Distinct global bytes a corpus kernel's launch touches: the sum of its
    buffer parameters (input/output/inout, ``count`` x dtype size).  None when
    a buffer's size is unknown."""
    total = 0
    for p in getattr(spec, "params", ()):
        if p.role not in ("input", "output", "inout"):
            continue
        size = _DTYPE_BYTES.get(p.dtype)
        if size is None or p.count is None:
            return None
        total += size * int(p.count)
    return total


__all__ += ["footprint_of_spec"]
