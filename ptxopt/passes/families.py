"""Conflict families: which passes may share a pipeline.

A pass names its family in its class (:attr:`ptxopt.passes.base.Pass.family`).
At most one pass of each exclusive family is active in a pipeline (two cache
hints, two register budgets or two schedules contradict each other); the
vectorize family is not exclusive (``vec_ld`` and ``vec_st`` compose). Beyond
families, a pass declares the kinds it excludes in its own class
(:attr:`ptxopt.passes.base.Pass.conflicts`): ``vec_ld`` declares that it and
``split_ld`` undo each other. The unroll family holds every pass that
restructures a loop (``unroll``, ``loop_version``, ``swp_ld``): a pipeline's
loop proof covers one loop rewrite. A pipeline that breaks a rule is refused
with a message naming both passes and the family.

A family is a name (reports, ``ptxopt passes`` and the observation's family
slots print it); :func:`family` declares one and whether it is exclusive, so a
pass in a new family declares it in its own module
(``family("strength-reduction", exclusive=True)``). A name never declared
is not exclusive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxopt.passes.base import Pass


#: every declared family -> is it exclusive?
_EXCLUSIVE: dict[str, bool] = {}


def family(name: str, *, exclusive: bool) -> str:
    """Declare family ``name`` (at most one of its passes per pipeline when
    ``exclusive``) and return the name, for the passes' ``family``."""
    if _EXCLUSIVE.setdefault(name, exclusive) != exclusive:
        raise ValueError(f"family {name!r} is declared both exclusive and not")
    return name


VECTORIZE = family("vectorize", exclusive=False)
LOAD_CACHE = family("load-cache-hint", exclusive=True)
STORE_CACHE = family("store-cache-hint", exclusive=True)
REGISTER_BUDGET = family("register-budget", exclusive=True)
REORDER = family("reorder", exclusive=True)
PREFETCH = family("prefetch", exclusive=True)
READ_ONLY_PATH = family("read-only-path", exclusive=True)
UNROLL = family("unroll", exclusive=True)

#: ptxopt's own families of which a pipeline holds at most one pass.
EXCLUSIVE_FAMILIES = frozenset(f for f, exclusive in _EXCLUSIVE.items() if exclusive)


def is_exclusive(name: str) -> bool:
    """Does a pipeline hold at most one pass of family ``name``?"""
    return _EXCLUSIVE.get(name, False)


def conflict(a: "Pass", b: "Pass") -> str | None:
    """Why passes ``a`` and ``b`` cannot share a pipeline, or None (named as
    reports name them: ``maxnreg_32``, ``maxnreg{n=96}``)."""
    if a.family == b.family and is_exclusive(a.family):
        return f"'{a.name}' and '{b.name}' are both in the {a.family} family (at most one per pipeline)"
    why = a.conflicts.get(b.kind) or b.conflicts.get(a.kind)
    if why:
        return f"'{a.name}' conflicts with '{b.name}': {why}"
    return None
