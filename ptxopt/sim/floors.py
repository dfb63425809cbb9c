"""Floors a whole-launch estimate can never beat, computed apart from the model that makes it.

Why: a model can be wrong in ways its own bounds hide (a prefetch that erases traffic, a loop counted
once).  These floors come from the kernel and the launch alone, with the device's vendor peaks, so an
estimate below one of them is a model error by physics, not by opinion:

* **DRAM**: the launch's distinct bytes (sectors read + written,
  :mod:`ptxopt.analysis.global_footprint`, only where ``exact``) over the device's DRAM bandwidth,
  with a cold L2 (GPU benchmarks flush it between runs);
* **L2**: the same sectors cross L2 at least once: over the whole chip's L2 bandwidth;
* **arithmetic**: FP32 and FP16 operations and tensor-core MMA work that every thread (warp) of the
  launch must execute -- counted in the PTX in blocks that run on every path to the exit, times the
  trip counts of the loops around them at this launch (where the exit test depends on no thread
  index; one less than the counter's values, a lower bound; other loops count once) --
  over the device's peak per SM per cycle.  A lower bound: work on some paths only, or in loops whose
  trip is not known, is left out.  Integer work sets no floor: ptxas folds PTX address arithmetic
  into instruction offsets and ``IMAD``/``LEA`` forms, so a PTX count is no lower bound.

Peaks: FP32 lanes per SM per cycle from the CUDA C++ Programming Guide's arithmetic-instruction
throughput table (compute capability 8.0: 64; 8.6, 8.9, 9.0: 128); FP16 at twice the FP32 rate
(``half2``: two results per lane), an upper end of the table, so the floor stays a floor; tensor
peaks from :attr:`ptxopt.sim.device.Device.tensor_flops_per_cycle` (cited there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.analysis.global_footprint import footprint_for_launch, trips_and_branches
from ptxopt.analysis.loops import loops_of

from .device import Device

#: FP32 results per SM per cycle by compute capability (CUDA C++ Programming Guide, "Arithmetic
#: Instructions" throughput table; 32-bit floating-point add, multiply, multiply-add).
FP32_LANES = {"sm_80": 64, "sm_86": 128, "sm_87": 128, "sm_89": 128, "sm_90": 128}
#: PTX mma shapes (``.m16n8k16``) -> (m, n, k)
_MMA = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k4": (16, 8, 4), "m16n8k32": (16, 8, 32),
        "m8n8k4": (8, 8, 4), "m8n8k16": (8, 8, 16), "m16n8k64": (16, 8, 64), "m8n8k32": (8, 8, 32)}
_PREC = {"f16": "fp16", "bf16": "fp16", "tf32": "tf32", "e4m3": "fp8", "e5m2": "fp8", "s8": "int8", "u8": "int8",
         "s4": "int4", "u4": "int4", "f64": "fp64"}
_FP_OPS = {"fma", "add", "sub", "mul", "mad"}


@dataclass(frozen=True)
class Floors:
    """Lower bounds (SM cycles at the device's clock) on one launch's time, and what they count."""

    dram_cycles: float | None  # None: the footprint is not exact (no floor)
    l2_cycles: float | None
    arithmetic_cycles: dict = field(default_factory=dict)  # "fp32" / "fp16" / "tensor:fp16" ... -> cycles
    dram_bytes: int | None = None
    footprint_source: str = "unknown"
    work: dict = field(default_factory=dict)  # the operations counted, per class, over the launch

    @property
    def highest(self) -> float:
        vals = [v for v in (self.dram_cycles, self.l2_cycles, *self.arithmetic_cycles.values()) if v is not None]
        return max(vals, default=0.0)

    def violations(self, cycles: float, rel: float = 1e-6) -> list[str]:
        """The floors ``cycles`` (an estimate of the same launch) is below."""
        out = []
        for name, v in (("DRAM", self.dram_cycles), ("L2", self.l2_cycles), *self.arithmetic_cycles.items()):
            if v is not None and cycles < v * (1 - rel):
                out.append(f"{name} floor {v:,.0f} cycles > estimate {cycles:,.0f}")
        return out

    def to_json(self) -> dict:
        return {"dram_cycles": self.dram_cycles, "l2_cycles": self.l2_cycles,
                "arithmetic_cycles": dict(self.arithmetic_cycles), "dram_bytes": self.dram_bytes,
                "footprint_source": self.footprint_source, "work": dict(self.work)}


def launch_floors(module, entry: str | None, launch, device: Device) -> Floors:
    """The floors of ``entry`` of ``module`` (parsed, or PTX text) under ``launch`` (grid, block,
    scalars) on ``device``; the grid must be known."""
    module = _parsed(module)
    fn = module.pick_entry(entry, "floors")
    fp = footprint_for_launch(module, fn.name, launch)
    dram = fp.floor_bytes  # the exact buffers only (a lower bound even where others are not known)
    dram_cycles = None if dram is None else dram / (device.sms * device.dram_bytes_per_cycle)
    l2_cycles = None if dram is None else dram / (device.sms * device.l2_bytes_per_cycle)
    work, arith = _arithmetic(fn, launch, device)
    return Floors(dram_cycles, l2_cycles, arith, dram, fp.source, work)


def arithmetic_floors(module, entry: str | None, launch, device: Device) -> dict:
    """``{work class: cycles}``: the arithmetic floors alone (what the throughput estimate takes as
    its ``arithmetic`` bound, :func:`ptxopt.sim.throughput.estimate` ``floors=``)."""
    module = _parsed(module)
    return _arithmetic(module.pick_entry(entry, "floors"), launch, device)[1]


def _parsed(module):
    if isinstance(module, str):
        from ptxopt.ptx.parser import parse

        module = parse(module, "floors")
    return module


def _arithmetic(fn, launch, device: Device) -> tuple[dict, dict]:
    """(operations per class over the launch, cycles per class at the device's peak)."""
    threads = _prod(launch.grid) * _prod(launch.block)
    warps = _prod(launch.grid) * -(-_prod(launch.block) // 32)
    sc = dict(launch.scalars or {})
    per_thread, per_warp = _work(fn, *trips_and_branches(fn, launch.grid, launch.block, sc))
    work, arith = {}, {}
    lanes = FP32_LANES.get(device.arch, 128)
    for cls, n in per_thread.items():
        total = n * threads
        work[cls] = total
        arith[cls] = total / (device.sms * (lanes if cls == "fp32" else 2 * lanes))
    for prec, ops in per_warp.items():
        rate = device.tensor_flops_per_cycle.get(prec)
        if rate:
            work[f"tensor:{prec}"] = ops * warps
            arith[f"tensor:{prec}"] = ops * warps / (device.sms * rate)
    return work, arith


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


def _always(cfg, decided: dict) -> set:
    """Blocks every thread runs at this launch: on every path from the entry to an exit, with the
    branches the launch decides (``decided``: block -> taken) followed one way."""
    exits = [b.index for b in cfg.blocks if b.instructions and b.instructions[-1].opcode in ("ret", "exit")
             and b.instructions[-1].guard is None]

    def succs(b):
        blk = cfg.blocks[b]
        if b not in decided or len(blk.succs) < 2:
            return blk.succs
        term = blk.instructions[-1]
        label = term.operands[0].name if term.operands and hasattr(term.operands[0], "name") else None
        taken = cfg.label_block.get(label)
        return [s for s in blk.succs if (s == taken) == decided[b]]

    def reaches_exit(avoid):
        seen, todo = {0}, [0]
        if avoid == 0:
            return False
        while todo:
            b = todo.pop()
            if b in exits:
                return True
            for s in succs(b):
                if s != avoid and s not in seen:
                    seen.add(s)
                    todo.append(s)
        return False

    if not exits or not reaches_exit(None):
        return set()
    return {b.index for b in cfg.blocks if not reaches_exit(b.index)}


def _work(fn, trips: dict, decided: dict | None = None) -> tuple[dict, dict]:
    """(per-thread FP32/FP16 operations, per-warp tensor operations by precision) that every thread
    runs: blocks on every path to the exit, times the trips of the loops around them (``trips``: per
    loop header, the counter's values at this launch, :func:`~ptxopt.analysis.global_footprint.trips_and_branches`; else a constant trip)."""
    cfg, info = loops_of(fn)
    always = _always(cfg, decided or {})
    per_thread: dict = {}
    per_warp: dict = {}
    for b in cfg.blocks:
        if b.index not in always:
            continue
        times = 1
        for lp in info.loops:
            if b.index in lp.blocks:
                t = trips.get(lp.header) or (lp.trip.value if lp.trip.kind == "constant" and lp.trip.value else 1)
                times *= max(1, t - 1)  # the counter takes t values; a body runs at least t - 1: a lower bound
        for ins in b.instructions:
            if ins.guard is not None:
                continue
            if ins.opcode in _FP_OPS:
                if "f32" in ins.modifiers:
                    per_thread["fp32"] = per_thread.get("fp32", 0) + times
                elif "f16x2" in ins.modifiers or "bf16x2" in ins.modifiers:
                    per_thread["fp16"] = per_thread.get("fp16", 0) + 2 * times
                elif "f16" in ins.modifiers or "bf16" in ins.modifiers:
                    per_thread["fp16"] = per_thread.get("fp16", 0) + times
            elif ins.opcode == "mma":
                shape = next((_MMA[m] for m in ins.modifiers if m in _MMA), None)
                prec = next((_PREC[m] for m in ins.modifiers[::-1] if m in _PREC), None)
                if shape is not None and prec is not None:
                    m, n, k = shape
                    per_warp[prec] = per_warp.get(prec, 0) + 2 * m * n * k * times
    return per_thread, per_warp


__all__ = ["FP32_LANES", "Floors", "launch_floors", "arithmetic_floors"]
