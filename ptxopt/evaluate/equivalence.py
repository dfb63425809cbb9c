"""Equivalence checks that remember the original kernel's outputs.

A search evaluates many candidates of one kernel; :func:`ptxopt.verify.verify`
would interpret the *original* again for every one of them, which is half of
the interpreter's work.  :func:`verify_with_reference` does exactly what
``verify`` does -- the same trials (``TRIAL_PLAN``: input flavours x thread
schedules), the same seeds, arguments and uninitialised-memory fill, the same
bit-for-bit comparison (:func:`ptxopt.verify.compare_buffers`) and the same
:class:`~ptxopt.verify.VerifyResult` -- but keeps the original's final
buffers per (original, entry, launch, seed, trial) in a per-process LRU, so
each is computed once.  ``tests/test_evaluate.py`` checks that both agree on
equal, mismatching and faulting candidates.

An original that cannot be interpreted raises its :class:`InterpError` (as
``verify`` does), and that failure is remembered too.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ptxopt.interp import InterpError, run_kernel
from ptxopt.interp.workload import make_args
from ptxopt.verify import DEFAULT_SEEDS, TRIAL_PLAN, VerifyResult, _args_for_geometry, compare_buffers

_REFERENCE: OrderedDict = OrderedDict()
REFERENCE_SIZE = 128  # (kernel, trial) entries kept per process


def clear() -> None:
    _REFERENCE.clear()


def _remember(key, value) -> None:
    _REFERENCE[key] = value
    while len(_REFERENCE) > REFERENCE_SIZE:
        _REFERENCE.popitem(last=False)


def verify_with_reference(original, transformed, entry: str, reference_key: str, *, trials: int, spec=None,
                          geometry=None, seeds=DEFAULT_SEEDS, max_steps: int | None = None) -> VerifyResult:
    """:func:`ptxopt.verify.verify` for interpreter :class:`~ptxopt.interp.Program` s,
    with the original's runs memoised under ``reference_key`` (which must
    identify the original module and the launch)."""
    if spec is not None:
        grid, block, shared = spec.launch.grid, spec.launch.block, spec.launch.shared_bytes
    else:
        grid, block, shared = geometry.grid, geometry.block, geometry.shared_bytes
    kw = {} if max_steps is None else {"max_steps": max_steps}
    seeds = tuple(int(s) for s in seeds)
    result = VerifyResult(entry, "equal", 0, seeds=seeds, grid=tuple(grid), block=tuple(block), shared_bytes=shared)
    for seed in seeds:
        for t in range(trials):
            flavour, schedule = TRIAL_PLAN[t % len(TRIAL_PLAN)]
            run_seed = seed * 1000 + t
            if spec is not None:
                args = make_args(spec, run_seed, flavour)
                names = [p.arg for p in spec.params]
            else:
                args = _args_for_geometry(original, entry, geometry, run_seed, flavour)
                names = [p.name for p in original.kernel_params(entry)]
            key = (reference_key, seed, t, flavour, schedule)
            ref = _REFERENCE.get(key)
            if ref is None:
                copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                try:
                    ro = run_kernel(original, entry, grid, block, copy, shared, seed=run_seed, schedule=schedule,
                                    **kw)
                    ref = (ro.buffers, ro.steps)
                except InterpError as e:
                    ref = type(e)(f"original kernel: {e}")
                _remember(key, ref)
            else:
                _REFERENCE.move_to_end(key)
            if isinstance(ref, InterpError):
                raise ref
            buffers, steps = ref
            try:
                rt = run_kernel(transformed, entry, grid, block, args, shared, seed=run_seed, schedule=schedule, **kw)
            except InterpError as e:
                result.status = "error"
                result.error = f"transformed kernel (seed {seed}, {flavour} inputs, {schedule} schedule): {e}"
                result.error_kind = e.kind
                result.trials += 1
                return result
            result.trials += 1
            result.steps = (steps, rt.steps)
            mm = compare_buffers(names, buffers, rt.buffers, seed, flavour, schedule)
            if mm is not None:
                result.status = "mismatch"
                result.mismatch = mm
                return result
    return result


__all__ = ["verify_with_reference", "clear", "REFERENCE_SIZE"]
