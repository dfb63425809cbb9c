"""A rewrite's DRAM floor, carried from the kernel it was rewritten from.

Why: a candidate is only kept when it is checked equivalent to its original, and no pass changes
which global addresses are accessed, so the candidate needs the same DRAM bytes as the original at
the same launch.  The footprint analysis (:mod:`ptxopt.analysis.global_footprint`) can still know
less about the rewrite than about the original -- an unrolled loop whose copies share one exit
predicate is refused by the loop analysis -- and a candidate whose footprint fell from ``exact`` to
``extrapolated``/``unknown`` would lose its DRAM floor: the estimate would show a gain DRAM does not
allow.  :func:`carried` keeps the original's exact floor for the candidate (source ``carried``); it
never carries a floor that was not exact (``counts`` already apply to both; an ``extrapolated``
footprint is an upper bound, no floor).

Every path that estimates a candidate against its original under one launch (the sim backend's
jobs, ``explain -p``, the floors property test) calls :func:`candidate_footprint`.
"""

from __future__ import annotations

from dataclasses import replace

from .global_footprint import LaunchFootprint, footprint_for_launch

#: what a carried floor says (in the footprint's notes, the estimate's notes and the JSON)
CARRIED_NOTE = ("DRAM floor carried from the original (a rewrite is kept only when checked equivalent to "
                "it: it needs the same bytes); the rewrite's own footprint: {source}")

_MEMO: dict = {}  # (id of the original, entry, launch) -> (the original, its LaunchFootprint)
_MEMO_SIZE = 64


def carried(original: LaunchFootprint, candidate: LaunchFootprint) -> LaunchFootprint:
    """``candidate`` with a DRAM floor at least ``original``'s when the original's is ``exact``
    (source ``carried``); ``candidate`` unchanged otherwise, or when its own floor is as high."""
    if original.source != "exact" or original.floor_bytes is None:
        return candidate
    if candidate.floor_bytes is not None and candidate.floor_bytes >= original.floor_bytes:
        return candidate
    return replace(candidate, source="carried", floor_bytes=original.floor_bytes,
                   notes=tuple(candidate.notes) + (CARRIED_NOTE.format(source=candidate.source),))


def candidate_footprint(original, candidate, entry: str | None, launch,
                        counts_bytes: int | None = None) -> LaunchFootprint:
    """The DRAM floor's input for ``candidate`` (parsed module or PTX text), a rewrite of
    ``original`` (the same; None: not a rewrite), at the performance ``launch``:
    :func:`~ptxopt.analysis.global_footprint.footprint_for_launch` of the candidate, with the
    original's exact floor carried (:func:`carried`).  The original's footprint is remembered."""
    own = footprint_for_launch(candidate, entry, launch, counts_bytes)
    if original is None or original is candidate or counts_bytes is not None:
        return own
    return carried(_original_footprint(original, entry, launch), own)


def _original_footprint(original, entry, launch) -> LaunchFootprint:
    scalars = tuple(sorted((getattr(launch, "scalars", None) or {}).items()))
    key = (original if isinstance(original, str) else id(original), entry,
           getattr(launch, "grid", None), getattr(launch, "block", None), scalars)
    got = _MEMO.get(key)
    if got is not None:
        return got[1]
    fp = footprint_for_launch(original, entry, launch)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO), None), None)  # (another thread may have emptied it)
    _MEMO[key] = (original, fp)  # holding the original keeps its id from being reused
    return fp


__all__ = ["CARRIED_NOTE", "carried", "candidate_footprint"]
