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

#: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
#: (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications:
#: resident warps/blocks per SM, 64K 32-bit registers per SM, 255 per thread, shared memory per SM and
#: per block; the runtime reserves 1 KB of shared memory per block on 8.x/9.0), the per-architecture
#: tuning guides (https://docs.nvidia.com/cuda/ada-tuning-guide/index.html: sm_89 48 concurrent warps,
#: 24 thread blocks per SM, shared memory up to 100 KB per SM and 99 KB per block;
#: https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html: sm_90 up to 228 KB per SM, 227 KB per
#: block; https://docs.nvidia.com/cuda/ampere-tuning-guide/index.html: sm_80 164 KB / 163 KB, sm_86
#: 100 KB / 99 KB), and the CUDA Occupancy Calculator's "GPU Data" sheet for the allocation units
#: (256 registers per warp, warps in groups of 4, shared memory in 128-byte units from 8.0 on).
#: Maximum threads per SM = max_warps x 32 (1,536 on sm_86/sm_89, 2,048 on sm_70/80/90).
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


# The per-product figures (SM count, clocks, bandwidths, L2) live in ptxopt/sim/device.py.

_DTYPE_BYTES = {"u8": 1, "s8": 1, "b8": 1, "f16": 2, "bf16": 2, "u16": 2, "s16": 2, "b16": 2, "f32": 4, "u32": 4,
                "s32": 4, "b32": 4, "f64": 8, "u64": 8, "s64": 8, "b64": 8}


def _buffer_bytes(spec, inout_factor: int) -> int | None:
    """Bytes of a corpus kernel's input/output/inout buffers (``count`` x dtype
    size), an inout one counted ``inout_factor`` times; None when a buffer's
    size is unknown."""
    total = 0
    for p in getattr(spec, "params", ()):
        if p.role not in ("input", "output", "inout"):
            continue
        size = _DTYPE_BYTES.get(p.dtype)
        if size is None or p.count is None:
            return None
        total += size * int(p.count) * (inout_factor if p.role == "inout" else 1)
    return total


def footprint_of_spec(spec) -> int | None:
    """Distinct global bytes a corpus kernel's launch touches: the sum of its
    buffer parameters (input/output/inout, ``count`` x dtype size).  None when
    a buffer's size is unknown."""
    return _buffer_bytes(spec, 1)


def dram_bytes_of_spec(spec) -> int | None:
    """Global bytes a corpus kernel's launch must move between DRAM and the
    chip when its data does not stay in L2: every ``input`` buffer read once,
    every ``output`` buffer written once (whole sectors: no read for
    ownership), every ``inout`` buffer read *and* written back (twice its
    size) -- the roofline's numerator (:mod:`ptxopt.sim.throughput`).  Scratch
    buffers are not counted.  None when a buffer's size is unknown.

    It is also what the model compares with the L2 capacity to decide whether
    the data stays L2-resident; for read-modify-write buffers that is
    conservative (their distinct bytes are half of it)."""
    return _buffer_bytes(spec, 2)


__all__ += ["footprint_of_spec", "dram_bytes_of_spec"]
