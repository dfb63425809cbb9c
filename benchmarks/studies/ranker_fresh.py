"""Guided search replayed on kernels recorded after a ranker's design was fixed (sim ESTIMATES, REPLAY).

The leave-one-group-out report (``ranker_report.py``) judges rankers on groups
they never saw, but its trajectories are the ones the design was developed on.
This replays guided search on the kernels of NEW that are not in OLD (recorded
later, on the same reward), two ways:

* per template group, a ranker trained and tuned on OLD's *other* groups
  (:func:`ptxopt.search.ranker_replay.train_tuned`): new kernels of a group no
  ranker saw;
* one ranker trained and tuned on all of OLD (as the committed one was before
  the new kernels existed): new variants of families it saw.

Beside each: greedy and a random order at guided's per-step budget, top-3
recall and a random ranker's, per group and pooled (the same definitions as
the report). ``--no-classes``: every register directive measured on its own; ``--no-pass-rule``: a pass's
variants in the ranker's order (:func:`ptxopt.search.guided.demote_repeats`).

Usage (OLD: an earlier version of the same reward's file, e.g.
``git show b37bfe0:corpus/trajectories/greedy_default_objective_sim_e04df66e321a.jsonl > old.jsonl``)::

    OMP_NUM_THREADS=1 python benchmarks/studies/ranker_fresh.py OLD NEW [--no-classes] [--no-pass-rule]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.search import ranker_replay as rr  # noqa: E402
from ptxopt.search.ranker import default_actions  # noqa: E402
from ptxopt.search.trajectory import read_jsonl  # noqa: E402


def by_group(steps, groups) -> dict[str, list]:
    out: dict[str, list] = {}
    for ep in rr.greedy_episodes(steps):
        out.setdefault(groups.get(ep[0].kernel, "outside"), []).append(ep)
    return out


def evaluate(new: dict, ranker_of, rules: dict, label: str) -> None:
    tot = dict.fromkeys(("gg", "ge", "g", "e", "r", "re", "h", "rh", "m", "n", "n1"), 0.0)
    lines = []
    for g, test in sorted(new.items()):
        rk = ranker_of(g)
        steps = [s for ep in test for s in ep]
        scored = rr.score_steps(rk, steps)
        gre = [rr.greedy_of(ep) for ep in test]
        gui = [rr.replay_mean(scored, ep, top_k=rk.top_k, threshold=rk.threshold, known=rk.actions,
                              explore=rk.explore, seeds=5, **rules) for ep in test]
        rnd = [rr.replay_mean(scored, ep, top_k=0, threshold=-math.inf, explore=rk.top_k + rk.explore, seeds=5,
                              **rules) for ep in test]
        h, m = rr.recall(scored, test, **rules)
        rh, _ = rr.recall(None, test, **rules)
        row = {"gg": sum(max(0.0, x) for x, _ in gre), "ge": sum(e for _, e in gre), "g": sum(x for x, _ in gui),
               "e": sum(e for _, e in gui), "r": sum(x for x, _ in rnd), "re": sum(e for _, e in rnd), "h": h,
               "rh": rh, "m": m, "n": len(test), "n1": sum(1 for x, _ in gre if x >= 1.0)}
        for k, v in row.items():
            tot[k] += v
        n = len(test)
        lines.append(f"| {g} | {n} | {row['n1']} | {row['gg'] / n:.2f} / {row['ge'] / n:.1f} | "
                     f"{row['g'] / n:.2f} / {row['e'] / n:.1f} | {row['r'] / n:.2f} / {row['re'] / n:.1f} | "
                     + (f"{h / m:.2f} | {rh / m:.2f}" if m else "- | -")
                     + f" | {rk.trained_on.get('order_model')}, k={rk.top_k}+{rk.explore} |")
    n, gg, ge = tot["n"], tot["gg"], tot["ge"]
    print(f"## {label}\n\n{int(n)} new kernels, {int(tot['n1'])} gain >= 1% under greedy; outcome classes: "
          f"{'on' if rules['classes'] else 'off'}, pass rule: {'on' if rules['kinds'] else 'off'}\n")
    print("| strategy | mean gain % | evaluations / kernel | gain vs greedy | evals vs greedy |\n|---|---|---|---|---|")
    for name, a, e in (("greedy", gg, ge), ("guided", tot["g"], tot["e"]), ("random order, same budget", tot["r"],
                                                                              tot["re"])):
        print(f"| {name} | {a / n:.2f} | {e / n:.1f} | {100 * a / gg if gg else math.nan:.0f}% | "
              f"{100 * e / ge:.0f}% |")
    if tot["m"]:
        print(f"\ntop-3 recall over {int(tot['m'])} states: {tot['h'] / tot['m']:.2f} "
              f"(random ranker: {tot['rh'] / tot['m']:.2f})\n")
    print("| group | kernels | greedy >=1% | greedy gain / evals | guided gain / evals | random gain / evals | "
          "recall@3 | random recall@3 | ranker |\n|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--no-classes", action="store_true")
    ap.add_argument("--no-pass-rule", action="store_true")
    ap.add_argument("--max-iter", type=int, default=40)
    ap.add_argument("--tune-iter", type=int, default=15)
    args = ap.parse_args(argv)
    groups = {k.id: k.group for k in load_manifest()}
    old = [s for s in read_jsonl(args.old) if s.strategy == "greedy"]
    seen = {s.kernel for s in old}
    new = by_group([s for s in read_jsonl(args.new) if s.strategy == "greedy" and s.kernel not in seen], groups)
    if not new:
        raise SystemExit(f"{args.new}: no kernel that {args.old} does not hold")
    old_by = by_group(old, groups)
    actions = default_actions(old)
    rules = {"classes": not args.no_classes, "kinds": not args.no_pass_rule}
    kw = dict(actions=actions, max_iter=args.max_iter, tune_iter=args.tune_iter)
    t = time.perf_counter()
    evaluate(new, lambda g: rr.train_tuned([s for o, es in old_by.items() if o != g for ep in es for s in ep],
                                           groups, **kw),
             rules, "New kernels of a held-out group (ranker trained and tuned on the old file's other groups)")
    whole = rr.train_tuned(old, groups, **kw)
    evaluate(new, lambda g: whole, rules, "New variants of seen families (one ranker on all of the old file)")
    print(f"({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
