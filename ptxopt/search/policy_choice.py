"""The pipeline a learned chooser picks for one kernel with nothing measured.

Two kinds, one interface (``key`` for a cache key, ``choose(name, ptx)``):

* :class:`PolicyPipelines` -- a trained checkpoint (``ptxopt train``),
  decoded greedily from the kernel's features (the policy's first choice at
  each step, until it says ``stop`` or six passes); needs the ``rl`` extra;
* :class:`RankerPipelines` -- a learned action ranker
  (:mod:`ptxopt.search.ranker`, torch-free): its top choice at the kernel's
  root, when it predicts a gain.

:func:`policy_chooser` tells them apart by the file (a ranker file, or a
committed ranker's name).  ``ptxopt.optimize(policy=)`` and the Triton hook's
``enable(policy=)`` both take their chooser from here, so a name means the
same thing everywhere; their never-slower checks judge what it picks.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ptxopt.passes.pipeline import Pipeline


class PolicyPipelines:
    MAX_STEPS = 6

    def __init__(self, checkpoint: str | Path):
        from ptxopt import plugins

        if not Path(checkpoint).is_file():  # a committed policy by name, as ``search --policy NAME`` finds it
            from ptxopt.kernels.corpus import committed_policies, committed_policy

            found = committed_policy(str(checkpoint))
            if found is None:  # one line, as search --policy says it
                raise ValueError(f"{str(checkpoint)!r} is neither a file nor a committed policy "
                                 f"({', '.join(committed_policies()) or 'none committed'})")
            checkpoint = found
        load_policy = plugins.obj("load_policy")  # the learning layer's (rl.plugin); ImportError without it
        self.policy, _meta = load_policy(checkpoint)
        self.key = "policy=" + hashlib.sha256(Path(checkpoint).read_bytes()).hexdigest()
        self.path = str(checkpoint)

    def choose(self, name: str, ptx: str) -> tuple[Pipeline | None, str]:
        from ptxopt.evaluate.candidate import Candidate
        from ptxopt.search.state import State
        from ptxopt.search.actions import ACTIONS, STOP

        state = State.root(Candidate(ptx, name=name))
        for _ in range(self.MAX_STEPS):
            a, _lp = self.policy.act(state.observation(), state.action_mask(), greedy=True)
            if ACTIONS[a] == STOP:
                break
            state = state.child(ACTIONS[a])
        if len(state.pipeline) == 0:
            return None, f"{name}: policy {self.path} chose no pass (stop first)"
        return state.pipeline, f"policy {self.path} (greedy-decoded)"


class RankerPipelines:
    """The ranker's first choice at the kernel's root (one pass), when it predicts a gain and its order beat a
    random one on its training folds (``top_k`` > 0: else its first choice is no better than a guess, and
    applying a guess unmeasured is not a choice); measures nothing."""

    def __init__(self, ranker_path: str | Path):
        from ptxopt.search.ranker import load

        self.ranker = load(ranker_path)  # RankerError (a ValueError) says why a file is not one
        self.key = "ranker=" + hashlib.sha256(Path(ranker_path).read_bytes()).hexdigest()
        self.path = str(ranker_path)

    def choose(self, name: str, ptx: str) -> tuple[Pipeline | None, str]:
        from ptxopt.evaluate.candidate import Candidate
        from ptxopt.search.state import State

        state = State.root(Candidate(ptx, name=name))
        moves = state.legal_moves()
        order, gains = self.ranker.predict(state, None, moves)
        if not order:
            return None, f"{name}: ranker {self.path} knows none of the legal passes"
        best = max(order, key=order.get)
        if getattr(self.ranker, "top_k", 1) == 0:
            return None, (f"{name}: ranker {self.path} orders no better than random on its training folds "
                          "(nothing applied)")
        if max(gains.values()) <= self.ranker.threshold:
            return None, f"{name}: ranker {self.path} predicts no gain (nothing measured)"
        return Pipeline.parse(best), f"ranker {self.path} (top choice, not measured)"


def policy_chooser(policy: str | Path):
    """``policy=``'s chooser: a ranker (a ``.ranker`` file or a committed ranker's name), else a checkpoint."""
    from ptxopt.search.ranker import SUFFIX, committed_ranker

    p = Path(policy)
    if p.is_file():
        return RankerPipelines(p) if p.suffix == SUFFIX else PolicyPipelines(p)
    found = committed_ranker(str(policy))
    return RankerPipelines(found) if found is not None else PolicyPipelines(policy)


__all__ = ["PolicyPipelines", "RankerPipelines", "policy_chooser"]
