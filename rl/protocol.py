"""The evaluation protocol: a policy against greedy and random search at equal budgets.

For each kernel:

* ``greedy``          -- greedy search, unlimited (its evaluations are the yardstick)
* ``policy``          -- one greedy-decoded policy rollout
* ``policy@K``        -- the best of K rollouts sampled at the exploiting temperature
* ``random@policy``   -- random search with exactly the evaluations ``policy@K`` used
* ``greedy@policy``   -- greedy search cut off at that same budget

An evaluation is one distinct module measured (see :mod:`ptxopt.search.meter`),
so every row is compared on what it cost, not on how many rollouts it drew.
"""

from __future__ import annotations

import statistics
from typing import Callable, Sequence

from ptxopt.search import EvalOptions, SearchConfig, search_kernel


def _row(r) -> dict:
    return {"pipeline": r.pipeline, "improvement_pct": r.improvement_pct or 0.0, "evaluations": r.evaluations,
            "error": r.error}


def compare(checkpoint: str, kernels: Sequence, options: EvalOptions, *, samples: int = 8, seed: int = 0,
            max_steps: int = 6, temperature: float = 0.5, progress: Callable[[int, int, str], None] | None = None) -> dict:
    """Per-kernel rows and the summary (means, ratios, targets) for ``kernels`` ((Candidate, family) pairs)."""
    rows = []
    for i, (cand, family) in enumerate(kernels):
        cfg = dict(max_steps=max_steps, seed=seed, options=options)
        g = search_kernel(cand, SearchConfig("greedy", **cfg), family)
        p1 = search_kernel(cand, SearchConfig("policy", policy=checkpoint, samples=0, **cfg), family)
        pk = search_kernel(cand, SearchConfig("policy", policy=checkpoint, samples=samples, temperature=temperature,
                                              **cfg), family)
        budget = max(1, pk.evaluations)
        rnd = search_kernel(cand, SearchConfig("random", budget=budget, **cfg), family)
        gb = search_kernel(cand, SearchConfig("greedy", budget=budget, **cfg), family)
        rows.append({"kernel": cand.label, "family": family, "greedy": _row(g), "policy": _row(p1),
                     f"policy@{samples}": _row(pk), "random@policy": _row(rnd), "greedy@policy": _row(gb)})
        if progress:
            progress(i + 1, len(kernels), cand.label)
    return {"samples": samples, "temperature": temperature, "kernels": rows, "summary": summarize(rows, samples)}


def summarize(rows: list[dict], samples: int) -> dict:
    names = ["greedy", "policy", f"policy@{samples}", "random@policy", "greedy@policy"]
    out = {}
    for n in names:
        imps = [r[n]["improvement_pct"] for r in rows]
        evs = [r[n]["evaluations"] for r in rows]
        out[n] = {"mean_improvement_pct": statistics.fmean(imps) if imps else None,
                  "median_improvement_pct": statistics.median(imps) if imps else None,
                  "mean_evaluations": statistics.fmean(evs) if evs else None}
    g = out["greedy"]
    pk, p1 = out[f"policy@{samples}"], out["policy"]
    if rows and g["mean_improvement_pct"]:
        out["targets"] = {
            "best_of_k_vs_greedy_improvement": pk["mean_improvement_pct"] / g["mean_improvement_pct"],
            "best_of_k_vs_greedy_evaluations": pk["mean_evaluations"] / g["mean_evaluations"],
            "greedy_decoded_vs_greedy_improvement": p1["mean_improvement_pct"] / g["mean_improvement_pct"],
            "best_of_k_beats_random_at_equal_budget":
                pk["mean_improvement_pct"] > out["random@policy"]["mean_improvement_pct"],
        }
    return out
