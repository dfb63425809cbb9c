"""Train an action ranker (:mod:`ptxopt.search.ranker`) on greedy trajectories and save it.

Prints what it was trained on, the training time, the ``top_k``,
``explore`` and ``threshold`` chosen by replay on held-out folds of its own
template groups (:func:`ptxopt.search.ranker_replay.train_tuned`; ``top_k``
0: its order did not beat random there), and what the models learned:
the action prior's table when the order is the prior, else the
permutation importances (the drop in the model's R^2 when one input is
shuffled, on at most 3000 training rows, 3 repeats) of the 15 most
important inputs of the order trees (the share of the state's best gain,
on the rows of states that gain); and those of the gain model (the option
value ``max(0, log gain)``). Every cycle figure behind it is a sim ESTIMATE
on the reward the files hold.

Usage::

    python benchmarks/studies/train_ranker.py FILES... --out corpus/rankers/NAME.ranker [--max-iter 40] [--tune-iter 15]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.search.ranker import feature_names, rows_of  # noqa: E402
from ptxopt.search.ranker_replay import train_tuned  # noqa: E402
from ptxopt.search.trajectory import read_jsonl  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-iter", type=int, default=40)
    ap.add_argument("--tune-iter", type=int, default=15)
    ap.add_argument("--no-importance", action="store_true")
    args = ap.parse_args(argv)
    steps = [s for f in args.files for s in read_jsonl(f) if s.strategy == "greedy"]
    models = sorted({f"{s.reward_model or s.backend + ' (version not recorded)'} / {s.objective or 'objective not recorded'}"
                     for s in steps})
    from ptxopt.kernels.corpus import load_manifest

    groups = {k.id: k.group for k in load_manifest()}
    t = time.perf_counter()
    rk = train_tuned(steps, groups, max_iter=args.max_iter, tune_iter=args.tune_iter,
                     note={"files": [Path(f).name for f in args.files], "rewards": models})
    dt = time.perf_counter() - t
    rk.save(args.out)
    print(f"trained on {rk.trained_on['rows']} candidates of {rk.trained_on['kernels']} kernels "
          f"({len(steps)} states) in {dt:.1f} s -> {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KiB)")
    print("rewards:", "; ".join(models))
    print(f"guided search settings (chosen by replay on held-out folds of its training groups): top_k {rk.top_k}, "
          f"explore {rk.explore}, threshold {rk.threshold:g}; order: {rk.trained_on.get('order')} "
          f"({rk.trained_on.get('gaining_states')} gaining states)")
    if args.no_importance:
        return 0
    from sklearn.inspection import permutation_importance

    X, y, idx = rows_of(steps, rk.actions)
    X = X.copy()
    X[:, np.isnan(X).all(axis=0)] = 0.0
    names = feature_names(rk.actions)
    from ptxopt.search.ranker import ActionPrior, relevance

    rel = relevance(y, idx)
    keep = ~np.isnan(rel)
    models = [("gain model (drop in R^2 of the option value max(0, log gain))", rk.gain_model, X, np.maximum(y, 0.0))]
    if isinstance(rk.model, ActionPrior):
        p = rk.model
        print(f"order model: the action prior (mean share of the state's best gain where legal, shrunk toward the "
              f"mean {p.mean:.3f}); action, share, gaining states where it was legal:")
        for a in sorted(p.share, key=lambda a: -p.share[a]):
            print(f"  {a:<28} {p.share[a]:.3f}  {p.states[a]}")
    else:
        models.insert(0, ("order model (drop in R^2 of the share of the state's best gain)", rk.model, X[keep],
                          rel[keep]))
    for title, model, rows, target in models:
        rng = np.random.default_rng(0)
        sel = rng.choice(len(target), size=min(3000, len(target)), replace=False)
        imp = permutation_importance(model, rows[sel], target[sel], n_repeats=3, random_state=0)
        print(f"permutation importance, {title}:")
        for i in np.argsort(-imp.importances_mean)[:15]:
            print(f"  {names[i]:<40} {imp.importances_mean[i]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
