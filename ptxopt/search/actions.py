"""The learning layer's actions: one tuple of canonical pipeline strings, then ``stop``.

Everything that depends on the action space derives from :data:`ACTIONS`:
the action count and ``stop``'s index, the search state's mask layout and
move order (:mod:`ptxopt.search.state`), the observation's active-family
slots (:func:`families`), the environment's ``Discrete(n)`` and the
policy's output size (:mod:`rl`), what checkpoints and trajectories record,
and the tests. Adding an action is one line in :data:`PASS_ACTIONS`
(``"maxnreg{n=96}",``), appended at the end. A checkpoint records the action
strings and observation names it was trained with; one trained on an older
list whose actions and observation slots all still exist is widened to this
one (its new actions masked, :mod:`rl.checkpoint`), any other is refused
(retrain after a change).

Each action is written the way it prints (:meth:`ptxopt.passes.pipeline.Pipeline.__str__`),
so an action, a trajectory's ``action`` and a pipeline's items compare as
strings; the strings of the first 20 are the pass names from before passes
took parameters. The passes themselves (names, aliases, families, conflicts)
are declared in their own modules (:mod:`ptxopt.passes.registry`): this list
only says which variants are actions, at which index. This lives under
``ptxopt.search`` because the search strategies need the mask layout, and
``ptxopt`` never imports ``rl``.
"""

from __future__ import annotations

from functools import lru_cache

from ptxopt.passes.base import Pass
from ptxopt.passes.families import is_exclusive

STOP = "stop"

#: The pass actions, in index order: each appends one pass to the pipeline.
PASS_ACTIONS: tuple[str, ...] = (
    "vec_ld", "vec_st", "split_ld",
    "cache_ca", "cache_cg", "cache_cs", "cache_cv",
    "st_cache_wb", "st_cache_wt", "st_cache_cs",
    "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255",
    "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl",
    "prefetch_L1", "prefetch_L2",
    # occupancy, the read-only data path (never ``assume_noalias``: an assumption is not an
    # action), unrolling. Appended, so the first 20 indices keep their meaning: a checkpoint trained on
    # the list before them is widened to this one (:func:`widen_indices`, ``rl.checkpoint``)
    "launch_bounds_2", "launch_bounds{minblocks=4}", "nc_ld", "unroll_2", "unroll_4",
    "unroll{factor=8}",  # appended after the 25 above (the committed policy is widened once more)
    "loop_version_2", "loop_version_4",  # versioned loops with a vectorised fast copy (appended)
    "swp_ld_1", "swp_ld_2",  # software-pipelined loads, appended
)

#: The action space, in index order: the pass actions, then ``stop``.
ACTIONS: tuple[str, ...] = (*PASS_ACTIONS, STOP)
N_ACTIONS = len(ACTIONS)
STOP_INDEX = ACTIONS.index(STOP)
_INDEX = {a: i for i, a in enumerate(ACTIONS)}


def action_index(action: str) -> int:
    """The index of ``action`` (its canonical string); ValueError if it is none."""
    try:
        return _INDEX[action]
    except KeyError:
        raise ValueError(f"{action!r} is not an action (actions: {', '.join(ACTIONS)})") from None


@lru_cache(maxsize=None)
def action_pass(action: str) -> Pass:
    """The pass a pass action appends (parsed once)."""
    from ptxopt.passes.pipeline import Pipeline

    (p,) = Pipeline.parse(action).passes
    return p


@lru_cache(maxsize=1)
def families() -> tuple[str, ...]:
    """The pass families in the order of the observation's "active family"
    slots: those of the pass actions, the composing ones (vectorize) first,
    then the exclusive ones, each group sorted by name. A function, not a
    constant: it imports every pass module, which ``import ptxopt.search``
    should not pay for (about 0.3 s)."""
    fams = {action_pass(a).family for a in PASS_ACTIONS}
    return tuple(sorted(fams, key=lambda f: (is_exclusive(f), f)))
