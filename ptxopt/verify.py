"""Functional equivalence: run an original and a transformed kernel on the
same inputs and compare every buffer bit for bit.

A transformation must not change what a kernel computes, on any input. The
check runs both kernels through the interpreter (:mod:`ptxopt.interp`) on
identical arguments for several seeds and input *flavours* (ordinary random
values; edge values: signed zeros, subnormals, NaN, infinities, extremes;
values of wildly different magnitudes), and compares *every* buffer after
the launch -- outputs, in/out buffers, and inputs too (a transformation that
scribbles on an input is wrong). Uninitialised memory (outputs, shared,
local) holds the same seeded garbage in both runs, so an element written by
one kernel and not the other differs.

Trial ``t`` of each seed uses the input flavour and thread schedule of
``TRIAL_PLAN[t % 9]`` (every flavour with every schedule: lockstep,
warp-serial ascending, descending). Warp-serial schedules are legal GPU
interleavings under which a transformation that breaks synchronisation (a
load moved above a barrier, a barrier removed) reads data another warp has
not written yet. The plan's first four trials (the default) already cover
every flavour and every schedule, and pair a warp-serial schedule with plain
random inputs (edge inputs full of NaN can hide a race in a reduction: NaN
plus garbage is still NaN).

Outcomes (:class:`VerifyResult`):

* ``equal`` -- every buffer identical in every trial;
* ``mismatch`` -- the first differing buffer element, with both values;
* ``error`` -- the *transformed* kernel failed where the original did not
  (memory fault, divergent barrier, unsupported instruction...): not
  equivalent, and worth a different message than a wrong value.

If the *original* kernel fails, there is nothing to compare against and
:func:`verify` raises the interpreter's error.

Geometry comes from a corpus manifest entry (``spec``, found automatically
when the kernel's name and parameter names match exactly one entry), which
also says which arguments are buffers of what type and which inputs have
ranges, or from a :class:`Geometry` for kernels outside the corpus: every 64-bit
parameter then gets a buffer of ``buffer_bytes`` random float32 values, and
32-bit integer parameters get ``int_scalar`` (default: the number of threads
in the launch), float ones 1.0, unless ``scalars`` names them.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field

import numpy as np

from ptxopt.interp import InterpError, Program, run_kernel
from ptxopt.interp.errors import LaunchError
from ptxopt.interp.workload import input_values, make_args, np_dtype
from ptxopt.ir import Module

DEFAULT_SEEDS = (0,)
DEFAULT_TRIALS = 4

TRIAL_PLAN = (
    ("random", "lockstep"), ("random", "warps"), ("edge", "lockstep"), ("scales", "warps-reversed"),
    ("edge", "warps"), ("scales", "lockstep"), ("random", "warps-reversed"), ("edge", "warps-reversed"),
    ("scales", "warps"),
)


@dataclass
class Geometry:
    """Launch geometry and argument defaults for a kernel outside the corpus."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_bytes: int = 0
    buffer_bytes: int = 65536
    scalars: dict = field(default_factory=dict)
    int_scalar: int | None = None


@dataclass
class Mismatch:
    buffer: str
    index: int
    original: str
    transformed: str
    differing: int  # elements of this buffer that differ
    size: int
    seed: int
    flavour: str
    schedule: str = "lockstep"


@dataclass
class VerifyResult:
    kernel: str
    status: str  # "equal", "mismatch" or "error"
    trials: int  # launches compared
    mismatch: Mismatch | None = None
    error: str | None = None
    error_kind: str | None = None
    seeds: tuple = ()
    grid: tuple = ()
    block: tuple = ()
    shared_bytes: int = 0
    steps: tuple[int, int] = (0, 0)  # instructions issued, original / transformed (last trial)

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def to_json(self) -> dict:
        d = asdict(self)
        d["equal"] = self.equal
        return d


def format_value(arr: np.ndarray, i: int) -> str:
    """``1.5 (0x3fc00000)`` for floats, the integer for integers."""
    v = arr[i]
    if arr.dtype.kind == "f":
        b = arr.view(np.dtype(f"u{arr.dtype.itemsize}"))[i]
        return f"{float(v)!r} (0x{int(b):0{arr.dtype.itemsize * 2}x})"
    return str(int(v))


def compare_buffers(names, a_bufs, b_bufs, seed, flavour, schedule="lockstep") -> Mismatch | None:
    for name, a, b in zip(names, a_bufs, b_bufs):
        if a is None or b is None or a.nbytes == 0:
            continue
        ua = a.reshape(-1).view(np.dtype(f"u{a.dtype.itemsize}"))
        ub = b.reshape(-1).view(np.dtype(f"u{b.dtype.itemsize}"))
        diff = np.flatnonzero(ua != ub)
        if len(diff):
            i = int(diff[0])
            return Mismatch(name, i, format_value(a.reshape(-1), i), format_value(b.reshape(-1), i),
                            len(diff), a.size, seed, flavour, schedule)
    return None


def _args_for_geometry(program: Program, entry: str, geo: Geometry, seed: int, flavour: str):
    params = program.kernel_params(entry)
    threads = int(np.prod(geo.grid) * np.prod(geo.block))
    out = []
    for p in params:
        if p.name in geo.scalars:
            out.append(geo.scalars[p.name])
        elif p.size == 8 and p.dtype in ("u64", "b64", "s64"):
            rng = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(p.name.encode())])
            out.append(input_values("f32", geo.buffer_bytes // 4, rng, flavour))
        elif p.dtype in ("f32", "f64"):
            out.append(1.0)
        elif p.dtype in ("u32", "s32", "b32", "u16", "s16", "b16"):
            out.append(geo.int_scalar if geo.int_scalar is not None else threads)
        else:
            raise LaunchError(f"no default for parameter {p.name} (.{p.dtype}); give it with "
                              "--scalar NAME=VALUE or use a manifest entry")
    return out


def spec_for(program: Program, kernel: str):
    """The corpus manifest entry this kernel is a copy of, if exactly one
    entry has its name and parameter names; else None."""
    from ptxopt.corpus import CorpusError, load_manifest

    try:
        kernels = load_manifest()
    except CorpusError:
        return None
    names = [p.name for p in program.kernel_params(kernel)]
    hits = [k for k in kernels if k.entry == kernel and [p.name for p in k.params] == names]
    return hits[0] if len(hits) == 1 else None


def _as_program(m) -> Program:
    if isinstance(m, Program):
        return m
    if isinstance(m, Module):
        return Program(m)
    if isinstance(m, str):
        from ptxopt.parser import parse

        return Program(parse(m))
    raise TypeError(f"expected a Module, Program or PTX text, got {type(m).__name__}")


def verify(original, transformed, kernel: str | None = None, seeds=DEFAULT_SEEDS,
           trials: int = DEFAULT_TRIALS, *, spec=None, geometry: Geometry | None = None,
           max_steps: int | None = None, reference=None, reference_key=None) -> VerifyResult:
    """Compare ``transformed`` against ``original`` (modules, programs or PTX
    text) on ``len(seeds) * trials`` launches. ``spec`` (a corpus
    :class:`~ptxopt.corpus.KernelSpec`) or ``geometry`` says how to launch.

    ``reference`` (any mapping with ``get`` and item assignment) memoises the
    original's runs under ``(reference_key, seed, trial, flavour, schedule)``,
    for callers that check many candidates of one original (the evaluator):
    ``reference_key`` must identify the original module and the launch. A
    failure of the original is memoised too, and raised again on reuse."""
    po, pt = _as_program(original), _as_program(transformed)
    if kernel is None:
        kernel = spec.entry if spec is not None else po.entry().name
    po.entry(kernel)
    pt.entry(kernel)
    if spec is None and geometry is None:
        spec = spec_for(po, kernel)
        if spec is None:
            raise LaunchError(f"no launch geometry for {kernel}: it matches no corpus kernel; give a "
                              "manifest entry or grid/block")
    if spec is not None:
        grid, block, shared = spec.launch.grid, spec.launch.block, spec.launch.shared_bytes
    else:
        grid, block, shared = geometry.grid, geometry.block, geometry.shared_bytes
    kw = {} if max_steps is None else {"max_steps": max_steps}
    seeds = tuple(int(s) for s in seeds)
    result = VerifyResult(kernel, "equal", 0, seeds=seeds, grid=tuple(grid), block=tuple(block),
                          shared_bytes=shared)
    for seed in seeds:
        for t in range(trials):
            flavour, schedule = TRIAL_PLAN[t % len(TRIAL_PLAN)]
            run_seed = seed * 1000 + t
            if spec is not None:
                args = make_args(spec, run_seed, flavour)
                names = [p.arg for p in spec.params]
            else:
                args = _args_for_geometry(po, kernel, geometry, run_seed, flavour)
                names = [p.name for p in po.kernel_params(kernel)]
            key = (reference_key, seed, t, flavour, schedule)
            ref = reference.get(key) if reference is not None else None
            if ref is None:
                copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                try:
                    ro = run_kernel(po, kernel, grid, block, copy, shared, seed=run_seed, schedule=schedule, **kw)
                    ref = (ro.buffers, ro.steps)
                except InterpError as e:
                    ref = type(e)(f"original kernel: {e}")
                if reference is not None:
                    reference[key] = ref
            if isinstance(ref, InterpError):
                raise ref
            ref_buffers, ref_steps = ref
            try:
                rt = run_kernel(pt, kernel, grid, block, args, shared, seed=run_seed, schedule=schedule, **kw)
            except InterpError as e:
                result.status = "error"
                result.error = f"transformed kernel (seed {seed}, {flavour} inputs, {schedule} schedule): {e}"
                result.error_kind = e.kind
                result.trials += 1
                return result
            result.trials += 1
            result.steps = (ref_steps, rt.steps)
            mm = compare_buffers(names, ref_buffers, rt.buffers, seed, flavour, schedule)
            if mm is not None:
                result.status = "mismatch"
                result.mismatch = mm
                return result
    return result


__all__ = ["verify", "VerifyResult", "Mismatch", "Geometry", "compare_buffers", "np_dtype"]
