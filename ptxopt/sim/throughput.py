"""The time of a whole launch (objective ``throughput``) or of one warp
(objective ``latency``), from what the single-warp walk measured.

Why two objectives: the earlier hardware work timed one warp (``%clock64``
around one thread's work) -- the right figure for single-thread gemm tiles
and the one :mod:`ptxopt.sim.model` is calibrated on.  Kernels launched over
the whole GPU are paid for by the time of the launch: blocks spread over the
SMs in waves, and a register budget that helps one warp may cut resident
warps and lose more than it gains (BRIEF section 6).

The throughput model (per SM; the busiest SM sets the launch's time)::

    occupancy       blocks/SM from registers, shared memory, block size and the
                    architecture's caps (ptxopt.sim.occupancy: the CUDA rules)
    blocks per SM   ceil(grid blocks / SMs); full waves of blocks/SM, then a tail
                    wave of the remainder
    one wave of n resident blocks takes the largest of
      latency       one warp's walked path (too few warps to hide it)
      issue         ceil(n x warps/block / 4 schedulers) x issued instructions
      tensor        n x warps/block x tensor-core operations per warp / the device's
                    dense tensor peak per SM per cycle, per input precision
                    (ptxopt.sim.tensor_work counts the MMA shapes; vendor peaks in
                    ptxopt.sim.device): the compute roofline of mma/wgmma kernels
      LSU issue     n x warps/block x memory instructions / 1 per SM cycle
      L1 bandwidth  n x threads/block x bytes through L1 / 128 B per cycle (a warp's
                    global access: 128 B per wavefront, one per distinct line its
                    lanes touch, ptxopt.sim.coalescing)
      L2 bandwidth  n x threads/block x bytes to/from L2 / the device's L2 B/cycle
                    (a warp's global access: the distinct 32-byte sectors its lanes touch)
      bytes in flight  Little's law: n x threads/block x (misses' bytes x latency) /
                    min(their bytes in flight at first waits, the device's per-SM cap)
                    (ptxopt.sim.inflight; reported never below the L2/DRAM bounds)
    launch          sum over the waves, and at least every floor the launch gives
      DRAM bandwidth  DRAM bytes / (SMs x DRAM bytes per SM cycle)  (roofline)
      L2 bandwidth    the DRAM floor's bytes / (SMs x L2 bytes per SM cycle): every
                      distinct sector crosses L2 at least once, warm L2 or cold
      arithmetic      FP32 / FP16 / tensor work the whole launch must execute / the
                      device's peak (ptxopt.sim.floors: counted in the PTX with the
                      launch's trips; ``floors=``), the class that binds named in
                      the notes

So no estimate is below a floor it was given, by construction: the floors are bounds of the max,
not a check after it.

A bound's value is its total over the launch; ``binding`` is the largest.
Warps overlap perfectly up to the point where a resource saturates (the
model's ``max``; real kernels sit somewhat above it).

DRAM bytes: ``footprint_bytes``, the bytes the launch must move between DRAM
and the chip (every buffer once, a read-modify-write buffer twice:
:func:`ptxopt.sim.occupancy.dram_bytes_of_spec`; a lower bound on the
traffic, so the bound is a true roofline).  Without
it no DRAM bound applies (per-thread traffic counts shared data once per
thread: an upper bound on bytes gives no lower bound on time).

L2 residency is a stated choice (``l2``), never an assumption:

* ``cold`` (the default, what GPU benchmarks measure: Triton's ``do_bench``
  flushes L2 between runs): the footprint comes from DRAM whatever its size,
  and the walked warp's first touch of a sector pays the DRAM latency
  (:func:`ptxopt.sim.simulate` with ``l2="cold"``);
* ``warm`` (repeated launches with nothing in between): a footprint that fits
  in L2 is already there, so nothing is charged to DRAM; a larger one streams.

The latency objective is calibrated on warm single-warp timings and stays warm.

DRAM floor (:class:`DramFloor`, the one input it reads): the launch's distinct global bytes, every
sector read once and written once, as :mod:`ptxopt.analysis.global_footprint` finds them from the
kernel's address expressions (``exact``) or as the user counts them (contract ``counts``,
``--perf-bytes``).  The launch can never beat them over the device's DRAM bandwidth with a cold L2
(GPU benchmarks flush it between runs), so the DRAM bound is at least that; an ``extrapolated`` or
``unknown`` footprint sets no floor, and the estimate says so.

When the grid is unknown, the estimate assumes ``blocks`` given by the caller
-- :func:`assumed_blocks` of the ORIGINAL kernel, so that every candidate of
one search does the same work -- and says ``assumed``.

Error bars: latency estimates carry the model's calibrated single-warp error
(``ptxopt.sim.model.EXPECTED_ERROR``, from three published L4 baselines);
throughput estimates are ``uncalibrated``: no GPU has measured one yet.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from . import inflight
from .device import Device
from .occupancy import occupancy as _occupancy

OBJECTIVES = ("latency", "throughput")
#: Full waves a launch without a known grid is assumed to run (of the original kernel's occupancy).
ASSUMED_WAVES = 4
#: L2 residency at the start of a throughput launch (module doc); the first is the default.
L2_STATES = ("cold", "warm")
DEFAULT_L2 = "cold"
#: Order of the bounds; ties go to the first ("bytes in flight" is last: at a tie the floor it never
#: goes below is named).
BOUND_NAMES = ("latency", "issue", "tensor", "arithmetic", "LSU issue", "L1 bandwidth", "L2 bandwidth",
               "DRAM bandwidth", "bytes in flight")
#: The bounds of one wave of resident blocks (summed over the waves); the others hold for the launch.
WAVE_BOUNDS = ("latency", "issue", "tensor", "LSU issue", "L1 bandwidth", "L2 bandwidth", "bytes in flight")


@dataclass(frozen=True)
class KernelFacts:
    """What the single-warp walk and ptxas say about one kernel (a
    :class:`~ptxopt.sim.model.SimResult` has the same attributes)."""

    single_warp_cycles: float
    issued_instructions: int
    memory_instructions: int = 0  # LD/ST/atomics the warp issued (the LSU pipe's work)
    l1_bytes: int = 0  # bytes one thread moved through L1/shared
    l2_bytes: int = 0  # bytes one thread moved to/from L2
    registers: int | None = None
    shared_bytes: int = 0  # static shared memory per block (ptxas)
    expected_error: float = 0.0  # the single-warp estimate's calibrated error
    expected_error_basis: str = ""
    tensor_flops: dict = field(default_factory=dict)  # tensor-core operations per warp, by input precision
    inflight_bytes: float = 0.0  # bytes one thread has in flight at its first waits (ptxopt.sim.inflight)
    miss_latency_bytes: float = 0.0  # one thread's global-load misses: sum of bytes x their level's latency

    @classmethod
    def of(cls, obj) -> "KernelFacts":
        """From a SimResult, a dict (e.g. the sim backend's ``Measurement.extra["facts"]``), or any
        object with these attribute names."""
        get = obj.get if isinstance(obj, dict) else (lambda k, d=None: getattr(obj, k, d))
        return cls(float(get("single_warp_cycles")), int(get("issued_instructions")),
                   int(get("memory_instructions", 0) or 0), int(get("l1_bytes", 0) or 0),
                   int(get("l2_bytes", 0) or 0), get("registers"), int(get("shared_bytes", 0) or 0),
                   float(get("expected_error", 0.0) or 0.0), str(get("expected_error_basis", "") or ""),
                   {str(k): float(v) for k, v in dict(get("tensor_flops", None) or {}).items()},
                   float(get("inflight_bytes", 0.0) or 0.0), float(get("miss_latency_bytes", 0.0) or 0.0))

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LaunchShape:
    """The launch an estimate used: grid None = unknown (blocks assumed)."""

    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    shared_bytes: int = 0  # dynamic shared memory per block
    scalars: dict = field(default_factory=dict)
    origin: str = ""  # where it came from: "contract", "--perf-grid", "manifest", ...

    @property
    def threads(self) -> int | None:
        return None if self.block is None else math.prod(self.block)

    @property
    def blocks(self) -> int | None:
        return None if self.grid is None else math.prod(self.grid)

    def to_json(self) -> dict:
        return {"grid": None if self.grid is None else list(self.grid),
                "block": None if self.block is None else list(self.block),
                "shared_bytes": self.shared_bytes, "scalars": dict(self.scalars), "origin": self.origin}


def _dims(x) -> tuple[int, ...] | None:
    if x is None:
        return None
    if isinstance(x, int):
        return (int(x),)
    return tuple(int(v) for v in x)


def launch_shape(launch=None, *, grid=None, block=None, shared_bytes=None, scalars=None,
                 origin: str | None = None) -> LaunchShape:
    """A :class:`LaunchShape` from plain values, a ``(grid, block[, shared])``
    tuple, or any object with ``grid``/``block``/``shared_bytes`` (and
    optionally ``scalars``/``origin``) attributes -- the corpus ``Launch``, the
    equivalence ``Launch``.  Keyword values override the object's."""
    if isinstance(launch, LaunchShape) and grid is block is shared_bytes is scalars is origin is None:
        return launch
    g = b = None
    sh, sc, org = 0, {}, ""
    if isinstance(launch, tuple):
        g, b = launch[0], launch[1]
        sh = launch[2] if len(launch) > 2 else 0
    elif launch is not None:
        g, b = getattr(launch, "grid", None), getattr(launch, "block", None)
        sh = getattr(launch, "shared_bytes", 0) or 0
        sc = dict(getattr(launch, "scalars", None) or {})
        org = str(getattr(launch, "origin", "") or "")
    g = grid if grid is not None else g
    b = block if block is not None else b
    sh = shared_bytes if shared_bytes is not None else sh
    sc = dict(scalars) if scalars is not None else sc
    org = origin if origin is not None else org
    return LaunchShape(_dims(g), _dims(b), int(sh or 0), sc, org)


#: why a rewrite's DRAM floor is its original's (source ``carried``)
CARRIED = "carried from the original (a rewrite is kept only when checked equivalent to it: it needs the same bytes)"


@dataclass(frozen=True)
class DramFloor:
    """What the DRAM floor reads: ``floor_bytes`` the launch must move between DRAM and the chip with
    a cold L2 (None: no floor), and ``source`` where they come from: ``counts`` (the user's per-buffer
    counts), ``exact`` (the kernel's affine address expressions), ``carried`` (a rewrite's: its
    original's exact floor, :mod:`ptxopt.analysis.carried_footprint`), ``extrapolated`` / ``unknown``
    (no floor: an upper bound on bytes is no lower bound on time)."""

    floor_bytes: int | None
    source: str = "unknown"

    @classmethod
    def of(cls, obj) -> "DramFloor | None":
        """From a DramFloor, a :class:`~ptxopt.analysis.global_footprint.LaunchFootprint`, a dict with
        ``floor_bytes``/``source``, or None."""
        if obj is None or isinstance(obj, DramFloor):
            return obj
        get = obj.get if isinstance(obj, dict) else (lambda k, d=None: getattr(obj, k, d))
        fb = get("floor_bytes")
        return cls(None if fb is None else int(fb), str(get("source", "unknown") or "unknown"))

    def to_json(self) -> dict:
        out = {"source": self.source, "floor_bytes": self.floor_bytes}
        if self.source == "carried":
            out["note"] = CARRIED
        return out


def default_objective(launch) -> str:
    """``throughput`` when the launch's block size is known, ``latency`` otherwise."""
    if launch is None:
        return "latency"
    return "throughput" if launch_shape(launch).block is not None else "latency"


@dataclass(frozen=True)
class Estimate:
    """An ESTIMATE (``kind`` is always "estimate") of one kernel under one launch and objective."""

    objective: str
    cycles: float  # SM cycles: one warp (latency) or the whole launch on the busiest SM (throughput)
    seconds: float  # cycles at the device's boost clock
    device: Device
    launch: LaunchShape | None
    assumed: bool  # the grid was assumed (blocks for ASSUMED_WAVES full waves)
    expected_error: float | None  # relative (0.25 = +-25%); None = uncalibrated
    error_basis: str
    occupancy: dict | None  # warps_per_sm, blocks_per_sm, occupancy, limited_by (None: block unknown)
    bounds: dict  # bound name -> cycles over the launch
    binding: str
    dram_bytes: int  # bytes charged to DRAM (0: none known, or L2-resident under ``l2="warm"``)
    waves: float | None  # grid blocks / (SMs x blocks per SM); None for latency
    blocks: int | None  # grid blocks the estimate used
    resident_warps: int = 1  # warps per SM in a full wave
    warps_per_scheduler: int = 1
    full_waves: int = 0
    tail_blocks: int = 0  # blocks per SM in the last, partial wave (0: none)
    arithmetic_class: str | None = None  # the work class that sets the arithmetic bound ("fp32", "tensor:fp16")
    wave_bounds: dict = field(default_factory=dict)  # bounds of the first (fullest) wave, cycles
    notes: tuple[str, ...] = ()
    l2: str | None = None  # L2 at the launch's start, "cold" or "warm" (None: latency, calibrated warm)
    kind: str = "estimate"
    dram_floor: DramFloor | None = None  # the DRAM floor's input (None: none given)

    @property
    def error_text(self) -> str:
        return "uncalibrated" if self.expected_error is None else f"±{100 * self.expected_error:.0f}%"

    def to_json(self) -> dict:
        """The ``estimate``/``occupancy``/``bounds`` keys of ``ptxopt explain --json``."""
        return {
            "objective": self.objective,
            "launch": None if self.launch is None else {**self.launch.to_json(), "assumed": self.assumed,
                                                        "blocks": self.blocks},
            "occupancy": self.occupancy,
            "binding": self.binding,
            "bounds": dict(self.bounds),
            "arithmetic_class": self.arithmetic_class,
            "estimate": {"cycles": self.cycles, "seconds": self.seconds, "kind": self.kind,
                         "expected_error": "uncalibrated" if self.expected_error is None else self.expected_error},
            "dram_bytes": self.dram_bytes,
            "footprint": (self.dram_floor or DramFloor(None)).to_json(),
            "l2": self.l2,
            "waves": self.waves,
            "device": self.device.to_json(),
        }


def occupancy_of(facts, launch: LaunchShape, device: Device):
    """The :class:`~ptxopt.sim.occupancy.Occupancy` of ``facts`` under ``launch`` on ``device``."""
    if not facts.registers:
        raise ValueError("the occupancy needs the kernel's registers per thread (ptxas resources)")
    return _occupancy(device.arch, launch.threads, facts.registers,
                      int(facts.shared_bytes or 0) + launch.shared_bytes)


def assumed_blocks(facts, launch, device: Device, waves: int = ASSUMED_WAVES) -> int:
    """Grid blocks for ``waves`` full waves at ``facts``' occupancy: call it on
    the ORIGINAL kernel and pass the result as ``blocks=`` for every candidate,
    so a register budget changes the time of the same work, not the work."""
    occ = occupancy_of(facts, launch_shape(launch), device)
    return waves * device.sms * max(1, occ.blocks_per_sm)


def _occ_json(occ, device: Device) -> dict:
    return {"warps_per_sm": occ.warps_per_sm, "blocks_per_sm": occ.blocks_per_sm,
            "occupancy": occ.occupancy(device.limits), "limited_by": occ.limited_by}


def estimate(facts, launch=None, device: Device | None = None, objective: str | None = None, *,
             blocks: int | None = None, footprint_bytes: int | None = None, arch: str | None = None,
             dram_floor=None, l2: str = DEFAULT_L2, floors=None) -> Estimate:
    """Estimate ``facts`` (a SimResult or :class:`KernelFacts`) under ``launch``.

    * ``launch``: anything :func:`launch_shape` accepts; its grid may be None.
    * ``device``: default: :func:`~ptxopt.sim.device.device_for` of ``arch``
      (or of ``facts.arch``, else sm_89).
    * ``objective``: ``latency`` or ``throughput`` (default:
      :func:`default_objective`).  Throughput needs the block size.
    * ``blocks``: grid blocks to assume when the grid is unknown (pass
      :func:`assumed_blocks` of the original kernel); None: this kernel's own
      occupancy x :data:`ASSUMED_WAVES` (fine for a lone kernel, not for
      comparing candidates).
    * ``footprint_bytes``: bytes the launch must move from/to DRAM (0: none).
    * ``dram_floor``: a :class:`DramFloor` (or anything :meth:`DramFloor.of` takes): the DRAM bound
      is at least its bytes over the bandwidth (throughput only; with ``l2="warm"`` only when the
      bytes exceed L2).
    * ``floors``: the launch's arithmetic floors (a :class:`ptxopt.sim.floors.Floors`, or a dict
      class -> cycles such as its ``arithmetic_cycles``): the ``arithmetic`` bound (throughput only).
      With ``dram_floor`` they make the estimate at least every floor of :mod:`ptxopt.sim.floors`.
    * ``l2``: ``cold`` (default) or ``warm``, the L2 at the launch's start
      (throughput only; module doc).  The walk behind ``facts`` should have
      used the same (:func:`ptxopt.sim.simulate` ``l2=``): first touches pay
      the DRAM latency when cold.
    """
    if device is None:
        from .device import device_for

        device = device_for(arch or getattr(facts, "arch", "") or "sm_89")
    shape = None if launch is None else launch_shape(launch)
    objective = objective or default_objective(shape)
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (one of: {', '.join(OBJECTIVES)})")
    if l2 not in L2_STATES:
        raise ValueError(f"unknown L2 state {l2!r} (one of: {', '.join(L2_STATES)})")
    occ = None
    if shape is not None and shape.block is not None and facts.registers:
        occ = occupancy_of(facts, shape, device)
    if objective == "latency":
        return _latency(facts, shape, device, occ)
    if shape is None or shape.block is None:
        raise ValueError("the throughput objective needs the block size of the launch")
    if occ is None:
        raise ValueError("the throughput objective needs the kernel's registers per thread (ptxas resources)")
    return _throughput(facts, shape, device, occ, blocks, footprint_bytes, l2, DramFloor.of(dram_floor),
                       _arithmetic_of(floors))


def _latency(facts, shape, device: Device, occ) -> Estimate:
    cycles = float(facts.single_warp_cycles)
    return Estimate(
        "latency", cycles, device.seconds(cycles), device, shape, False,
        facts.expected_error or None, facts.expected_error_basis or "single-warp estimate",
        None if occ is None else _occ_json(occ, device), {"latency": cycles}, "latency", 0, None,
        None if shape is None else shape.blocks,
        notes=("latency: one warp's time (%clock64 around one thread's work); occupancy shown for information",))


def _wave(n: int, facts, warps_per_block: int, threads: int, device: Device) -> dict:
    """Cycles of one wave of ``n`` resident blocks on one SM, by bound."""
    lim = device.limits
    warps = n * warps_per_block
    per_sched = -(-warps // lim.schedulers)
    return {
        "latency": float(facts.single_warp_cycles),
        "issue": per_sched * facts.issued_instructions / device.issue_per_cycle,
        "tensor": warps * tensor_cycles(facts, device),
        "LSU issue": warps * facts.memory_instructions / device.lsu_instructions_per_cycle,
        "L1 bandwidth": n * threads * facts.l1_bytes / device.l1_bytes_per_cycle,
        "L2 bandwidth": n * threads * facts.l2_bytes / device.l2_bytes_per_cycle,
        "bytes in flight": inflight.wave_cycles(n * threads, facts, device),  # Little's law
    }


def tensor_cycles(facts, device: Device) -> float:
    """SM cycles one warp's tensor-core work takes at the device's dense peak (the whole SM's tensor
    cores serve the warps resident on it).  Precisions the device has no peak for count nothing."""
    rates = device.tensor_flops_per_cycle
    return sum(ops / rates[p] for p, ops in (getattr(facts, "tensor_flops", None) or {}).items() if p in rates)


def _arithmetic_of(floors) -> dict:
    """``{work class: cycles}`` from a Floors, a dict, or None."""
    if floors is None:
        return {}
    got = floors if isinstance(floors, dict) else getattr(floors, "arithmetic_cycles", None) or {}
    return {str(k): float(v) for k, v in got.items() if v}


def _throughput(facts, shape: LaunchShape, device: Device, occ, blocks, footprint, l2: str,
                floor=None, arithmetic: dict | None = None) -> Estimate:
    notes: list[str] = []
    assumed = shape.grid is None
    if not assumed:
        blocks = shape.blocks
    elif blocks is None:
        blocks = ASSUMED_WAVES * device.sms * max(1, occ.blocks_per_sm)
        notes.append(f"grid unknown: {blocks} blocks assumed ({ASSUMED_WAVES} full waves at this kernel's "
                     "occupancy; compare candidates with the original's block count instead)")
    else:
        notes.append(f"grid unknown: {blocks} blocks assumed (given by the caller)")
    blocks = max(1, int(blocks))
    threads = shape.threads
    fits = max(1, occ.blocks_per_sm)
    if occ.blocks_per_sm == 0:
        notes.append(f"WARNING: the block cannot be resident at all ({occ.limited_by}); one block per SM assumed")
    per_sm = -(-blocks // device.sms)  # the busiest SM's share (even spread)
    full, tail = divmod(per_sm, fits)
    waves_here = [fits] * full + ([tail] if tail else [])
    per_wave = [_wave(n, facts, occ.warps_per_block, threads, device) for n in waves_here]
    bounds = {k: sum(w[k] for w in per_wave) for k in WAVE_BOUNDS}
    sm_cycles = sum(max(w.values()) for w in per_wave)
    # roofline: the launch's distinct bytes (a lower bound on what DRAM must move) over the device's
    # bandwidth.  Per-thread traffic is no substitute: it counts data shared between threads once per
    # thread (an upper bound on bytes makes no lower bound on time), so without a footprint no DRAM
    # bound applies and the L2 bound carries the traffic.
    dram = int(footprint or 0)
    if footprint is None:
        notes.append("footprint unknown: no DRAM bound (give the launch's distinct bytes for the roofline)")
    elif l2 == "cold":
        notes.append(f"L2 cold (flushed before the launch, as GPU benchmarks do): the footprint {dram:,} B "
                     "comes from DRAM")
    elif dram <= device.l2_bytes:
        if dram:
            notes.append(f"L2 warm (chosen): the footprint {dram:,} B fits in L2 ({device.l2_bytes:,} B) "
                         "and is already there, no DRAM time")
        dram = 0
    else:
        notes.append(f"L2 warm (chosen): the footprint {dram:,} B exceeds L2 ({device.l2_bytes:,} B) "
                     "and streams from DRAM")
    bounds["DRAM bandwidth"] = dram / (device.sms * device.dram_bytes_per_cycle)
    applied = floor
    if l2 == "warm" and floor is not None and floor.floor_bytes is not None and floor.floor_bytes <= device.l2_bytes:
        notes.append(f"no DRAM floor: L2 warm (chosen) and the footprint's {floor.floor_bytes:,} B fit in L2")
        applied = None
    dram = _apply_dram_floor(applied, bounds, device, notes, dram)
    _apply_l2_floor(floor, bounds, device, notes)
    cls = _apply_arithmetic(arithmetic or {}, bounds, device, notes)
    bounds = {k: bounds[k] for k in BOUND_NAMES}
    # bytes in flight: never below the bandwidth floors of the bytes it moves (ptxopt.sim.inflight)
    bounds["bytes in flight"] = max(bounds["bytes in flight"], bounds["L2 bandwidth"], bounds["DRAM bandwidth"])
    notes.extend(filter(None, [inflight.note(waves_here[0] * threads, waves_here[0] * occ.warps_per_block,
                                             facts, device)]))
    # the floors are bounds of the launch, never beaten: the waves' time, or the highest floor
    cycles = max(sm_cycles, bounds["DRAM bandwidth"], bounds["L2 bandwidth"], bounds["arithmetic"])
    binding = max(BOUND_NAMES, key=lambda k: (bounds[k], -BOUND_NAMES.index(k)))
    resident = fits * occ.warps_per_block if full else tail * occ.warps_per_block
    return Estimate(
        "throughput", float(cycles), device.seconds(cycles), device, shape, assumed,
        None, "uncalibrated: the many-warp model (occupancy, issue, LSU, L1/L2/DRAM bounds) has not been "
              "measured on a GPU",
        _occ_json(occ, device), bounds, binding, dram, blocks / (device.sms * fits), blocks,
        resident_warps=resident, warps_per_scheduler=-(-resident // device.limits.schedulers),
        full_waves=full, tail_blocks=tail, wave_bounds=dict(per_wave[0]), notes=tuple(notes), dram_floor=floor,
        l2=l2, arithmetic_class=cls)


def _apply_l2_floor(floor: DramFloor | None, bounds: dict, device: Device, notes: list) -> None:
    """Raise the L2 bound to the DRAM floor's bytes over the chip's L2 bandwidth: every distinct sector
    the launch reads or writes crosses L2 at least once, whether L2 starts cold or warm."""
    if floor is None or floor.floor_bytes is None:
        return
    cycles = floor.floor_bytes / (device.sms * device.l2_bytes_per_cycle)
    if cycles > bounds["L2 bandwidth"]:
        notes.append(f"L2 floor: the footprint's {floor.floor_bytes:,} B ({floor.source}) cross L2 at least once "
                     f"= {cycles:,.0f} cycles, above the walked traffic's {bounds['L2 bandwidth']:,.0f}")
        bounds["L2 bandwidth"] = cycles


def _apply_arithmetic(arithmetic: dict, bounds: dict, device: Device, notes: list) -> str | None:
    """Set the ``arithmetic`` bound to the highest work-over-peak floor; returns its class (None: none)."""
    bounds["arithmetic"] = 0.0
    if not arithmetic:
        return None
    cls = max(sorted(arithmetic), key=lambda k: arithmetic[k])
    bounds["arithmetic"] = arithmetic[cls]
    notes.append(f"arithmetic floor: {cls} work over the {device.product}'s peak = {arithmetic[cls]:,.0f} cycles "
                 "(ptxopt.sim.floors; loops x the launch's trips)")
    return cls


def _apply_dram_floor(floor: DramFloor | None, bounds: dict, device: Device, notes: list, dram: int) -> int:
    """Raise the DRAM bound to the floor's bytes over the bandwidth (cold L2); returns the bytes charged."""
    if floor is None:
        return dram
    if floor.floor_bytes is None:
        notes.append(f"no DRAM floor: footprint {floor.source} (an upper bound on bytes is no lower bound "
                     "on time; give the buffers' counts with --perf-bytes)")
        return dram
    notes[:] = [n for n in notes if not n.startswith("footprint unknown")]  # the floor gives the bytes
    cycles = floor.floor_bytes / (device.sms * device.dram_bytes_per_cycle)
    if cycles > bounds["DRAM bandwidth"]:
        bounds["DRAM bandwidth"] = cycles
        dram = floor.floor_bytes
    notes.append(f"DRAM floor: {floor.floor_bytes:,} B ({floor.source}; cold L2) = {cycles:,.0f} cycles"
                 + (f"; {CARRIED}" if floor.source == "carried" else ""))
    return dram


__all__ = ["OBJECTIVES", "ASSUMED_WAVES", "BOUND_NAMES", "WAVE_BOUNDS", "KernelFacts", "LaunchShape", "Estimate", "DramFloor",
           "launch_shape", "default_objective", "occupancy_of", "assumed_blocks", "estimate", "tensor_cycles"]
