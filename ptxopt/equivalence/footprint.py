"""Read footprints: inputs that make a skipped (or extra) element show.

A loop rewrite that skips one element of a reduction, or reads one more,
changes what the kernel reads. Whether it changes what the kernel *computes*
depends on the value there: a maximum over 419 random values misses the
skipped one only when that one was the largest (a wrong step in an unrolled
max loop skipped element 128 of each row and the interpreter said ``equal``).
Random, edge or descending inputs put the extreme at a random or the first
position, rarely at the one the rewrite lost.

So, for a candidate that changed anything (a loop rewrite, a shifted load),
:func:`interpret.verify <ptxopt.equivalence.interpret.verify>` records the
bytes of each parameter buffer that the original and the candidate load in
a launch (:attr:`ptxopt.interp.LaunchResult.reads`), per loop
(:func:`loop_tags`: a whole-launch footprint hides a max loop that skips an
element the next loop reads). Where they differ
(:func:`footprint_difference`), the same launch runs again with the elements
only the original reads *spiked* (:func:`spiked`): set above every other
value of their buffer, then below; then the same with the elements only the
candidate reads. An extreme the original reads and the candidate skips
(or the reverse) then moves the result of a max/min reduction, and a
difference in the outputs is a counterexample like any other. A footprint
difference alone is not one: a legal rewrite may read less (a load it
proves dead), so it decides nothing by itself.
"""

from __future__ import annotations

import numpy as np

#: the directions :func:`spiked` sets the differing elements in, tried in this order
SPIKES = ("high", "low")
#: loops with a tag bit of their own (bits 0 to 27; :mod:`ptxopt.interp.device_memory` uses the rest)
LOOP_BITS = 28


def loop_tags(program, kernel: str) -> tuple[dict[int, int], dict[str, int]]:
    """``(tags, labels)`` for :func:`ptxopt.interp.run_kernel`'s ``reads``:
    each load inside a loop of ``kernel`` tags the bytes it reads with its
    innermost loop's bit (``tags``: ``id(instruction) -> bit``), ``labels``
    maps each loop's header label to that bit (at most 28 loops: the bits
    above are :data:`~ptxopt.interp.device_memory.COHERENT_READ`, ``STORED``,
    ``NC_READ`` and ``OTHER_READ``; loads elsewhere set ``OTHER_READ``). A whole-launch
    footprint would hide a loop that skips an element another loop reads."""
    from ptxopt.analysis.loops import loops_of

    cfg, info = loops_of(program.entry(kernel))
    tags: dict[int, int] = {}
    labels: dict[str, int] = {}
    for k, lp in enumerate(sorted(info.loops, key=lambda lp: -len(lp.blocks))[:LOOP_BITS]):  # outer first: inner wins
        label = cfg.blocks[lp.header].label or f"block{lp.header}"
        labels[label] = 1 << k
        for i in lp.iids:
            tags[id(cfg.instructions[i])] = 1 << k
    return tags, labels


def footprint_difference(a: dict | None, b: dict | None, names: list[str], labels_a: dict[str, int],
                         labels_b: dict[str, int]) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """``(only_a, only_b)``, each ``{argument index: bool per byte}``: per
    parameter buffer, the bytes that the loads of some loop read in footprint
    ``a`` and not in ``b`` (``only_a``), and the reverse (``only_b``); loops
    matched by header label (:func:`loop_tags`), loads outside every loop
    compared together. ``names``: the kernel's parameter names in argument
    order. Kept apart so a spike lands in one kernel's reads only: the same
    extreme in both would move both results alike."""
    from ptxopt.interp.device_memory import OTHER_READ

    only_a: dict[int, np.ndarray] = {}
    only_b: dict[int, np.ndarray] = {}
    if not a or not b:
        return only_a, only_b
    pairs = [(labels_a[lab], labels_b[lab]) for lab in labels_a if lab in labels_b] + [(OTHER_READ, OTHER_READ)]
    for i, n in enumerate(names):
        x, y = a.get(n), b.get(n)
        if x is None or y is None or x.shape != y.shape:
            continue
        da, db = np.zeros(x.shape, dtype=bool), np.zeros(x.shape, dtype=bool)
        for ba, bb in pairs:
            ra, rb = (x & ba) != 0, (y & bb) != 0
            da |= ra & ~rb
            db |= rb & ~ra
        if da.any():
            only_a[i] = da
        if db.any():
            only_b[i] = db
    return only_a, only_b


def masked_difference(a: dict | None, b: dict | None, labels_a: dict[str, int], labels_b: dict[str, int]
                      ) -> str | None:
    """Where the masked reads of two launches differ (``a``, ``b``:
    :attr:`ptxopt.interp.LaunchResult.masked`, ``{read tag: bytes}``), in
    words, or None: per loop matched by header label (:func:`loop_tags`),
    outside every loop, and in all.

    A masked read (a false guard, a ``cp.async`` zero-fill) reads no element,
    so the footprint cannot show it, and its value is fixed by the program
    (zero, the register's previous value), so no spike can vary it. An
    unrolled loop whose guard was dropped runs extra iterations that see only
    such values (``-inf`` scores, zero-filled ``V``): equal on every input the
    flavours make, it still differs where the fixed value is not neutral (a
    ``-0.0`` accumulator plus ``+0.0`` is ``+0.0``). A correct loop rewrite
    runs the same iterations with the same masks, so the counts agree; where
    they do not, :func:`ptxopt.equivalence.interpret.verify` ends
    ``inconclusive`` rather than ``equal``."""
    from ptxopt.interp.device_memory import OTHER_READ

    if a is None or b is None:
        return None

    def total(m, bit):
        return sum(v for tag, v in m.items() if tag & bit)

    pairs = [(lab, labels_a[lab], labels_b[lab]) for lab in labels_a if lab in labels_b]
    pairs.append(("outside loops", OTHER_READ, OTHER_READ))
    for lab, ba, bb in pairs:
        x, y = total(a, ba), total(b, bb)
        if x != y:
            where = lab if lab == "outside loops" else f"loop {lab}"
            return f"masked global reads differ {where}: {x} bytes in the original, {y} in the transformed"
    x, y = sum(a.values()), sum(b.values())
    if x != y:
        return f"masked global reads differ: {x} bytes in the original, {y} in the transformed"
    return None


def shared_read_difference(a: list | None, b: list | None) -> str | None:
    """Where the shared-memory reads of two launches differ
    (:attr:`ptxopt.interp.LaunchResult.shared_reads`: per CTA, the bytes of
    each shared variable read in each barrier interval), in words: the first
    CTA, interval and variable, and the bytes only one kernel read; or None.

    A shared read shifted onto an element already counted (a reduction
    tree's step reading ``smax[t + 33]``) drops a partial that no input
    buffer holds, so no spike can reach it, and the outputs differ only
    when the extreme sits in the lost subtree. A correct rewrite reads the
    same shared bytes between the same barriers
    (:mod:`ptxopt.interp.shared_reads`), so where they differ
    :func:`ptxopt.equivalence.interpret.verify` ends ``inconclusive``
    rather than ``equal``."""
    if a is None or b is None:
        return None
    for (cta, ra), (_, rb) in zip(a, b):
        if ra == rb:
            continue
        for key in sorted(set(ra) | set(rb)):
            x, y = ra.get(key), rb.get(key)
            if x == y:
                continue
            interval, name = key
            n = max(len(x or b""), len(y or b"")) * 8
            bx = np.unpackbits(np.frombuffer(x, np.uint8), count=n) if x else np.zeros(n, np.uint8)
            by = np.unpackbits(np.frombuffer(y, np.uint8), count=n) if y else np.zeros(n, np.uint8)
            parts = []
            for who, only in (("the original", bx & ~by), ("the transformed", by & ~bx)):
                if only.any():
                    word = "byte" if np.count_nonzero(only) == 1 else "bytes"
                    parts.append(f"{word} {_ranges(np.flatnonzero(only))} read only by {who}")
            return (f"shared-memory reads differ in CTA {cta}, barrier interval {interval}, {name!r}: "
                    + "; ".join(parts))
    if len(a) != len(b):
        return f"shared-memory reads recorded for {len(a)} CTAs in the original, {len(b)} in the transformed"
    return None


def _ranges(pos: np.ndarray, most: int = 4) -> str:
    """``[128, 129, 130, 131, 256]`` -> ``"128-131, 256"`` (the first ``most`` runs)."""
    runs = []
    start = prev = int(pos[0])
    for p in pos[1:]:
        p = int(p)
        if p != prev + 1:
            runs.append((start, prev))
            start = p
        prev = p
    runs.append((start, prev))
    text = ", ".join(f"{s}" if s == e else f"{s}-{e}" for s, e in runs[:most])
    return text + (f" and {len(runs) - most} more runs" if len(runs) > most else "")


def _extreme(arr: np.ndarray, high: bool, rng=None):
    """A value above (``high``) or below every other value of ``arr``, in its
    dtype; with ``rng`` (the input's contract range ``[lo, hi)``) the range's
    highest or lowest value instead: an input outside it is no counterexample."""
    if rng is not None:
        lo, hi = rng
        if arr.dtype.kind == "f":
            return arr.dtype.type(np.nextafter(arr.dtype.type(hi), arr.dtype.type(lo)) if high else lo)
        return arr.dtype.type(int(np.ceil(hi)) - 1 if high else int(np.ceil(lo)))
    if arr.dtype.kind == "f":
        fin = arr[np.isfinite(arr)].astype(np.float64)
        top = float(fin.max()) if high and fin.size else float(fin.min()) if fin.size else 0.0
        v = top + (1.0 if high else -1.0) * max(1.0, abs(top))
        lim = float(np.finfo(arr.dtype).max)
        return arr.dtype.type(min(max(v, -lim), lim))
    info = np.iinfo(arr.dtype)
    if high:
        return arr.dtype.type(min(int(arr.max()) + 1, info.max)) if arr.size else arr.dtype.type(info.max)
    return arr.dtype.type(max(int(arr.min()) - 1, info.min)) if arr.size else arr.dtype.type(info.min)


def spiked(args: list, diff: dict[int, np.ndarray], direction: str, ranges: dict | None = None) -> list | None:
    """A copy of ``args`` whose buffer elements marked in ``diff`` hold a
    value above (``high``) or below (``low``) every other element of their
    buffer (within ``ranges[i]``, the contract's ``[lo, hi)`` of argument
    ``i``, where given); None when no marked argument is a plain array."""
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    changed = False
    for i, byte_mask in diff.items():
        a = out[i] if i < len(out) else None
        if not isinstance(a, np.ndarray) or a.nbytes != byte_mask.size or a.itemsize == 0:
            continue
        flat = a.reshape(-1)
        elems = byte_mask.reshape(-1, a.itemsize).any(axis=1)
        flat[elems] = _extreme(flat, direction == "high", (ranges or {}).get(i))
        changed = True
    return out if changed else None


__all__ = ["SPIKES", "footprint_difference", "loop_tags", "masked_difference", "shared_read_difference", "spiked"]
