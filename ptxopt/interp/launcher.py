"""Launching a kernel: memory set-up, arguments, the CTA loop, results.

``run_kernel`` is the interpreter's front door. Arguments are given per
kernel parameter, in order (or as a dict by parameter name):

* a numpy array: a buffer. Its bytes are copied to a fresh global region
  (256-byte aligned, followed by an unmapped gap) whose address is passed;
  the result holds the buffer's final contents, same dtype and shape;
* ``None``: a null pointer (any access through it faults);
* a Python or numpy scalar: the value, encoded in the parameter's type;
* ``bytes``: raw bytes for a by-value struct parameter (``.b8 p[N]``);
* :class:`Placed` ``(array, offset)``: a buffer whose address is ``offset``
  bytes past a 256-byte aligned allocation (a legal pointer less aligned than
  ``cudaMalloc``'s, such as ``&x[1]``); the ``offset`` bytes before it belong
  to the allocation (seeded garbage) and the result holds the array part;
* :class:`Alias` ``(of, offset)``: a pointer ``offset`` bytes into the buffer
  of argument ``of`` (aliasing or overlapping arguments, as in-place calls
  make); its result entry is None (the memory is ``of``'s).

``schedule`` picks the thread interleaving (:data:`SCHEDULES`).

CTAs run one after another in ``ctaid`` order (x fastest), each with fresh
shared memory. Memory nobody initialised (shared, local, and whatever the
caller put in output buffers) holds deterministic pseudo-random bytes derived
from ``seed``, so a kernel that reads before writing gives the same garbage
in every run, and reads that depend on it show up as differences.
"""

from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass, field

import numpy as np

from ptxopt.interp import dtypes, limits
from ptxopt.interp.decode import BRANCH
from ptxopt.interp.engine import run_entry
from ptxopt.interp.errors import InterpError, LaunchError
from ptxopt.interp.device_memory import NC_READ, WINDOW, Memory, Region
from ptxopt.interp.program import DYNAMIC_SHARED, Program
from ptxopt.interp.shared_reads import SharedReads
from ptxopt.interp.cta_state import CTA

DEFAULT_MAX_STEPS = 5_000_000

#: Thread schedules. ``lockstep``: all threads of a CTA at the same PC run
#: together (fastest). ``warps`` / ``warps-reversed``: each warp runs on its
#: own until it blocks (barrier, exit), warps in ascending / descending order:
#: legal GPU schedules under which a kernel missing a barrier reads data
#: another warp has not written yet, which lockstep execution would hide.
#: ``threads`` / ``threads-reversed``: in the first and the last CTA *each
#: thread* runs on its own until it blocks, in ascending / descending order
#: (independent thread scheduling, Volta+: lanes of one warp may interleave
#: arbitrarily between barriers), so a barrier missing *inside* a warp shows
#: too; lanes meet again only at warp collectives. The other CTAs run
#: warp-serial in the same direction (a thread at a time costs a Python step
#: per thread and instruction).
SCHEDULES = ("lockstep", "warps", "warps-reversed", "threads", "threads-reversed")
MAX_THREADS = 1024


@dataclass(frozen=True)
class Placed:
    """A buffer at ``offset`` bytes past an aligned base (see module doc)."""

    array: np.ndarray
    offset: int


@dataclass(frozen=True)
class Alias:
    """A pointer ``offset`` bytes into argument ``of``'s buffer (see module doc)."""

    of: int
    offset: int = 0


@dataclass
class LaunchResult:
    """What a launch left behind."""

    buffers: list  # per parameter: final array for buffer arguments, else None
    names: list[str]  # parameter names, in order
    steps: int  # instructions issued (one per thread group, like warp instructions)
    thread_steps: int = 0  # instructions summed over the threads of each issuing group
    wall_s: float = 0.0
    ctas: int = 0
    by_name: dict = field(default_factory=dict)
    #: final bytes (uint8) of every ``.global`` variable of the module, module
    #: scope and function scope, by name: kernels write results there too
    globals: dict = field(default_factory=dict)
    #: with ``coverage=True``: ``written`` (per parameter buffer and ``.global``
    #: variable name, a bool per byte: stored at least once), ``stored_threads``
    #: (a bool per thread of the launch, CTA-major: it stored to global
    #: memory), ``branches`` (``(function, pc) -> 1 taken | 2 fallen through``
    #: for the conditional branches reached) and ``conditional_branches``
    #: (how many the functions that ran hold), ``executed`` (function name ->
    #: a bool per instruction, in textual order: it ran with a true guard in
    #: some thread; unguarded branches and taken guarded ones count, a
    #: guarded branch never taken does not); with only ``executed=True``,
    #: just ``executed``
    coverage: dict | None = None
    #: with ``races=True``: ``(count, descriptions)`` of the shared-memory
    #: races seen (:mod:`ptxopt.interp.races`; at most ``MAX_REPORTS`` described)
    races: tuple | None = None
    #: with ``reads``: the read footprint, per parameter buffer name a uint32
    #: per byte: the tag bits of the loads that read it (``ld``, ``ldu``,
    #: atomics, the source of a ``cp.async``), and
    #: :data:`~ptxopt.interp.device_memory.STORED` where a store wrote it (0: never
    #: loaded nor stored)
    reads: dict | None = None
    #: with ``reads``: nonzero when a load tagged :data:`~ptxopt.interp.device_memory.NC_READ`
    #: read bytes the footprint does not hold (a ``.global`` variable, the
    #: bytes before a :class:`Placed` buffer): its ``.nc`` reads are then incomplete
    nc_unrecorded: int = 0
    #: with ``reads``: ``{read tag: bytes}`` that global reads did not read
    #: because the program masked them (a false guard, a ``cp.async``
    #: zero-fill; :meth:`~ptxopt.interp.device_memory.Memory.note_masked`)
    masked: dict | None = None
    #: with ``shared_reads=True``: per CTA in launch order, ``(ctaid, {(barrier
    #: interval, shared variable): packed bits, one per byte read})``
    #: (:mod:`ptxopt.interp.shared_reads`)
    shared_reads: list | None = None


class Launch:
    """Per-launch facts the engine and CTAs read."""

    def __init__(self, program, dfn, grid, block, shared_bytes, max_steps, schedule="lockstep"):
        self.program = program
        self.dfn = dfn
        self.grid = grid
        self.block = block
        self.shared_bytes = shared_bytes
        self.total_shared = program.static_shared_bytes + shared_bytes
        self.max_steps = max_steps
        #: also stop straight-line code: check the launch's total steps at every switch of thread
        #: group, not only at backward branches (a budget must bound a thread-serial run too)
        self.strict_steps = False
        self.steps_before = 0
        self.thread_steps = 0
        self.schedule = schedule
        self.branches: dict | None = None  # coverage: (function, pc) -> direction bits
        self.executed: dict | None = None  # coverage: function -> bool per pc (ran with a true guard)
        threads = block[0] * block[1] * block[2]
        nwarps = (threads + 31) // 32
        self.thread_order = None  # thread-serial schedules: rank of each thread of a serial CTA
        ctas = grid[0] * grid[1] * grid[2]
        self.serial_ctas = {0, ctas - 1}
        if schedule == "lockstep":
            self.warp_rank = None
        elif schedule in ("warps", "threads"):
            self.warp_rank = np.arange(nwarps)
            if schedule == "threads":
                self.thread_order = np.arange(threads)
        elif schedule in ("warps-reversed", "threads-reversed"):
            self.warp_rank = np.arange(nwarps)[::-1].copy()
            if schedule == "threads-reversed":
                self.thread_order = np.arange(threads)[::-1].copy()
        else:
            raise LaunchError(f"unknown schedule {schedule!r} (choose from {', '.join(SCHEDULES)})")


def _dim3(v, what) -> tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchError(f"{what} must be 1 to 3 positive integers, got {v}")
    return v + (1,) * (3 - len(v))


def make_fill(seed: int, salt: str):
    """A region filler producing deterministic garbage bytes."""
    counter = [0]

    def fill(rows, padded):
        counter[0] += 1
        key = zlib.crc32(f"{salt}/{counter[0]}".encode())
        rng = np.random.default_rng([seed & 0xFFFFFFFF, key])
        return rng.integers(0, 256, size=(rows, padded), dtype=np.uint8)

    return fill


def encode_scalar(value, t: str, size: int) -> bytes:
    """The bytes of a scalar argument of PTX type ``t``."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)[:size].ljust(size, b"\0")
    if isinstance(value, np.generic):
        value = value.item()
    k = dtypes.kind(t)
    n = dtypes.bits(t)
    if k == "f":
        if t == "f32":
            return struct.pack("<f", float(value))
        if t == "f64":
            return struct.pack("<d", float(value))
        if t == "f16":
            return np.float16(value).tobytes()
        raise LaunchError(f"cannot pass a scalar of type .{t}")
    if isinstance(value, float):
        if not value.is_integer():
            raise LaunchError(f"{value} passed for an integer parameter (.{t})")
        value = int(value)
    return (int(value) & ((1 << n) - 1)).to_bytes(n // 8, "little")


def run_kernel(module, entry: str | None, grid, block, args, shared_bytes: int = 0, *,
               seed: int = 0, max_steps: int = DEFAULT_MAX_STEPS, schedule: str = "lockstep",
               coverage: bool = False, executed: bool = False, races: bool = False,
               strict_steps: bool = False, reads: bool | dict = False,
               shared_reads: bool = False) -> LaunchResult:
    """Interpret kernel ``entry`` of ``module`` (a :class:`~ptxopt.ptx.ir.Module` or
    a :class:`Program`) on the CPU. See the module doc for ``args``;
    ``coverage`` fills :attr:`LaunchResult.coverage`; ``executed`` alone
    fills just its ``executed`` part (cheaper); ``races`` logs shared-memory
    accesses and reports races (:mod:`ptxopt.interp.races`) in
    :attr:`LaunchResult.races`. ``max_steps`` is checked per CTA at backward
    branches (an endless loop); ``strict_steps`` also checks the launch's
    total at every switch of thread group, so that straight-line code (each
    thread of a thread-serial schedule in turn) stops near the limit too
    (:mod:`ptxopt.equivalence.budget`);
    ``reads`` records which bytes of each
    parameter buffer were loaded (:attr:`LaunchResult.reads`): a dict
    ``{id(instruction): tag bit}`` says which bit each load sets (others set
    :data:`~ptxopt.interp.device_memory.OTHER_READ`). ``shared_reads`` records
    which bytes of shared memory each CTA's loads read in each barrier
    interval (:attr:`LaunchResult.shared_reads`)."""
    t0 = time.perf_counter()
    program = module if isinstance(module, Program) else Program(module)
    fn = program.entry(entry)
    params = program.kernel_params(fn.name)
    grid, block = _dim3(grid, "grid"), _dim3(block, "block")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS:
        raise LaunchError(f"block of {threads} threads (at most {MAX_THREADS})")
    if isinstance(args, dict):
        missing = [p.name for p in params if p.name not in args]
        if missing:
            raise LaunchError(f"no argument for {', '.join(missing)}")
        args = [args[p.name] for p in params]
    args = list(args)
    if len(args) != len(params):
        raise LaunchError(f"{fn.name} takes {len(params)} arguments, {len(args)} given")
    dfn = program.decoded(fn.name)
    launch = Launch(program, dfn, grid, block, int(shared_bytes), max_steps, schedule)
    launch.strict_steps = bool(strict_steps)
    _check_size(launch, args, coverage, reads is not False)

    mem = Memory()
    if races:
        from ptxopt.interp.races import RaceTracker

        mem.race = RaceTracker()
    global_vars = []
    for v in program.statics.values():
        if v.space in ("global", "const"):
            r = Region(v.name, v.space, v.address, v.size, readonly=v.space == "const")
            if isinstance(v.init, Exception):
                raise v.init
            if v.init:
                r.write_bytes(v.init)
            mem.add(r)
            if v.space == "global":
                global_vars.append(r)
    mem._next_global = max(mem._next_global, program.global_end)

    total = max((p.offset + p.size for p in params), default=0)
    block_bytes = bytearray(total)
    buffers: list = []
    regions: dict[int, tuple[Region, int]] = {}  # argument -> (its region, its address)
    for i, (p, a) in enumerate(zip(params, args)):
        if isinstance(a, Placed):
            lead = int(a.offset)
            arr = np.ascontiguousarray(a.array)
            if not 0 <= lead < 256:
                raise LaunchError(f"{p.name}: placement offset {lead} (0 to 255)")
            r = mem.alloc_global(p.name, lead + arr.nbytes, fill=make_fill(seed, f"lead/{p.name}"))
            if arr.nbytes:
                r.data[:, lead: lead + arr.nbytes] = arr.view(np.uint8).ravel()
            regions[i] = (r, r.base + lead)
            raw = (r.base + lead).to_bytes(8, "little")[: p.size]
            buffers.append((r, arr, lead))
        elif isinstance(a, np.ndarray):
            a = np.ascontiguousarray(a)
            r = mem.alloc_global(p.name, a.nbytes)
            r.write_bytes(a.view(np.uint8).ravel() if a.nbytes else b"")
            regions[i] = (r, r.base)
            raw = r.base.to_bytes(8, "little")[: p.size]
            buffers.append((r, a, 0))
        elif isinstance(a, Alias):
            raw = b""  # resolved below: the buffer it points into may come later
            buffers.append(None)
        else:
            if a is None:
                raw = bytes(p.size)
            else:
                raw = encode_scalar(a, p.dtype, p.size)
            buffers.append(None)
        block_bytes[p.offset: p.offset + len(raw)] = raw
    for p, a in zip(params, args):
        if isinstance(a, Alias):
            r, ptr = regions.get(a.of, (None, 0))
            if r is None or not r.base <= ptr + a.offset <= r.end:
                raise LaunchError(f"{p.name}: alias of argument {a.of}, which is not a buffer of at least "
                                  f"{a.offset} bytes")
            raw = (ptr + int(a.offset)).to_bytes(8, "little")[: p.size]
            block_bytes[p.offset: p.offset + len(raw)] = raw
    if total:
        pr = Region(f"{fn.name} parameters", "param", WINDOW["param"], total, readonly=True)
        pr.write_bytes(bytes(block_bytes))
        mem.add(pr)

    gx, gy, gz = grid
    if coverage:
        for b in buffers:
            if b is not None:
                b[0].written = np.zeros(b[0].data.shape[1], dtype=bool)
        for r in global_vars:
            r.written = np.zeros(r.data.shape[1], dtype=bool)
        mem.stored_threads = np.zeros(gx * gy * gz * threads, dtype=bool)
        launch.branches = {}
    if coverage or executed:
        launch.executed = {}
    if shared_reads:
        mem.shared_reads = SharedReads()
    if reads is not False:
        mem.read_tags = reads if isinstance(reads, dict) else None
        mem.masked = {}
        for b in buffers:
            if b is not None:
                b[0].read = np.zeros(b[0].data.shape[1], dtype=np.uint32)
    n = 0
    # NaN/overflow warnings are expected (kernels compute with them) and slow
    with np.errstate(all="ignore"):
        try:
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        _run_cta(launch, mem, (x, y, z), seed, n)
                        n += 1
        except InterpError as e:
            e.steps = launch.steps_before  # what ran before the failure (a check's step budget charges it)
            raise

    out = []
    for b in buffers:
        if b is None:
            out.append(None)
            continue
        r, a, lead = b
        raw = r.read_bytes()[lead: lead + a.nbytes]
        arr = np.frombuffer(raw, dtype=a.dtype).reshape(a.shape).copy() if a.nbytes else a.copy()
        out.append(arr)
    names = [p.name for p in params]
    gvars = {r.name: np.frombuffer(r.read_bytes(), dtype=np.uint8).copy() for r in global_vars}
    cov = None
    if coverage:
        written = {}
        for p, b in zip(params, buffers):
            if b is not None:
                r, a, lead = b
                written[p.name] = r.written[lead: lead + a.nbytes].copy()
        for r in global_vars:
            written[r.name] = r.written[: r.size].copy()
        cond = sum(1 for d in program._decoded.values() for st in d.code
                   if st.kind == BRANCH and st.guard is not None)
        cov = {"written": written, "stored_threads": mem.stored_threads.copy(),
               "branches": dict(launch.branches), "conditional_branches": cond,
               "executed": launch.executed}
    elif executed:
        cov = {"executed": launch.executed}
    footprint = None
    if reads is not False:
        footprint = {p.name: b[0].read[b[2]: b[2] + b[1].nbytes].copy() for p, b in zip(params, buffers)
                     if b is not None}
        mem.nc_unrecorded += sum(int((b[0].read[: b[2]] & NC_READ).any()) for b in buffers if b is not None)
    return LaunchResult(out, names, launch.steps_before, launch.thread_steps, time.perf_counter() - t0, n,
                        dict(zip(names, out)), gvars, cov,
                        (mem.race.count, list(mem.race.reports)) if mem.race is not None else None, footprint,
                        mem.nc_unrecorded, dict(mem.masked) if mem.masked is not None else None,
                        mem.shared_reads.ctas if mem.shared_reads is not None else None)


def _check_size(launch: Launch, args, coverage: bool, reads: bool) -> None:
    """Refuse a launch over the hardware's or the memory budget's limits before
    allocating anything (:mod:`ptxopt.interp.limits`)."""
    program, dfn = launch.program, launch.dfn
    limits.check_shared(launch.total_shared)
    local = sum(size for _, space, size, _ in dfn.frame_vars if space == "local")
    limits.check_local(local, dfn.name)
    buffers = 0
    for a in args:
        if isinstance(a, Placed):
            buffers += int(a.offset) + np.asarray(a.array).nbytes
        elif isinstance(a, np.ndarray):
            buffers += a.nbytes
    statics = sum(v.size for v in program.statics.values() if v.space in ("global", "const"))
    block_threads = launch.block[0] * launch.block[1] * launch.block[2]
    grid_threads = block_threads * launch.grid[0] * launch.grid[1] * launch.grid[2]
    per_thread = sum(np.dtype(dt).itemsize for dt in dfn.slot_dtypes) + sum(size for _, _, size, _ in dfn.frame_vars)
    need = limits.launch_bytes(buffers=buffers, statics=statics, grid_threads=grid_threads,
                               block_threads=block_threads, shared=launch.total_shared, per_thread=per_thread,
                               coverage=coverage, reads=reads)
    g, b = launch.grid, launch.block
    limits.require(need, f"a launch of grid ({g[0]},{g[1]},{g[2]}) x block ({b[0]},{b[1]},{b[2]}) "
                         f"with {buffers:,} bytes of buffers")


def _run_cta(launch: Launch, mem: Memory, ctaid, seed: int, linear: int) -> None:
    program = launch.program
    fill = make_fill(seed, f"cta{linear}")
    shared = []
    for v in program.statics.values():
        if v.space == "shared":
            shared.append(Region(v.name, "shared", v.address, v.size, fill=fill))
    if program.dynamic_shared_names or launch.shared_bytes:
        shared.append(Region(DYNAMIC_SHARED, "shared", program.dynamic_shared_base,
                             launch.shared_bytes, fill=fill))
    for r in shared:
        mem.add(r)
    cta = CTA(launch, ctaid, mem, shared, fill)
    if launch.thread_order is not None and linear in launch.serial_ctas:
        cta.thread_rank = launch.thread_order
    mem.thread_base = linear * cta.T
    if mem.shared_reads is not None:
        mem.shared_reads.start(ctaid, cta.T)
    try:
        run_entry(cta, launch.dfn)
        if mem.shared_reads is not None:
            mem.shared_reads.finish()
    except InterpError:
        raise
    finally:
        launch.steps_before += cta.steps
        launch.thread_steps += cta.thread_steps
        for r in shared:
            mem.remove(r)
