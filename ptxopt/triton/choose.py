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

The last two and ``policy=``'s :func:`policy_chooser` live in
:mod:`ptxopt.search.policy_choice` (``ptxopt.optimize(policy=)`` uses them
too) and are re-exported here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ptxopt.passes.pipeline import Pipeline


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


from ptxopt.search.policy_choice import PolicyPipelines, RankerPipelines, policy_chooser  # noqa: E402

__all__ = ["FixedPipeline", "TunedPipelines", "PolicyPipelines", "RankerPipelines", "policy_chooser"]
