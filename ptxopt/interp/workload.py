"""Arguments for a corpus kernel, generated from its manifest entry.

Each parameter's role decides what it gets (see ``corpus/README.md``):

* ``input``: values in the parameter's dtype from a seeded generator,
  honouring ``range: [lo, hi)`` (indices, labels, variances);
* ``inout``: like an input, or zeros with ``init: "zero"`` (accumulators);
* ``output``: garbage bytes (seeded), so an element a kernel forgets to
  write differs from one it writes;
* ``scratch``: a null pointer when the manifest allows it, else zeroed bytes;
* ``scalar``: the manifest's value.

*Flavours* choose the input values: ``random`` (uniform in [-4, 4) for
floats, the whole range for integers), ``edge`` (a quarter of the elements
replaced by special values: signed zeros, subnormals, infinities, NaN,
extremes, +-1; integers get 0, +-1 and the type's limits) and ``scales``
(random signs and magnitudes over 2^-40..2^40 plus subnormals, which
exercises rounding). Ranges always win: a ranged input never gets a special
value outside its range.
"""

from __future__ import annotations

import zlib

import numpy as np

from ptxopt.interp import dtypes
from ptxopt.interp.launcher import run_kernel

FLAVOURS = ("random", "edge", "scales")

#: Flavours :func:`make_args` also accepts, for extra verification launches
#: (not part of :data:`FLAVOURS`' sweep): ``descending`` fills each input
#: with strictly decreasing values over its elements (in its range), so the
#: extreme of every row, block or tile is its *first* element: a reduction
#: that skips or shifts one element shows, which random values hide (the
#: maximum of 512 random values is rarely the one skipped).
EXTRA_FLAVOURS = ("descending",)


def np_dtype(t: str) -> np.dtype:
    """numpy dtype for a manifest element type (bf16 travels as uint16 bits)."""
    if t == "bf16":
        return np.dtype(np.uint16)
    if t == "pred":
        return np.dtype(np.uint8)
    return dtypes.value_dtype(t)


def _rng(seed: int, flavour: str, name: str) -> np.random.Generator:
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(f"{flavour}/{name}".encode())])


def _float_specials(dt: np.dtype) -> np.ndarray:
    fi = np.finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(fi.max), -float(fi.max),
            float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal),
            -float(fi.smallest_subnormal), float(fi.tiny) / 3, -float(fi.tiny) / 7, 0.5, 65504.0]
    return np.array(vals, dtype=np.float64).astype(dt)


def _descending(t: str, count: int, rng_range, k: str) -> np.ndarray:
    if k == "f":
        lo, hi = rng_range if rng_range is not None else (-4.0, 4.0)
        v = np.linspace(hi, lo, count + 1)[1:]  # within [lo, hi), decreasing
        return _as_float(v, t)
    if rng_range is not None:
        lo, hi = int(np.ceil(rng_range[0])), int(np.ceil(rng_range[1]))
    else:
        lo, hi = 0, 1 << 10
    span = max(1, hi - lo)
    return ((hi - 1) - np.arange(count) % span).astype(np_dtype(t))


def input_values(t: str, count: int, rng: np.random.Generator, flavour: str, rng_range=None):
    dt = np_dtype(t)
    k = dtypes.kind(t) if t != "bf16" else "f"
    if flavour == "descending":
        return _descending(t, count, rng_range, k)
    if rng_range is not None:
        lo, hi = rng_range
        if k == "f":
            v = rng.uniform(lo, hi, count)
            if flavour == "edge" and count:
                n = max(1, count // 4)
                pos = rng.choice(count, n, replace=False)
                v[pos] = np.where(rng.random(n) < 0.5, lo, np.nextafter(hi, lo))
            return _as_float(v, t)
        lo_i, hi_i = int(np.ceil(lo)), int(np.ceil(hi))
        v = rng.integers(lo_i, hi_i, count)
        if flavour == "edge" and count:
            n = max(1, count // 4)
            pos = rng.choice(count, n, replace=False)
            v[pos] = np.where(rng.random(n) < 0.5, lo_i, hi_i - 1)
        return v.astype(dt)
    if k == "f":
        if flavour == "scales":
            top = 14 if t == "f16" else 40
            v = rng.choice([-1.0, 1.0], count) * np.ldexp(rng.uniform(1, 2, count),
                                                          rng.integers(-top, top + 1, count))
            sub = rng.random(count) < 0.05
            tiny = float(np.finfo(np.float16 if t == "f16" else np.float32).smallest_subnormal)
            v[sub] = rng.integers(1, 1000, int(sub.sum())) * tiny
        else:
            v = rng.uniform(-4, 4, count)
        out = _as_float(v, t)
        if flavour == "edge" and count:
            n = max(1, count // 4)
            pos = rng.choice(count, n, replace=False)
            specials = _float_specials(np.float32 if t == "bf16" else dt)
            pick = specials[rng.integers(0, len(specials), n)]
            out[pos] = _as_float(pick.astype(np.float64), t) if t == "bf16" else pick
        return out
    lo, hi = dtypes.int_range(t)
    if flavour == "scales":
        v = rng.integers(-(1 << 10), 1 << 10, count) if t[0] == "s" else rng.integers(0, 1 << 10, count)
        return v.astype(dt)
    ui = dtypes.UINT[dtypes.bits(t)]
    v = rng.integers(0, np.iinfo(ui).max, count, dtype=ui, endpoint=True).view(dt)
    if flavour == "edge" and count:
        n = max(1, count // 4)
        pos = rng.choice(count, n, replace=False)
        specials = np.array([0, 1, lo, hi, hi - 1] + ([-1] if lo < 0 else []), dtype=np.int64)
        v = v.copy()
        v[pos] = specials[rng.integers(0, len(specials), n)].astype(dt)
    return v


def _as_float(v64: np.ndarray, t: str) -> np.ndarray:
    if t == "bf16":
        f = v64.astype(np.float32)
        return (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return v64.astype(np_dtype(t))


def make_args(spec, seed: int = 0, flavour: str = "random") -> list:
    """Arguments for every parameter of corpus kernel ``spec``, in order."""
    if flavour not in FLAVOURS + EXTRA_FLAVOURS:
        raise ValueError(f"unknown flavour {flavour!r} (choose from {', '.join(FLAVOURS + EXTRA_FLAVOURS)})")
    _check_buffers(spec)
    out = []
    for p in spec.params:
        extra = dict(p.extra)
        rng = _rng(seed, flavour, p.arg)
        if p.role == "scalar":
            out.append(p.value)
        elif p.role == "scratch":
            nbytes = int(extra.get("bytes", p.count or 0))
            out.append(None if (nbytes == 0 and p.nullable) else np.zeros(max(nbytes, 1), np.uint8))
        elif p.role == "output":
            dt = np_dtype(p.dtype)
            raw = rng.integers(0, 256, p.count * dt.itemsize, dtype=np.uint8)
            out.append(raw.view(dt).copy())
        elif p.role == "inout" and extra.get("init") == "zero":
            out.append(np.zeros(p.count, dtype=np_dtype(p.dtype)))
        else:
            out.append(input_values(p.dtype, p.count, rng, flavour, extra.get("range")))
    return out


def _check_buffers(spec) -> None:
    """Refuse buffers over the interpreter's memory budget before allocating them (:mod:`ptxopt.interp.limits`)."""
    from ptxopt.interp.limits import require

    total = 0
    for p in spec.params:
        if p.role == "scalar":
            continue
        if p.role == "scratch":
            total += int(dict(p.extra).get("bytes", p.count or 0))
        else:
            total += int(p.count or 0) * np_dtype(p.dtype).itemsize
    require(total, f"the buffers of {spec.id}")


def launch_from_manifest(spec, seed: int = 0, *, module=None, flavour: str = "random",
                         max_steps: int | None = None):
    """Run corpus kernel ``spec`` on inputs made by :func:`make_args`.

    Returns ``(inputs, outputs)``: dicts keyed by the source argument names;
    ``inputs`` holds what went in (buffers and scalars), ``outputs`` the final
    contents of the ``output`` and ``inout`` buffers. ``module`` overrides the
    kernel's own PTX (a transformed copy, say).
    """
    from ptxopt.ptx.parser import parse

    if module is None:
        module = parse(spec.ptx_text(), f"corpus:{spec.id}")
    args = make_args(spec, seed, flavour)
    inputs = {p.arg: (a.copy() if isinstance(a, np.ndarray) else a) for p, a in zip(spec.params, args)}
    kw = {} if max_steps is None else {"max_steps": max_steps}
    res = run_kernel(module, spec.entry, spec.launch.grid, spec.launch.block, args,
                     spec.launch.shared_bytes, seed=seed, **kw)
    outputs = {p.arg: b for p, b in zip(spec.params, res.buffers)
               if p.role in ("output", "inout") and b is not None}
    return inputs, outputs
