"""Does a learned ranker make search cheaper on template groups it never saw?

Protocol (all figures are sim ESTIMATES, on the reward the trajectory files
hold -- the report prints their ``reward_model``):

* **leave-one-group-out** over the manifest's template groups present in the
  trajectories: each group in turn is held out, rankers are trained on the
  others' greedy trajectories (:func:`ptxopt.search.ranker.train`), which
  also choose their order model (the action prior or the trees; the table
  names it), ``top_k``, exploration slots and ``threshold`` by replay on
  leave-one-group-out folds of their own training groups (never the
  held-out group; :func:`ptxopt.search.ranker_replay.train_tuned`);
  ``--top-k``/``--threshold`` override that;
* a **learning curve**: 1, 2, 4, 8 and all-but-one training groups, each size
  in 3 orders (random permutations of the other groups, seeded);
* **baselines** in the same table, per held-out group: greedy (every legal
  action measured at every step), guided search with a *random* order at
  the learned ranker's per-step budget (``top_k + explore`` actions, all
  random), never stopping on a prediction (random at equal per-step
  budget; every replay with a random choice is averaged over 5 draws), the best fixed pass chosen
  on the training groups (the action with the best mean log gain at the
  training kernels' roots; baseline + 1 evaluation), and that pass plus one
  measured alternative (the training groups' second best; the better of the
  two; baseline + 2). Fixed pipelines are single passes: the trajectories
  hold every legal candidate's cycles at the root only. The committed RL
  policy joins the table with ``--policy NAME`` (it needs the torch layer).
* **top-3 recall**: at every greedy state where greedy did not stop, a hit
  is any of the ranker's 3 first-ordered actions within 0.1% of the best
  candidate's cycles; actions tied in the ranker's order count by their
  chance under guided search's random tie-break (an expectation,
  :func:`ptxopt.search.ranker_replay.recall`); a random ranker's expected
  recall is printed beside it, and the same two over the states whose best
  gains at least 0.1% (where greedy moved on less, every action that
  changes nothing is a hit);
* the **committed policy** (``--policy NAME``, needs the torch layer):
  its greedy-decoded choice replayed the same way (one evaluation per
  step; the replay ends where it leaves greedy's path).
* **order rules** (:func:`ptxopt.search.guided.demote_repeats`): guided and
  random both measure one of the register directives that ask ptxas for the
  same limit (an outcome class: the others wait behind every other action)
  and a pass's first variant before its others (the pass rule); the
  headline also shows both without the pass rule and without either rule,
  and recall the same ways.
* per held-out group, the number of kernels where greedy gains >= 1%.

How guided search is evaluated: **REPLAY** of the recorded greedy
trajectories (:mod:`ptxopt.search.ranker_replay`; no ptxas, no sim): a
lower bound on live guided search's gain (it ends where it leaves greedy's
path). Evaluations are counted as ``search`` counts them: the baseline plus
each measured candidate; every evaluation of a new module is one ptxas run,
so the ptxas calls equal the evaluations on a cold cache. Wall time is the
ranker's own (training with tuning, scoring); replay measures nothing.

Usage (nice it on a shared machine)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/studies/ranker_report.py [FILES...] [--json OUT]
        [--sizes 1,2,4,8] [--orders 3] [--max-iter 40] [--tune-iter 15] [--max-groups N] [--policy NAME]
        [--seed S] [--draws N] [--show-states]

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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.search.ranker import NEAR_BEST  # noqa: E402
from ptxopt.search.ranker_replay import greedy_episodes, greedy_of, recall, replay_mean, score_steps, \
    train_tuned  # noqa: E402
from ptxopt.search.trajectory import read_jsonl  # noqa: E402

SIZES = (1, 2, 4, 8)
ORDERS = 3
#: Draws averaged per replay of a random choice (guided's exploration slots, the random baseline).
DRAWS = 5


def json_safe(x):
    """``x`` with every non-finite float (a threshold of -inf: never stop on a prediction; a NaN mean over
    nothing) as None, so that the report is strict JSON (``json.dumps(..., allow_nan=False)`` accepts it)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.generic):
        return json_safe(x.item())
    return x


def dump_json(doc, path) -> None:
    Path(path).write_text(json.dumps(json_safe(doc), indent=1, default=str, allow_nan=False))


def _t(threshold) -> str:
    """A threshold for the tables (None in the JSON, -inf in memory: never stops on a prediction)."""
    return "none" if threshold is None or not math.isfinite(threshold) else f"{threshold:g}"


def load_episodes(files):
    eps, models = [], {}
    for f in files:
        steps = [s for s in read_jsonl(f) if s.strategy == "greedy"]
        for s in steps:
            key = (s.reward_model or f"{s.backend} (version not recorded)", s.objective or "not recorded")
            models[key] = models.get(key, 0) + 1
        eps.extend(greedy_episodes(steps))
    return eps, models


def load_rl_policy(name: str):
    """A committed policy (by name or path), widened to the current actions (the torch layer)."""
    from ptxopt.kernels.corpus import committed_policy
    from ptxopt_rl.checkpoint import load_policy

    path = name if Path(name).is_file() else committed_policy(name)
    if path is None:
        raise SystemExit(f"--policy {name}: neither a file nor a committed policy")
    return load_policy(path)[0]


def policy_replay(policy, ep) -> tuple[float, int]:
    """The policy's greedy-decoded choices replayed on a greedy episode: ``(gain %, evaluations)``, one
    evaluation per pass it appends; it ends at ``stop`` or where the policy leaves greedy's path (keeping
    that candidate when it is faster: never slower than the baseline)."""
    from ptxopt.search.actions import ACTIONS, STOP

    base = cycles = ep[0].cycles_before
    evals = 1
    for s in ep:
        a, _ = policy.act(np.asarray(s.observation, dtype=float), np.asarray(s.action_mask, dtype=bool), greedy=True)
        act = ACTIONS[a]
        if act == STOP:
            break
        evals += 1
        c = s.candidates.get(act)
        if c is not None and c < cycles:
            cycles = c
        if act != s.action or c is None:
            break
    return 100.0 * (1 - cycles / base), evals


def group_of(kernel: str, groups: dict) -> str:
    return groups.get(kernel, "outside-the-corpus")


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
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]  # None: NaN in the JSON
    return statistics.fmean(xs) if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--json", default=None)
    ap.add_argument("--top-k", type=int, default=None, help="override the ranker's own (tuned on its training groups)")
    ap.add_argument("--threshold", type=float, default=None, help="override the ranker's own")
    ap.add_argument("--max-groups", type=int, default=None, help="hold out only the first N groups (by size)")
    ap.add_argument("--max-iter", type=int, default=40, help="boosting iterations per ranker")
    ap.add_argument("--tune-iter", type=int, default=15, help="boosting iterations per tuning fold")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="training-group counts of the learning curve "
                    "(all-but-one is always run); '' for all-but-one only")
    ap.add_argument("--orders", type=int, default=ORDERS)
    ap.add_argument("--groups", default=None, help="hold out only these groups (comma-separated; to split a run "
                    "over processes, then --merge their --json files)")
    ap.add_argument("--train-extra", nargs="+", default=[], metavar="FILE",
                    help="more trajectories added to every ranker's training (their held-out group's kernels "
                         "left out), never held out themselves (e.g. another reward's)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON", help="print one report from these --json files")
    ap.add_argument("--policy", default=None, help="also replay this committed policy (name or checkpoint; torch)")
    ap.add_argument("--seed", type=int, default=0, help="added to every ranker's training seed (its tuning folds and "
                    "trees): the spread over seeds says how stable a result is")
    ap.add_argument("--draws", type=int, default=DRAWS, help="draws averaged per replay of a random choice")
    ap.add_argument("--show-states", action="store_true", help="list, at every held-out state whose best gains >= "
                    "0.1%%, the all-but-one ranker's 3 first actions and where the best candidate ranks")
    args = ap.parse_args(argv)
    policy = load_rl_policy(args.policy) if args.policy else None
    if args.merge:
        doc = merge([json.loads(Path(f).read_text()) for f in args.merge])
        print(doc.get("header", ""))
        _print(doc)
        if args.json:
            dump_json(doc, args.json)
        return 0
    from ptxopt.kernels.corpus import load_manifest

    files = args.files or sorted(str(p) for p in (ROOT / "corpus" / "trajectories").glob("*.jsonl"))
    eps, models = load_episodes(files)
    groups = {k.id: k.group for k in load_manifest()}
    by_group: dict[str, list] = {}
    for ep in eps:
        by_group.setdefault(group_of(ep[0].kernel, groups), []).append(ep)
    names = sorted(by_group, key=lambda g: (-len(by_group[g]), g))
    extra_eps, extra_models = load_episodes(args.train_extra) if args.train_extra else ([], {})
    held_kernels = {ep[0].kernel for ep in eps}
    extra_by_group: dict[str, list] = {}
    for ep in extra_eps:
        if ep[0].kernel not in held_kernels:
            extra_by_group.setdefault(group_of(ep[0].kernel, groups), []).append(ep)
    header = (f"trajectories: {len(eps)} greedy episodes from {len(files)} file(s); rewards (model, objective): "
              + "; ".join(f"{m} / {o}: {n} steps" for (m, o), n in sorted(models.items())) + "\n"
              "all cycle figures are sim ESTIMATES; guided figures are REPLAYS of greedy trajectories (a lower "
              "bound on guided's gain, see the module doc)\n"
              + (f"training also on {sum(map(len, extra_by_group.values()))} episodes of {args.train_extra} "
                 "(rewards: " + "; ".join(f"{m} / {o}: {n} steps" for (m, o), n in sorted(extra_models.items()))
                 + "), never those of the held-out group\n" if args.train_extra else ""))
    print(header)
    held = names[: args.max_groups] if args.max_groups else names
    if args.groups:
        held = [g for g in names if g in args.groups.split(",")]
    sizes_req = [int(x) for x in args.sizes.split(",") if x.strip()]
    all_actions = sorted({a for ep in eps + extra_eps for s in ep for a in s.candidates})
    doc = {"header": header, "files": files, "reward_models": [list(k) + [n] for k, n in models.items()], "groups": {},
           "max_iter": args.max_iter, "tune_iter": args.tune_iter}
    t_train = t_score = 0.0
    n_train = 0
    for g in held:
        test = by_group[g]
        others = [o for o in names + sorted(set(extra_by_group) - set(names)) if o != g]
        if not others:
            continue
        gre = [greedy_of(ep) for ep in test]
        row = {"kernels": len(test), "greedy_gains_1pct": sum(1 for x, _ in gre if x >= 1.0),
               "greedy": {"gain": mean([x for x, _ in gre]), "evals": mean([e for _, e in gre])}}
        sizes = sorted({min(n, len(others)) for n in sizes_req} | {len(others)})
        row["curve"] = {}
        test_steps = [s for ep in test for s in ep]
        for n in sizes:
            runs = []
            for order in range(args.orders if n < len(others) else 1):
                perm = list(np.random.default_rng(1000 * order + n).permutation(others))[:n]
                train_steps = [s for o in perm for ep in by_group.get(o, []) + extra_by_group.get(o, []) for s in ep]
                t = time.perf_counter()
                try:
                    rk = train_tuned(train_steps, groups, actions=all_actions, max_iter=args.max_iter, seed=order + args.seed,
                                     tune_iter=args.tune_iter, top_k=args.top_k, threshold=args.threshold)
                except ValueError as e:  # nothing to train on; counted and printed, never silently dropped
                    doc.setdefault("train_failures", []).append(f"{g}, {n} groups, order {order}: {e}")
                    continue
                t_train += time.perf_counter() - t
                n_train += 1
                t = time.perf_counter()
                scored = score_steps(rk, test_steps)
                rep = [replay_mean(scored, ep, top_k=rk.top_k, threshold=rk.threshold, known=rk.actions,
                                   explore=rk.explore, seeds=args.draws) for ep in test]
                h, m = recall(scored, test)
                hg, mg = recall(scored, test, min_gain=NEAR_BEST)
                t_score += time.perf_counter() - t
                train_eps = [ep for o in perm for ep in by_group.get(o, []) + extra_by_group.get(o, [])]
                fixed = fixed_passes(train_eps)
                fx = [fixed_on(ep, fixed[:1]) for ep in test]
                fx2 = [fixed_on(ep, fixed[:2]) for ep in test]
                runs.append({"train_groups": perm, "order": rk.trained_on.get("order_model"), "top_k": rk.top_k,
                             "explore": rk.explore,
                             "threshold": rk.threshold,
                             "gain": mean([x for x, _ in rep]), "evals": mean([e for _, e in rep]),
                             "recall3": h / m if m else float("nan"), "states": m,
                             "recall3_gain": hg / mg if mg else float("nan"), "states_gain": mg,
                             "fixed": {"pass": fixed[:1], "gain": mean(fx)},
                             "fixed_plus_one": {"passes": fixed[:2], "gain": mean(fx2)}})
                if n == len(others) and args.show_states:
                    row["states"] = ranked_states(scored, test, rk)
                if n == len(others):
                    # random at the same per-step budget (top_k + explore actions, all random), never stopping
                    # on a prediction; the scores are ignored at top_k 0
                    rrep = [replay_mean(scored, ep, top_k=0, threshold=-math.inf, explore=rk.top_k + rk.explore,
                                        seeds=args.draws) for ep in test]
                    # the same two without the order rules (ABLATIONS): no pass rule; neither rule
                    ablated = {}
                    for name, rules in ABLATIONS.items():
                        ablated[f"guided_{name}"] = [
                            replay_mean(scored, ep, top_k=rk.top_k, threshold=rk.threshold, known=rk.actions,
                                        explore=rk.explore, seeds=args.draws, **rules) for ep in test]
                        ablated[f"random_{name}"] = [
                            replay_mean(scored, ep, top_k=0, threshold=-math.inf, explore=rk.top_k + rk.explore,
                                        seeds=args.draws, **rules) for ep in test]
                        ablated[f"hits_{name}"] = list(recall(scored, test, **rules))
                    rh, rm = recall(None, test)
                    rhg, rmg = recall(None, test, min_gain=NEAR_BEST)
                    row["random_ranker"] = {"gain": mean([x for x, _ in rrep]), "evals": mean([e for _, e in rrep]),
                                            "recall3": rh / rm if rm else float("nan"),
                                            "recall3_gain": rhg / rmg if rmg else float("nan"),
                                            "budget": rk.top_k + rk.explore}
                    row["per_kernel"] = {"greedy": gre, "guided": rep, "random": rrep, "fixed": fx,
                                         **ablated,
                                         "fixed_plus_one": fx2, "hits": [h, m], "random_hits": [rh, rm],
                                         "hits_gain": [hg, mg], "random_hits_gain": [rhg, rmg]}
                    if policy is not None:
                        pol = [policy_replay(policy, ep) for ep in test]
                        row["policy"] = {"gain": mean([x for x, _ in pol]), "evals": mean([e for _, e in pol])}
                        row["per_kernel"]["policy"] = pol
            if runs:
                row["curve"]["all-but-one" if n == len(others) else str(n)] = runs
        doc["groups"][g] = row
        last = row["curve"]["all-but-one"][0] if row["curve"] else {}
        print(f"held out {g}: {len(test)} kernels, greedy {_f(row['greedy']['gain'])}% / "
              f"{_f(row['greedy']['evals'], 1)} evals, guided {_f(last.get('gain'))}% / {_f(last.get('evals'), 1)}",
              file=sys.stderr, flush=True)
    doc["train_s"], doc["score_s"], doc["rankers_trained"] = t_train, t_score, n_train
    _print(doc)
    if args.json:
        dump_json(doc, args.json)
    return 0


def ranked_states(scored, test, rk) -> list[str]:
    """One line per held-out state whose best candidate gains >= 0.1%: the ranker's 3 first actions (guided
    search's order: score, then predicted option value, then the order rules; true gain % beside each) and the
    best candidate's rank."""
    from ptxopt.search.guided import order
    from ptxopt.search.ranker_replay import _Move, classes_of, kinds_of

    out = []
    for ep in test:
        for s in ep:
            true = {a: 100.0 * (1 - c / s.cycles_before) for a, c in s.candidates.items() if c is not None}
            if not true or max(true.values()) < 100 * NEAR_BEST:
                continue
            sc, gn = scored[id(s)]
            ranked = [m.action for m in order([_Move(a) for a in sc], sc, gn, np.random.default_rng(0),
                                              classes_of(s), kinds_of(s))]
            top = max(true.values())
            near = [a for a in ranked if true.get(a, -math.inf) >= top - 100 * NEAR_BEST]  # within 0.1%: hits
            first = ", ".join(f"{a} ({true[a]:+.1f}%)" if a in true else f"{a} (failed)" for a in ranked[:3])
            out.append(f"{s.kernel} step {s.step}: first {first}; best {near[0]} ({true[near[0]]:+.1f}%"
                       + (f", {len(near)} within 0.1%" if len(near) > 1 else "") + f") ranked "
                       f"{ranked.index(near[0]) + 1} of {len(ranked)} (k={rk.top_k}+{rk.explore})")
    return out


#: The order rules turned off in the headline's extra rows (keyword arguments of ``replay_mean``/``recall``).
ABLATIONS = {"no_pass_rule": {"kinds": False}, "no_rules": {"kinds": False, "classes": False}}
ABLATION_NAMES = {"no_pass_rule": "a pass's variants in the ranker's order (no pass rule)",
                  "no_rules": "no pass rule and every register directive measured on its own"}


def _f(x, d=2):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def pooled_of(doc) -> dict:
    """Every kernel once, in its held-out group, under the all-but-one ranker."""
    pk = [r["per_kernel"] for r in doc["groups"].values() if "per_kernel" in r]
    cat = {k: [x for p in pk for x in p.get(k, [])]
           for k in ("greedy", "guided", "random", "fixed", "fixed_plus_one", "policy",
                     *(f"{s}_{a}" for a in ABLATIONS for s in ("guided", "random")))}

    def ratio(key):
        h = [sum(p[key][i] for p in pk if key in p) for i in (0, 1)]
        return (h[0] / h[1] if h[1] else float("nan")), h[1]

    out = {"kernels": len(cat["greedy"]),
           "greedy_gain": mean([x for x, _ in cat["greedy"]]), "greedy_evals": mean([e for _, e in cat["greedy"]]),
           "greedy_kernels_1pct": sum(1 for x, _ in cat["greedy"] if x >= 1.0),
           "guided_gain": mean([x for x, _ in cat["guided"]]), "guided_evals": mean([e for _, e in cat["guided"]]),
           "random_gain": mean([x for x, _ in cat["random"]]), "random_evals": mean([e for _, e in cat["random"]]),
           "fixed_gain": mean(cat["fixed"]), "fixed_plus_one_gain": mean(cat["fixed_plus_one"])}
    for k in (f"{s}_{a}" for a in ABLATIONS for s in ("guided", "random")):
        if cat[k]:
            out[f"{k}_gain"], out[f"{k}_evals"] = mean([x for x, _ in cat[k]]), mean([e for _, e in cat[k]])
    if cat["policy"]:
        out.update(policy_gain=mean([x for x, _ in cat["policy"]]), policy_evals=mean([e for _, e in cat["policy"]]))
    shares = [(mean([x for x, _ in p["guided"]]) / g, mean([x for x, _ in p["random"]]) / g)
              for p in pk if (g := mean([x for x, _ in p["greedy"]])) and g > 0.05]
    out["groups_gaining"] = len(shares)  # held-out groups where greedy gains > 0.05% on average
    out["guided_share_per_group"] = mean([a for a, _ in shares])
    out["random_share_per_group"] = mean([b for _, b in shares])
    out["recall3"], out["recall_states"] = ratio("hits")
    out["random_recall3"], _ = ratio("random_hits")
    for a in ABLATIONS:
        if all(f"hits_{a}" in p for p in pk):
            out[f"recall3_{a}"], _ = ratio(f"hits_{a}")
    out["recall3_gain"], out["recall_states_gain"] = ratio("hits_gain")
    out["random_recall3_gain"], _ = ratio("random_hits_gain")
    return out


def merge(docs: list[dict]) -> dict:
    """One report from several runs over disjoint held-out groups (``--groups`` in parallel processes)."""
    out = dict(docs[0])
    out["groups"] = {g: r for d in docs for g, r in d["groups"].items()}
    for k in ("train_s", "score_s", "rankers_trained"):
        out[k] = sum(d.get(k, 0) for d in docs)
    out["train_failures"] = [x for d in docs for x in d.get("train_failures", [])]
    return out


def _print(doc) -> None:
    p = doc["pooled"] = pooled_of(doc)
    curve: dict[str, list] = {}
    for r in doc["groups"].values():
        for n, runs in r["curve"].items():
            curve.setdefault(n, []).extend(
                (x["gain"], x["evals"], x["recall3"], r["greedy"]["gain"], r["greedy"]["evals"], x["fixed"]["gain"],
                 x["fixed_plus_one"]["gain"]) for x in runs)
    if p.get("kernels"):
        gg, ge = p["greedy_gain"], p["greedy_evals"]
        print("## Headline: every kernel once in a held-out group (all-but-one training groups; REPLAY)\n")
        print("| strategy | mean gain % | evaluations / kernel | gain vs greedy | evals vs greedy |")
        print("|---|---|---|---|---|")
        rows = [("greedy", "greedy_gain", "greedy_evals"), ("guided (replay)", "guided_gain", "guided_evals"),
                ("random order, same actions per step (replay)", "random_gain", "random_evals"),
                *((f"{who}, {ABLATION_NAMES[a]}", f"{who}_{a}_gain", f"{who}_{a}_evals")
                  for a in ABLATIONS for who in ("guided", "random"))]
        for name, gk, ek in (r for r in rows if r[1] in p):
            print(f"| {name} | {_f(p[gk])} | {_f(p[ek], 1)} | {_f(100 * p[gk] / gg if gg else math.nan, 0)}% | "
                  f"{_f(100 * p[ek] / ge if ge else math.nan, 0)}% |")
        if "policy_gain" in p:
            print(f"| committed policy (greedy-decoded, replay) | {_f(p['policy_gain'])} | {_f(p['policy_evals'], 1)} | "
                  f"{_f(100 * p['policy_gain'] / gg if gg else math.nan, 0)}% | "
                  f"{_f(100 * p['policy_evals'] / ge if ge else math.nan, 0)}% |")
        print(f"| best fixed pass (training groups) | {_f(p['fixed_gain'])} | 2 (baseline + 1) | "
              f"{_f(100 * p['fixed_gain'] / gg if gg else math.nan, 0)}% | {_f(200 / ge if ge else math.nan, 0)}% |")
        print(f"| that pass + 1 measured alternative | {_f(p['fixed_plus_one_gain'])} | 3 | "
              f"{_f(100 * p['fixed_plus_one_gain'] / gg if gg else math.nan, 0)}% | {_f(300 / ge if ge else math.nan, 0)}% |")
        print(f"\n{p['greedy_kernels_1pct']} of {p['kernels']} kernels gain >= 1% under greedy. The mean above weighs "
              "groups by their gain (the group that gains most decides it); per held-out group where greedy gains "
              f"(> 0.05% on average, {p.get('groups_gaining', 0)} groups), guided gets "
              f"{_f(100 * p.get('guided_share_per_group', math.nan), 0)}% of greedy's gain on average, random at the "
              f"same budget {_f(100 * p.get('random_share_per_group', math.nan), 0)}%.\n")
        print(f"top-3 recall over {p['recall_states']} greedy states that did not stop: {_f(p['recall3'])} "
              f"(random ranker, expected: {_f(p['random_recall3'])}); over the {p['recall_states_gain']} of them "
              f"whose best gains >= 0.1%: {_f(p['recall3_gain'])} (random: {_f(p['random_recall3_gain'])})"
              + "".join(f"; {ABLATION_NAMES[a]}: {_f(p[f'recall3_{a}'])}" for a in ABLATIONS if f"recall3_{a}" in p)
              + "\n")
    print("## Baselines per held-out group (ranker trained on all other groups; gain % of baseline cycles, ESTIMATE)\n")
    print("| held-out group | kernels | greedy >=1% | greedy gain / evals | guided gain / evals | "
          "random order (same budget) gain / evals | fixed pass gain (1 eval) | fixed + 1 alt gain (2 evals) | policy gain / evals | "
          "recall@3 | random recall@3 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for g, r in doc["groups"].items():
        if not r["curve"]:
            continue
        last = r["curve"]["all-but-one"][0]
        rr, pol = r.get("random_ranker", {}), r.get("policy", {})
        print(f"| {g} | {r['kernels']} | {r['greedy_gains_1pct']} | {_f(r['greedy']['gain'])} / {_f(r['greedy']['evals'], 1)} | "
              f"{_f(last['gain'])} / {_f(last['evals'], 1)} ({last.get('order') or '?'}, k={last['top_k']}+{last.get('explore', 1)}, "
              f"t={_t(last['threshold'])}) | "
              f"{_f(rr.get('gain'))} / {_f(rr.get('evals'), 1)} | {_f(last['fixed']['gain'])} ({','.join(last['fixed']['pass'])}) | "
              f"{_f(last['fixed_plus_one']['gain'])} | {_f(pol.get('gain'))} / {_f(pol.get('evals'), 1)} | "
              f"{_f(last['recall3'])} | {_f(rr.get('recall3'))} |")
    print("\n## Learning curve (mean over held-out groups and orders)\n")
    print("| training groups | runs | guided gain % | guided evals | greedy gain % | greedy evals | "
          "gain vs greedy | evals vs greedy | recall@3 | fixed pass gain % | fixed + 1 alt gain % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sorted(curve, key=lambda k: (k == "all-but-one", int(k) if k.isdigit() else 0)):
        rs = curve[n]
        gg, ge = mean([r[3] for r in rs]), mean([r[4] for r in rs])
        g, e = mean([r[0] for r in rs]), mean([r[1] for r in rs])
        print(f"| {n} | {len(rs)} | {_f(g)} | {_f(e, 1)} | {_f(gg)} | {_f(ge, 1)} | "
              f"{_f(100 * g / gg if gg else float('nan'), 0)}% | {_f(100 * e / ge if ge else float('nan'), 0)}% | "
              f"{_f(mean([r[2] for r in rs]))} | {_f(mean([r[5] for r in rs]))} | {_f(mean([r[6] for r in rs]))} |")
    if doc.get("train_failures"):
        print(f"\n{len(doc['train_failures'])} ranker(s) could not be trained (their runs are missing above): "
              + "; ".join(doc["train_failures"]))
    shown = {g: r["states"] for g, r in doc["groups"].items() if r.get("states")}
    if shown:
        print("\n## What each held-out group's ranker orders first at its states that gain >= 0.1% (true gain %, "
              "ESTIMATE)\n")
        for g, lines in shown.items():
            for line in lines:
                print(f"- {g}: {line}")
    print(f"\nranker time: {doc['rankers_trained']} rankers trained in {doc['train_s']:.1f} s (each: tuning folds + "
          f"order and gain models), scoring (replay + recall) {doc['score_s']:.1f} s; "
          "ptxas calls = evaluations on a cold cache (replay runs none)")


if __name__ == "__main__":
    sys.exit(main())
