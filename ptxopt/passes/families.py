"""Conflict families: which passes may share a pipeline.

At most one pass of each exclusive family is active in a pipeline (two cache
hints, two register budgets or two schedules contradict each other). Beyond
families, a pass declares the kinds it excludes in its own class
(:attr:`ptxopt.passes.base.Pass.conflicts`): the vectorize family is not
exclusive (``vec_ld`` and ``vec_st`` compose), but ``vec_ld`` declares that it
and ``split_ld`` undo each other. :data:`PAIR_CONFLICTS` is the older place
for such pairs, still honoured. The unroll family holds every pass that
restructures a loop (``unroll``, ``loop_version``, ``swp_ld``): a pipeline's
loop proof covers one loop rewrite. A pipeline that breaks a rule is refused
with a message naming both passes and the family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxopt.passes.base import Pass

VECTORIZE = "vectorize"
LOAD_CACHE = "load-cache-hint"
STORE_CACHE = "store-cache-hint"
REGISTER_BUDGET = "register-budget"
REORDER = "reorder"
PREFETCH = "prefetch"
READ_ONLY_PATH = "read-only-path"
UNROLL = "unroll"

#: Families of which a pipeline holds at most one pass.
EXCLUSIVE_FAMILIES = frozenset({LOAD_CACHE, STORE_CACHE, REGISTER_BUDGET, REORDER, PREFETCH, READ_ONLY_PATH,
                                UNROLL})

#: Pairs of pass kinds that exclude each other across or within non-exclusive families.
PAIR_CONFLICTS: dict[frozenset[str], str] = {
}


def conflict(a: "Pass", b: "Pass") -> str | None:
    """Why passes ``a`` and ``b`` cannot share a pipeline, or None (named as
    reports name them: ``maxnreg_32``, ``maxnreg{n=96}``)."""
    if a.family == b.family and a.family in EXCLUSIVE_FAMILIES:
        return f"'{a.name}' and '{b.name}' are both in the {a.family} family (at most one per pipeline)"
    why = a.conflicts.get(b.kind) or b.conflicts.get(a.kind) or PAIR_CONFLICTS.get(frozenset({a.kind, b.kind}))
    if why:
        return f"'{a.name}' conflicts with '{b.name}': {why}"
    return None
