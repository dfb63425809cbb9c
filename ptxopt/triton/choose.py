"""Which pipeline the Triton hook applies to a kernel.

Three sources, one interface (``key`` for Triton's cache key, ``choose``
per kernel):

* :class:`FixedPipeline` -- one pipeline for every kernel;
* :class:`TunedPipelines` -- a results file of offline tuning
  (:mod:`ptxopt.triton.pipelines`): exactly the pipeline found for this
  kernel's name and source hash, nothing for a kernel not in it;
* :class:`PolicyPipelines` -- a trained checkpoint (``ptxopt train``),
  decoded greedily from the kernel's features with no measurement (the
  policy's first choice at each step, until it says ``stop`` or six
  passes); needs the ``rl`` extra (torch);
* :class:`RankerPipelines` -- a learned action ranker
  (:mod:`ptxopt.search.ranker`, torch-free): its top choice at the kernel's
  root, when it predicts a gain, with no measurement (the hook's
  never-slower check still judges it).

``policy=`` takes either; :func:`policy_chooser` tells them apart by the file
(a ranker file, or a committed ranker's name).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ptxopt.pipeline import Pipeline


class FixedPipeline:
    def __init__(self, pipeline: str | Pipeline):
        self.pipeline = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
        self.key = f"pipeline={self.pipeline}"

    def choose(self, name: str, ptx: str) -> tuple[Pipeline | None, str]:
        return self.pipeline, "the pipeline given to enable()"


class TunedPipelines:
    def __init__(self, path: str | Path):
        from ptxopt.triton.pipelines import read_pipelines

        self.table = read_pipelines(path)
        self.key = f"pipelines={self.table.digest}"

    def choose(self, name: str, ptx: str) -> tuple[Pipeline | None, str]:
        k = self.table.lookup(name, ptx)
        if k is None:
            why = ("its source changed since tuning (another source hash)" if name in self.table.names()
                   else "not in the pipelines file")
            return None, f"{name}: {why}"
        if not k.pipeline:
            return None, f"{name}: tuning found nothing better than Triton's PTX"
        return self.table.parsed[k.key], f"tuned pipeline from {self.table.path}"

    def tuned_objective(self, name: str, ptx: str) -> tuple[str, str]:
        """``(objective, launch in words)`` the kernel was tuned under (``""``: not recorded)."""
        k = self.table.lookup(name, ptx)
        return (k.objective, k.launch) if k is not None else ("", "")

    def tuned_check_launch(self, name: str, ptx: str) -> str:
        """The check launch tuning estimated under, in words ("": not recorded)."""
        k = self.table.lookup(name, ptx)
        return k.check_launch if k is not None else ""

    def tuned_toolchain(self, name: str, ptx: str):
        """The :class:`~ptxopt.triton.tune_toolchain.Toolchain` tuning compiled with (None: not recorded)."""
        from ptxopt.triton.tune_toolchain import from_record

        k = self.table.lookup(name, ptx)
        return from_record(k.toolchain) if k is not None else None


class PolicyPipelines:
    MAX_STEPS = 6

    def __init__(self, checkpoint: str | Path):
        from ptxopt import plugins

        if not Path(checkpoint).is_file():  # a committed policy by name, as ``search --policy NAME`` finds it
            from ptxopt.corpus import committed_policies, committed_policy

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
    """The ranker's first choice at the kernel's root (one pass), when it predicts a gain; measures nothing."""

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


__all__ = ["FixedPipeline", "TunedPipelines", "PolicyPipelines", "RankerPipelines", "policy_chooser"]
