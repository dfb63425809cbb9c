"""Tensor-core work of one SASS instruction: the MMA shape and the input precision.

Why: a kernel whose time is set by its matrix instructions (a GEMM, flash
attention) has a compute roofline that none of the walk's other bounds
express -- ``HMMA`` issues once per few cycles per warp, so the issue bound
sees one instruction where the tensor core does thousands of operations.
The throughput model divides the work counted here by the device's
tensor-core peak per SM per cycle (:attr:`ptxopt.sim.device.Device.tensor_flops_per_cycle`,
vendor figures, cited there) to get a bound the estimate is never below.

The work of a warp-level MMA ``m x n x k`` is ``2 m n k`` operations (one
multiply and one add per product term; the vendor peak figures count the same
way).  A warpgroup MMA (``HGMMA``/``IGMMA``/``QGMMA``, sm_90) names the
warpgroup's shape; each of the four warps issues the instruction, so one
warp's share is a quarter of it.  The shape is read from the SASS opcode
modifier (``HMMA.16816.F32`` = m16n8k16, ``HGMMA.64x128x16.F32`` = m64n128k16;
the PTX ISA's ``mma``/``wgmma`` shapes: ``.m16n8k16`` ...).

Instructions whose shape or precision is not in the tables here (``BMMA``,
Volta's ``HMMA.884`` steps) count no work: leaving work out only lowers the
bound, so it stays a lower bound on the time.
"""

from __future__ import annotations

import re

#: Input-precision classes of the tensor peak tables (dense rates).
PRECISIONS = ("fp64", "tf32", "fp16", "fp8", "int8", "int4")

#: Warp-level MMA shape modifiers in SASS -> (m, n, k) (PTX ISA "Matrix shape" of mma.sync).
MMA_SHAPES = {
    "16816": (16, 8, 16), "1688": (16, 8, 8), "1684": (16, 8, 4), "16832": (16, 8, 32),
    "16864": (16, 8, 64), "8816": (8, 8, 16), "8832": (8, 8, 32),
}
_GMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")
_FP8 = frozenset({"E4M3", "E5M2"})
_INT4 = frozenset({"S4", "U4"})
WARPS_PER_WARPGROUP = 4  # PTX ISA, "Warpgroup": four contiguous warps


def tensor_work(base: str, modifiers: tuple[str, ...]) -> tuple[str, float] | None:
    """``(precision, operations per warp)`` of a tensor-core instruction, else None."""
    mods = set(modifiers)
    if base in ("HGMMA", "IGMMA", "QGMMA"):
        shape = next((m for m in modifiers if _GMMA_SHAPE.match(m)), None)
        if shape is None:
            return None
        m, n, k = (int(x) for x in _GMMA_SHAPE.match(shape).groups())
        if base == "IGMMA":
            prec = "int8"
        elif base == "QGMMA" or mods & _FP8:
            prec = "fp8"
        elif "TF32" in mods:
            prec = "tf32"
        else:
            prec = "fp16"
        return prec, 2.0 * m * n * k / WARPS_PER_WARPGROUP
    if base == "DMMA":
        shape = (8, 8, 4) if "884" in mods else MMA_SHAPES.get(modifiers[0] if modifiers else "")
        if shape is None:
            return None
        return "fp64", 2.0 * shape[0] * shape[1] * shape[2]
    if base not in ("HMMA", "IMMA") or not modifiers:
        return None
    shape = MMA_SHAPES.get(modifiers[0])
    if shape is None:
        return None
    m, n, k = shape
    if base == "IMMA":
        prec = "int4" if mods & _INT4 else "int8"
    elif mods & _FP8:
        prec = "fp8"
    elif "TF32" in mods:
        prec = "tf32"
    else:  # F16 / BF16 inputs (the default spelling: HMMA.16816.F32 = f16 inputs, f32 accumulate)
        prec = "fp16"
    return prec, 2.0 * m * n * k


__all__ = ["PRECISIONS", "MMA_SHAPES", "tensor_work"]
