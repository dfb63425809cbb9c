"""How far can an order learned from these trajectories get on top-3 recall? (sim ESTIMATES, no ptxas)

Issue 44 asks for top-3 recall >= 0.9 on held-out template groups. This
prints, per group where greedy gains, the recall of each order model
(:data:`ptxopt.search.ranker.ORDERS`) trained two ways:

* **held out**: on every other group (what the report judges; untuned here, so
  both models are shown);
* **in sample**: on the group itself, then scored on the same states. Not a
  held-out figure: an upper bound on what a model of that kind fits. For the
  action prior, which reads nothing of the state, it says how far any
  state-blind order of this kind gets on that group when it has seen the group.

``--residual``: an order model tried and not adopted, *residual trees*: the action
prior plus ``shrink`` x gradient-boosted trees fitted to what the prior leaves
(``share - prior``; ``ITERS`` iterations), on a grid of both, held out (each
setting scored on the held-out group: a setting chosen this way is chosen by
the test) and **nested** (the setting chosen by the recall on leave-one-group-out
folds of the training groups alone, as the tuner chooses: the honest figure).

``--cells``: a third kind of order tried and not adopted, *cell priors*: the
action prior computed per cell of one state feature that physics says should
decide the action (what binds, what limits occupancy, the objective, spills,
the sign of what applying the action changes), shrunk toward the action's
own prior by ``--shrink`` pseudo-observations; held out, every state counted
(the targets' definition). A cell the training groups never reached falls
back to the prior.

Recall as the report counts it (:func:`ptxopt.search.ranker_replay.recall`: the order rules applied, ties by
their chance) at the states whose best candidate gains >= 0.1%; a random ranker beside it.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/studies/ranker_ceiling.py TRAJECTORIES.jsonl [--max-iter 40] [--residual]
        [--cells [--shrink 2]]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from ranker_fresh import by_group  # noqa: E402

from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.search import ranker_replay as rr  # noqa: E402
from ptxopt.search.ranker import NEAR_BEST, ORDERS, _fit, _prior_model, default_actions, feature_names, \
    relevance, rows_of, train_each  # noqa: E402
from ptxopt.search.trajectory import read_jsonl  # noqa: E402


def hits(rankers: dict, episodes) -> dict[str, tuple[float, int]]:
    """order -> (expected hits, states) of each ranker on ``episodes``."""
    steps = [s for ep in episodes for s in ep]
    return {o: rr.recall(rr.score_steps(rk, steps), episodes, min_gain=NEAR_BEST) for o, rk in rankers.items()}


#: The residual model's grid: boosting iterations x shrinkage (0: the prior alone).
ITERS = (5, 10, 20, 40)
SHRINK = (0.25, 0.5, 1.0)


def residual_hits(train_steps, test, actions) -> dict[tuple, tuple[float, int]] | None:
    """(iterations, shrink) -> recall hits of the residual model (module doc) trained on ``train_steps``, scored
    on ``test``; None when the training steps hold fewer than two gaining states."""
    X, y, idx = rows_of(train_steps, actions)
    prior = _prior_model(y, idx, actions)
    if prior is None:
        return None
    rel = relevance(y, idx)
    keep = ~np.isnan(rel)
    base = prior.predict(X)
    steps = [s for ep in test for s in ep]
    Xt, _, idx_t = rows_of(steps, actions)
    base_t = prior.predict(Xt)

    def scored(pred):
        out = {id(s): ({}, {}) for s in steps}
        for (_, n, a), v in zip(idx_t, pred):
            out[id(steps[n])][0][a] = float(v)
        return rr.recall(out, test, min_gain=NEAR_BEST)

    out = {(0, 0.0): scored(base_t)}
    for it in ITERS:
        resid = _fit(X[keep], rel[keep] - base[keep], 0, it).predict(Xt)
        out.update({(it, lam): scored(base_t + lam * resid) for lam in SHRINK})
    return out


def residual(eps: dict, actions) -> None:
    """The residual model's recall, each setting held out, and nested (module doc)."""
    gaining = [g for g, e in eps.items() if rr.recall(None, e, min_gain=NEAR_BEST)[1]]
    grid = [(0, 0.0), *((it, lam) for it in ITERS for lam in SHRINK)]
    outer = {c: [0.0, 0] for c in grid}
    nested = [0.0, 0]
    print("\n| held-out group | setting chosen on the training folds (iterations, shrink) | its fold recall | "
          "prior's fold recall | held-out recall |\n|---|---|---|---|---|")
    for g in gaining:
        others = [o for o in eps if o != g]
        fold = {c: [0.0, 0] for c in grid}
        for f in others:
            hit = residual_hits([s for o in others if o != f for ep in eps[o] for s in ep], eps[f], actions)
            for c, (h, m) in (hit or {}).items():
                fold[c][0] += h
                fold[c][1] += m
        rate = {c: h / m if m else math.nan for c, (h, m) in fold.items()}
        chosen = max(grid, key=lambda c: (rate[c], c == (0, 0.0)))  # ties: the prior
        held = residual_hits([s for o in others for ep in eps[o] for s in ep], eps[g], actions)
        for c, (h, m) in held.items():
            outer[c][0] += h
            outer[c][1] += m
        h, m = held[chosen]
        nested[0] += h
        nested[1] += m
        print(f"| {g} | {chosen} | {rate[chosen]:.2f} | {rate[(0, 0.0)]:.2f} | {h:.0f}/{m} |")
    print(f"\nnested (setting chosen on the training folds): **{nested[0] / nested[1]:.2f}** over {nested[1]} states")
    print("\n| iterations, shrink | held-out recall (setting fixed for every group) |\n|---|---|")
    for c, (h, m) in outer.items():
        print(f"| {'prior alone' if c == (0, 0.0) else c} | {h / m:.3f} |")


#: The state features a cell prior splits on (``--cells``): a column of the ranker's rows each, or a few.
CELLS = {
    "what binds": ("binds_memory", "binds_arithmetic", "binds_latency_or_issue"),
    "memory binds": ("binds_memory",),
    "latency or issue binds": ("binds_latency_or_issue",),
    "registers limit occupancy": ("limited_by_registers",),
    "warps limit occupancy": ("limited_by_warps",),
    "objective": ("objective_throughput",),
    "spills": ("spill_bytes",),
    "sign of the change in global loads": ("delta:n_ld_global",),
    "sign of the change in instructions": ("delta:n_instructions",),
    "sign of the change in the critical path": ("delta:critical_path_latency_max",),
}


def _cell(x, cols) -> tuple:
    """The cell of one row: each column's sign (nan: unknown)."""
    return tuple("?" if math.isnan(x[c]) else int(np.sign(x[c])) for c in cols)


def cells(eps: dict, actions, shrink: float) -> None:
    """Held-out recall of the cell priors (module doc), every state counted."""
    names = {n: i for i, n in enumerate(feature_names(actions))}
    totals = {c: [0.0, 0] for c in ("prior", *CELLS)}
    print(f"\n| held-out group | states | prior | " + " | ".join(CELLS) + " |\n|---|---|---|" + "---|" * len(CELLS))
    for g, test in sorted(eps.items(), key=lambda kv: -len(kv[1])):
        if not rr.recall(None, test)[1]:
            continue
        train = [s for o, e in eps.items() if o != g for ep in e for s in ep]
        X, y, idx = rows_of(train, actions)
        prior = _prior_model(y, idx, actions)
        rel = relevance(y, idx)
        steps = [s for ep in test for s in ep]
        Xt, _, idx_t = rows_of(steps, actions)
        base = prior.predict(Xt)
        row = {}
        for label, feats in (("prior", ()), *CELLS.items()):
            cols = [names[f] for f in feats]
            total: dict = {}
            count: dict = {}
            for (_, _n, a), r, x in zip(idx, rel, X):
                if not math.isnan(r):
                    key = (a, _cell(x, cols))
                    total[key] = total.get(key, 0.0) + r
                    count[key] = count.get(key, 0) + 1
            scored = {id(s): ({}, {}) for s in steps}
            for (_, n, a), x, p in zip(idx_t, Xt, base):
                key = (a, _cell(x, cols))
                scored[id(steps[n])][0][a] = (total.get(key, 0.0) + shrink * p) / (count.get(key, 0) + shrink)
            row[label] = rr.recall(scored, test)
            totals[label][0] += row[label][0]
            totals[label][1] += row[label][1]
        n = row["prior"][1]
        print(f"| {g} | {n} | " + " | ".join(f"{h / m:.2f}" for h, m in row.values()) + " |")
    print(f"| **all** | {totals['prior'][1]} | " + " | ".join(f"**{h / m:.3f}**" for h, m in totals.values()) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--max-iter", type=int, default=40, help="boosting iterations of the trees")
    ap.add_argument("--residual", action="store_true", help="also the residual model, held out and nested (6 min)")
    ap.add_argument("--cells", action="store_true", help="also the cell priors, held out (module doc)")
    ap.add_argument("--shrink", type=float, default=2.0, help="the cell priors' pseudo-observations of the prior")
    args = ap.parse_args(argv)
    groups = {k.id: k.group for k in load_manifest()}
    eps = by_group([s for s in read_jsonl(args.file) if s.strategy == "greedy"], groups)
    actions = default_actions([s for e in eps.values() for ep in e for s in ep])
    cols = ["random", *(f"held-out {o}" for o in ORDERS), *(f"in-sample {o}" for o in ORDERS)]
    total = {c: [0.0, 0] for c in cols}
    print("| group | states | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for g, test in sorted(eps.items(), key=lambda kv: -len(kv[1])):
        rand = rr.recall(None, test, min_gain=NEAR_BEST)
        if not rand[1]:
            continue  # greedy gains nothing here: no state to order
        train = [s for o, e in eps.items() if o != g for ep in e for s in ep]
        row = {"random": rand}
        for label, steps in (("held-out", train), ("in-sample", [s for ep in test for s in ep])):
            row.update({f"{label} {o}": v for o, v in
                        hits(train_each(steps, ORDERS, actions=actions, max_iter=args.max_iter), test).items()})
        for c in cols:
            total[c][0] += row[c][0]
            total[c][1] += row[c][1]
        print(f"| {g} | {rand[1]} | " + " | ".join(f"{row[c][0] / row[c][1]:.2f}" for c in cols) + " |")
    print(f"| **all** | {total['random'][1]} | " + " | ".join(f"**{h / n:.2f}**" for h, n in total.values()) + " |")
    if args.residual:
        residual(eps, tuple(actions))
    if args.cells:
        cells(eps, actions, args.shrink)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
