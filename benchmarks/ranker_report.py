"""Does a learned ranker make search cheaper on template groups it never saw?

Protocol (all figures are sim ESTIMATES, on the reward the trajectory files
hold -- the report prints their ``reward_model``):

* **leave-one-group-out** over the manifest's template groups present in the
  trajectories: each group in turn is held out, rankers are trained on the
  others' greedy trajectories (:func:`ptxopt.search.ranker.train`);
* a **learning curve**: 1, 2, 4, 8 and all-but-one training groups, each size
  in 3 orders (random permutations of the other groups, seeded);
* **baselines** in the same table, per held-out group: greedy (every legal
  action measured at every step), guided with a *random* ranker at the same
  top-k (random at equal budget), the best fixed pass chosen on the training
  groups (the action with the best mean log gain at the training kernels'
  roots; 1 evaluation), and that pass plus one measured alternative (the
  training groups' second best; the better of the two; 2 evaluations).
  Fixed pipelines are single passes: the trajectories hold every legal
  candidate's cycles at the root only. The committed RL policy is not in this
  table (it needs the torch layer; ``benchmarks/rl_report.py`` reports it).
* **top-3 recall**: at every greedy state where greedy did not stop, a hit
  is any of the ranker's top 3 actions within 0.1% of the best candidate's
  cycles; a random ranker's recall (3 seeds) is printed beside it.

How guided search is evaluated: **replay** of the recorded greedy
trajectories (no ptxas, no sim). At each state on greedy's path, guided
picks its top-k plus the exploration slot (:func:`ptxopt.search.guided.choose`
rules) among the candidates greedy measured there, and keeps the best
improving one. While that is greedy's action it follows greedy's path; when
it keeps another improving action the replay ends there with that
candidate's cycles (the states after it were never measured), so the
replayed gain is a LOWER BOUND on what guided search would find. Evaluations
are counted as ``search`` counts them: the baseline plus each measured
candidate; every evaluation of a new module is one ptxas run, so the ptxas
calls equal the evaluations on a cold cache. Wall time is the ranker's own
(training, scoring); replay measures nothing.

Usage::

    python benchmarks/ranker_report.py [FILES...] [--json OUT] [--top-k 2] [--max-groups N]

FILES: trajectory JSONL files (default: corpus/trajectories/*.jsonl).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ptxopt.search.actions import STOP  # noqa: E402
from ptxopt.search.guided import THRESHOLD, TOP_K  # noqa: E402
from ptxopt.search.random_search import kernel_rng  # noqa: E402
from ptxopt.search.ranker import RandomRanker, rows_of, train  # noqa: E402
from ptxopt.search.trajectory import episodes, read_jsonl  # noqa: E402

SIZES = (1, 2, 4, 8)
ORDERS = 3
HIT_TOL = 0.001  # a hit: within 0.1% of the best candidate's cycles


def load_episodes(files):
    eps, models = [], {}
    for f in files:
        steps = [s for s in read_jsonl(f) if s.strategy == "greedy"]
        for s in steps:
            key = (s.reward_model or f"{s.backend} (version not recorded)", s.objective or "not recorded")
            models[key] = models.get(key, 0) + 1
        eps.extend(e for e in episodes(steps) if e and e[0].step == 0)
    return eps, models


def group_of(kernel: str, groups: dict) -> str:
    return groups.get(kernel, "outside-the-corpus")


def scores_at(ranker, step) -> dict[str, float]:
    return ranker._scores[id(step)] if hasattr(ranker, "_scores") else _score_steps(ranker, [step])[id(step)]


def _score_steps(ranker, steps) -> dict[int, dict[str, float]]:
    """Every step's action scores in one prediction (one call per step is dominated by its overhead)."""
    X, _, idx = rows_of(steps, ranker.actions)
    out: dict[int, dict[str, float]] = {id(s): {} for s in steps}
    if idx:
        for (_, n, a), v in zip(idx, ranker.score_rows(X)):
            out[id(steps[n])][a] = float(v)
    return out


def prepare(ranker, episodes_):
    """Score every state of ``episodes_`` at once (kept on the ranker for :func:`scores_at`)."""
    ranker._scores = _score_steps(ranker, [s for ep in episodes_ for s in ep])
    return ranker


class _Move:
    def __init__(self, action):
        self.action = action


def replay(ranker, episode, *, top_k: int, threshold: float, seed: int = 0) -> tuple[float, int]:
    """Guided search replayed on a greedy episode: (gain %, evaluations). A lower bound (module doc)."""
    from ptxopt.search.guided import choose

    rng = kernel_rng(seed, episode[0].kernel)
    base = episode[0].cycles_before
    cycles, evals = base, 1
    for s in episode:
        legal = [a for a, c in s.candidates.items()]
        sc = scores_at(ranker, s)
        pick = [m.action for m in choose([_Move(a) for a in legal], sc, top_k=top_k, threshold=threshold, rng=rng)]
        evals += len(pick)
        ok = [(s.candidates[a], a) for a in pick if s.candidates[a] is not None and s.candidates[a] < cycles]
        if not ok:
            break
        c, a = min(ok)
        cycles = c
        if a != s.action:  # off greedy's path: nothing after this was measured
            break
    return 100.0 * (1 - cycles / base), evals


def greedy_of(episode) -> tuple[float, int]:
    base = episode[0].cycles_before
    last = episode[-1]
    return 100.0 * (1 - last.cycles_after / base), 1 + sum(len(s.candidates) for s in episode)


def recall(ranker, episodes_, k: int = 3) -> tuple[int, int]:
    hits = n = 0
    for ep in episodes_:
        for s in ep:
            if s.action == STOP:
                continue
            usable = {a: c for a, c in s.candidates.items() if c is not None}
            if not usable:
                continue
            best = min(usable.values())
            sc = scores_at(ranker, s)
            top = sorted(sc, key=lambda a: -sc[a])[:k]
            n += 1
            hits += any(a in usable and usable[a] <= best * (1 + HIT_TOL) for a in top)
    return hits, n


def fixed_passes(train_eps) -> list[str]:
    """Single passes ordered by mean log gain at the training kernels' roots (missing: no gain)."""
    acts: dict[str, list[float]] = {}
    n = len(train_eps)
    for ep in train_eps:
        s = ep[0]
        for a, c in s.candidates.items():
            if c:
                acts.setdefault(a, []).append(math.log(s.cycles_before / c))
    mean = {a: sum(g) / n for a, g in acts.items()}
    return sorted(mean, key=lambda a: -mean[a])


def fixed_on(ep, passes) -> float:
    s = ep[0]
    best = s.cycles_before
    for a in passes:
        c = s.candidates.get(a)
        if c is not None and c < best:
            best = c
    return 100.0 * (1 - best / s.cycles_before)


def mean(xs):
    xs = [x for x in xs if not (isinstance(x, float) and math.isnan(x))]
    return statistics.fmean(xs) if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--json", default=None)
    ap.add_argument("--top-k", type=int, default=TOP_K)
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--max-groups", type=int, default=None, help="hold out only the first N groups (by size)")
    ap.add_argument("--max-iter", type=int, default=60, help="boosting iterations per ranker")
    args = ap.parse_args(argv)
    from ptxopt.corpus import load_manifest

    files = args.files or sorted(str(p) for p in (ROOT / "corpus" / "trajectories").glob("*.jsonl"))
    eps, models = load_episodes(files)
    groups = {k.id: k.group for k in load_manifest()}
    by_group: dict[str, list] = {}
    for ep in eps:
        by_group.setdefault(group_of(ep[0].kernel, groups), []).append(ep)
    names = sorted(by_group, key=lambda g: (-len(by_group[g]), g))
    print(f"trajectories: {len(eps)} greedy episodes from {len(files)} file(s); rewards (model, objective): "
          + "; ".join(f"{m} / {o}: {n} steps" for (m, o), n in sorted(models.items())))
    print("all cycle figures are sim ESTIMATES; guided figures are replays of greedy trajectories (a lower "
          "bound on guided's gain, see the module doc)\n")
    held = names[: args.max_groups] if args.max_groups else names
    doc = {"files": files, "reward_models": [list(k) + [n] for k, n in models.items()], "top_k": args.top_k,
           "threshold": args.threshold, "groups": {}}
    curve: dict[str, list] = {}
    t_train = t_score = 0.0
    for g in held:
        test = by_group[g]
        others = [o for o in names if o != g]
        if not others:
            continue
        gre = [greedy_of(ep) for ep in test]
        row = {"kernels": len(test), "greedy_gains_1pct": sum(1 for x, _ in gre if x >= 1.0),
               "greedy": {"gain": mean([x for x, _ in gre]), "evals": mean([e for _, e in gre])}}
        sizes = sorted({min(n, len(others)) for n in SIZES} | {len(others)})
        row["curve"] = {}
        for n in sizes:
            runs = []
            for order in range(ORDERS if n < len(others) else 1):
                perm = list(np.random.default_rng(1000 * order + n).permutation(others))[:n]
                train_steps = [s for o in perm for ep in by_group[o] for s in ep]
                t = time.perf_counter()
                try:
                    rk = train(train_steps, max_iter=args.max_iter, seed=order)
                except ValueError:
                    continue
                t_train += time.perf_counter() - t
                t = time.perf_counter()
                prepare(rk, test)
                rep = [replay(rk, ep, top_k=args.top_k, threshold=args.threshold) for ep in test]
                h, m = recall(rk, test)
                t_score += time.perf_counter() - t
                train_eps = [ep for o in perm for ep in by_group[o]]
                fixed = fixed_passes(train_eps)
                runs.append({"train_groups": perm, "gain": mean([x for x, _ in rep]), "evals": mean([e for _, e in rep]),
                             "recall3": h / m if m else float("nan"), "states": m,
                             "fixed": {"pass": fixed[:1], "gain": mean([fixed_on(ep, fixed[:1]) for ep in test])},
                             "fixed_plus_one": {"passes": fixed[:2], "gain": mean([fixed_on(ep, fixed[:2]) for ep in test])}})
            if runs:
                row["curve"][str(n)] = runs
                curve.setdefault("all-but-one" if n == len(others) else str(n), []).extend(
                    [(r["gain"], r["evals"], r["recall3"], row["greedy"]["gain"], row["greedy"]["evals"]) for r in runs])
        rnd = []
        for seed in range(ORDERS):
            rr = RandomRanker(sorted({a for ep in eps for s in ep for a in s.candidates}), seed=seed)
            rep = [replay(rr, ep, top_k=args.top_k, threshold=-1.0, seed=seed) for ep in test]
            h, m = recall(rr, test)
            rnd.append((mean([x for x, _ in rep]), mean([e for _, e in rep]), h / m if m else float("nan")))
        row["random_ranker"] = {"gain": mean([r[0] for r in rnd]), "evals": mean([r[1] for r in rnd]),
                                "recall3": mean([r[2] for r in rnd])}
        doc["groups"][g] = row
        last = row["curve"][max(row["curve"], key=int)][0] if row["curve"] else {}
        print(f"held out {g}: {len(test)} kernels, greedy {_f(row['greedy']['gain'])}% / "
              f"{_f(row['greedy']['evals'], 1)} evals, guided {_f(last.get('gain'))}% / {_f(last.get('evals'), 1)}",
              file=sys.stderr, flush=True)
    doc["train_s"], doc["score_s"] = t_train, t_score
    _print(doc, curve)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str))
    return 0


def _f(x, d=2):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def _print(doc, curve) -> None:
    print("## Baselines per held-out group (ranker trained on all other groups; gain % of baseline cycles, ESTIMATE)\n")
    print("| held-out group | kernels | greedy >=1% | greedy gain / evals | guided gain / evals | "
          "random top-k gain / evals | fixed pass gain (1 eval) | fixed + 1 alt gain (2 evals) | recall@3 | random recall@3 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for g, r in doc["groups"].items():
        if not r["curve"]:
            continue
        last = r["curve"][max(r["curve"], key=int)][0]
        print(f"| {g} | {r['kernels']} | {r['greedy_gains_1pct']} | {_f(r['greedy']['gain'])} / {_f(r['greedy']['evals'], 1)} | "
              f"{_f(last['gain'])} / {_f(last['evals'], 1)} | {_f(r['random_ranker']['gain'])} / "
              f"{_f(r['random_ranker']['evals'], 1)} | {_f(last['fixed']['gain'])} ({','.join(last['fixed']['pass'])}) | "
              f"{_f(last['fixed_plus_one']['gain'])} | {_f(last['recall3'])} | {_f(r['random_ranker']['recall3'])} |")
    print("\n## Learning curve (mean over held-out groups and orders)\n")
    print("| training groups | runs | guided gain % | guided evals | greedy gain % | greedy evals | "
          "gain vs greedy | evals vs greedy | recall@3 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sorted(curve, key=lambda k: (k == "all-but-one", int(k) if k.isdigit() else 0)):
        rs = curve[n]
        gg, ge = mean([r[3] for r in rs]), mean([r[4] for r in rs])
        g, e = mean([r[0] for r in rs]), mean([r[1] for r in rs])
        print(f"| {n} | {len(rs)} | {_f(g)} | {_f(e, 1)} | {_f(gg)} | {_f(ge, 1)} | "
              f"{_f(100 * g / gg if gg else float('nan'), 0)}% | {_f(100 * e / ge if ge else float('nan'), 0)}% | "
              f"{_f(mean([r[2] for r in rs]))} |")
    print(f"\nranker time: training {doc['train_s']:.1f} s, scoring (replay + recall) {doc['score_s']:.1f} s; "
          "ptxas calls = evaluations on a cold cache (replay runs none)")


if __name__ == "__main__":
    sys.exit(main())
