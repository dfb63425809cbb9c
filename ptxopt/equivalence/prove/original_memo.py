"""The original's side of a proof, executed once per module digest.

A search proves every candidate of a kernel against the same original, and
:func:`~ptxopt.equivalence.prove.match.prove_function` would otherwise execute
the original symbolically again for each (its CFG, liveness and every block
run), about half of each proof.  Here the original's side is remembered:
its :class:`~ptxopt.equivalence.prove.match._Side` (CFG, liveness,
alignment facts), the value graph it was executed into, the alias oracle,
its block runs, filled in block by block as proofs reach them, and the
outcome of running its whole paths (:mod:`.loop_paths`: the paths, or why
they cannot be run within the budgets), which is all the original's and the
dearest part of a path proof: a kernel whose loop forks past the path
budget gave up only after about 3 s of execution, once per candidate.

Why this is the same proof: the value graph is hash-consed, so a node's
meaning is its structure, whatever else the graph holds; the candidate
executed into a graph that already holds other candidates' nodes gets the
same node for the same expression and a different node for a different one.
A block run depends only on the block's instructions, the graph's
constructors and the alias oracle, and the oracle is part of the key; the
original's paths run first in a path proof, on a fresh step budget, so
they too depend on nothing the candidate brings.

Key: sha256 of the original module's printed text (the printer is lossless:
equal text, equal module), the function, the alias facts of the pair
(``.noalias`` parameters present in both, the symbols that may overlap in
either) and ``assume_align`` (the side caches alignment facts under it).
An entry in use by one thread is not shared with another (that proof runs
unmemoised); a graph that has grown past :data:`MAX_NODES` is dropped.
"""

from __future__ import annotations

import hashlib
import threading

from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot

#: Originals remembered (one search works on one kernel at a time).
MAX_ENTRIES = 8
#: An entry whose value graph holds more nodes than this is not kept (memory).
MAX_NODES = 2_000_000


class Original:
    """One original function's side, its graph and oracle, and its block runs."""

    __slots__ = ("graph", "oracle", "side", "runs", "lock", "executions", "paths")

    def __init__(self, graph, oracle, side) -> None:
        self.graph, self.oracle, self.side = graph, oracle, side
        self.runs: dict = {}
        self.lock = threading.Lock()
        self.executions = 0  # block runs actually executed (tests count them)
        #: :func:`ptxopt.equivalence.prove.loop_paths.prove_paths`'s record of the original's paths
        #: (:class:`~ptxopt.equivalence.prove.loop_paths.OriginalPaths`), None until a path proof needs them
        self.paths = None

    def run(self, block):
        r = self.runs.get(block.index)
        if r is None:
            r = self.runs[block.index] = self.side.exe.run(block.index, block.instructions)
            self.executions += 1
        return r


#: the active evaluation session's originals (:mod:`ptxopt.support.session_state`), each under its own lock
_ENTRIES = Slot("equivalence.prove.original_memo", lambda: BoundedMemo(lambda: MAX_ENTRIES, lock=threading.Lock()))


def key(fo, mo, noalias: frozenset, overlap: frozenset, assume_align: int) -> tuple:
    from ptxopt.ptx.emit import emit

    text = hashlib.sha256(emit(mo).encode()).hexdigest()
    return text, fo.name, tuple(sorted(noalias)), tuple(sorted(overlap)), assume_align


def acquire(k: tuple, make) -> tuple[Original, bool]:
    """The entry for ``k`` (``make()`` builds it when absent), locked for this
    proof, and whether it is memoised; release with :func:`release`. When the
    entry is in use elsewhere a private one is built and not remembered."""
    memo = _ENTRIES.get()
    with memo.lock:
        entry = memo.lookup(k)
        if entry is not None:
            if entry.lock.acquire(blocking=False):
                return entry, True
            return make(), False
        entry = make()
        entry.lock.acquire()
        memo.remember(k, entry)
        return entry, True


def release(k: tuple, entry: Original, memoised: bool) -> None:
    if not memoised:
        return
    if len(entry.graph) > MAX_NODES:
        memo = _ENTRIES.get()
        with memo.lock:
            if memo.get(k) is entry:
                del memo[k]
    entry.lock.release()


def clear() -> None:
    """Forget every original the active session remembers."""
    memo = _ENTRIES.get()
    with memo.lock:
        memo.clear()


__all__ = ["Original", "key", "acquire", "release", "clear", "MAX_ENTRIES"]
