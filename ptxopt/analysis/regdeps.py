"""Register dependencies of a straight-line block, one instruction at a time.

The one walk behind both dependency structures of a block, the full DAG
(:mod:`ptxopt.analysis.dag`) and the linear-size :class:`~ptxopt.analysis.depgraph.DepGraph`
the schedulers use; they must order registers identically, so they share it.

A use depends (raw) on every definition of the register that may reach it:
the last unguarded one and any guarded ones after it (a guarded write may
not happen). A definition depends (war) on the uses since the previous
definition and (waw) on the previous definition; older uses are ordered
before it through that waw chain. Maps of last definition and uses since
keep this linear in the block size.
"""

from __future__ import annotations

from typing import Sequence

#: edge kinds as :meth:`RegisterWalk.step` reports them (their index in
#: :data:`ptxopt.analysis.dag.KIND_PRIORITY`)
RAW, WAW, WAR = 0, 1, 2


class RegisterWalk:
    __slots__ = ("reach", "last_def", "uses_since")

    def __init__(self) -> None:
        self.reach: dict[str, list[int]] = {}  # definitions that may reach here
        self.last_def: dict[str, int] = {}
        self.uses_since: dict[str, list[int]] = {}  # uses since the last definition (absent: none)

    def step(self, i: int, defs: Sequence[str], uses: Sequence[str], guarded: bool) -> list[tuple[int, int, str]]:
        """Instruction ``i`` (after every earlier one): ``(earlier, kind, register)``
        for each register dependency, raw ones first, then per definition its
        war and waw ones (the order the DAG records them in)."""
        reach, last_def, uses_since = self.reach, self.last_def, self.uses_since
        out: list[tuple[int, int, str]] = []
        for r in uses:
            for d in reach.get(r, ()):
                out.append((d, RAW, r))
            lst = uses_since.get(r)
            if lst is None:
                uses_since[r] = [i]
            else:
                lst.append(i)
        for r in defs:
            for u in uses_since.pop(r, ()):  # none since this definition
                if u != i:
                    out.append((u, WAR, r))
            d = last_def.get(r)
            if d is not None:
                out.append((d, WAW, r))
            last_def[r] = i
            if guarded:
                reach.setdefault(r, []).append(i)
            else:
                reach[r] = [i]
        return out

    def step_nodes(self, i: int, defs: Sequence[str], uses: Sequence[str], guarded: bool, out: list[int]) -> None:
        """:meth:`step` appending only the earlier instructions to ``out``, in
        the same order of first occurrence (the DepGraph needs no edge kinds,
        and a tuple per edge is an allocation per edge), less the waw edge
        of a register the instruction also reads: the raw edge on it names
        the same definition earlier (an accumulating ``fma`` then has no
        duplicate to remove). It updates the state exactly as :meth:`step`
        does; ``tests/analysis/test_regdeps.py`` checks the two agree on the corpus."""
        reach, last_def, uses_since = self.reach, self.last_def, self.uses_since
        for r in uses:
            d = reach.get(r)
            if d is not None:
                out.extend(d)
            lst = uses_since.get(r)
            if lst is None:
                uses_since[r] = [i]
            else:
                lst.append(i)
        for r in defs:
            lst = uses_since.pop(r, None)  # none since this definition
            if lst:
                for u in lst:
                    if u != i:
                        out.append(u)
            d = last_def.get(r)
            if d is not None and r not in uses:  # else its raw edge came first (d ends reach[r])
                out.append(d)
            last_def[r] = i
            if guarded:
                reach.setdefault(r, []).append(i)
            else:
                reach[r] = [i]


__all__ = ["RegisterWalk", "RAW", "WAW", "WAR"]
