"""Guided search LIVE on held-out template groups: what the replay's lower bound leaves out.

``ranker_report.py`` replays guided search on recorded greedy trajectories;
a replay ends where guided keeps an action other than greedy's (the states
after it were never measured), so its gains are a LOWER BOUND. This script
runs the real search instead, on the same held-out groups:

1. for each template group of the trajectory file, a ranker trained and
   tuned on every OTHER group (:func:`ptxopt.search.ranker_replay.train_tuned`,
   the report's settings: the same ranker as its all-but-one row);
2. ``ptxopt search GROUP_KERNELS --strategy guided --policy THAT_RANKER`` on
   the group's recorded kernels, under their default objectives, with the
   recording's own evaluation cache copied into the work folder (its
   measurements are the recorded greedy's, on the same reward: a state on
   greedy's path costs no ptxas call; one off it does);
   Only kernels where greedy took a step are searched live: where greedy
   stopped at the root no root candidate beats the baseline, guided measures
   a subset of them there and stops too, so its replay (gain 0, the root's
   evaluations) is exact;
3. greedy's gain and evaluations from the recorded trajectory (the same
   search on the same reward: what ``search --strategy greedy`` counts).

Evaluations are counted as ``search`` counts them (cache hits included: the
cache only saves time); ptxas calls are evaluations minus cache hits: the
off-path work, plus the path of any kernel recorded under other evaluator
code (the cache key holds its digest). Gains are sim ESTIMATES.

Usage (nice it on a shared machine; RECORD_CACHE: the recording's cache,
``runs/record/<reward>/cache`` after ``record_trajectories.py``)::

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/studies/ranker_live_groups.py FILE RECORD_CACHE
        [--groups a,b] [--new-since OLD] [--work runs/live_groups] [-j 2] [--md OUT.md] [--json OUT.json]
    ... --random-after OUT.json --work SAME_WORK [--md RANDOM.md]   # then random at guided's budget
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))

from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.search.actions import STOP  # noqa: E402
from ptxopt.search import ranker_replay as rr  # noqa: E402
from ptxopt.search.trajectory import read_jsonl  # noqa: E402
from ranker_fresh import by_group  # noqa: E402
from ranker_live import per_kernel, search  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="greedy trajectories (corpus/trajectories/...jsonl)")
    ap.add_argument("cache", help="the evaluation cache the recording wrote (runs/record/cache)")
    ap.add_argument("--groups", default=None, help="held-out groups to run (default: every group of FILE)")
    ap.add_argument("--new-since", default=None, metavar="OLD",
                    help="hold out only the kernels FILE holds and OLD (an earlier recording) does not: kernels "
                         "recorded after a design was fixed; the rankers still train on every other group")
    ap.add_argument("--work", default=str(ROOT / "runs" / "live_groups"))
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=40, help="boosting iterations per ranker (the report's)")
    ap.add_argument("--tune-iter", type=int, default=15, help="boosting iterations per tuning fold (the report's)")
    ap.add_argument("--random-after", default=None, metavar="JSON",
                    help="search nothing guided: read an earlier run's --json and search the kernels it searched "
                         "live with `random --budget N` (N: guided's evaluations per kernel in that group, rounded "
                         "up), on the same cache; prints the three side by side")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache.sqlite"
    if not cache.exists():  # one copy for every group (their kernels are disjoint), consistent under writers
        for src, dst in ((Path(args.cache), cache), (Path(str(args.cache) + ".moves.sqlite"),
                                                     Path(str(cache) + ".moves.sqlite"))):
            if src.exists():
                with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as a, sqlite3.connect(dst) as b:
                    a.backup(b)

    if args.random_after:
        doc = json.loads(Path(args.random_after).read_text())
        text = random_pass(doc, work, cache, args.workers)
        Path(args.random_after).write_text(json.dumps(doc, indent=1, default=str))
        print(text)
        if args.md:
            Path(args.md).write_text(text + "\n")
        return 0

    groups = {k.id: k.group for k in load_manifest()}
    by = by_group(read_jsonl(args.file), groups)
    actions = sorted({a for es in by.values() for ep in es for s in ep for a in s.candidates})
    held = sorted(by, key=lambda g: (-len(by[g]), g))
    old = {s.kernel for s in read_jsonl(args.new_since)} if args.new_since else set()
    if args.groups:
        held = [g for g in held if g in args.groups.split(",")]
    doc = {"file": args.file, "groups": {}}
    for g in held:
        test = [ep for ep in by[g] if ep[0].kernel not in old]
        if not test:
            continue
        # greedy stopped at the root: no root candidate beats the baseline, so guided (which measures a subset of
        # them there and never goes past a root where nothing gains) stops too -- its replay is exact
        kernels = [ep[0].kernel for ep in test if ep[0].action != STOP]
        t = time.perf_counter()
        rk = rr.train_tuned([s for o, es in by.items() if o != g for ep in es for s in ep], groups, actions=actions,
                            max_iter=args.max_iter, tune_iter=args.tune_iter)
        train_s = time.perf_counter() - t
        path = work / f"ranker_{g}.json"
        rk.save(path)
        out = search(",".join(kernels), work, f"guided_{g}",
                     ["--strategy", "guided", "--policy", str(path), "--cache", str(cache)], args.workers) \
            if kernels else {"kernels": [], "wall_total_s": 0.0}
        live = per_kernel(out)
        scored = rr.score_steps(rk, [s for ep in test for s in ep])
        rows = {}
        for ep in test:
            k = ep[0].kernel
            ge, gv = rr.greedy_of(ep)
            if k in kernels:
                lv = live.get(k, {})
                base = lv.get("baseline")
                lv["baseline_matches_recording"] = base is not None and abs(base - ep[0].cycles_before) <= \
                    1e-9 * ep[0].cycles_before
            else:
                gain, evals = rr.replay_mean(scored, ep, top_k=rk.top_k, threshold=rk.threshold, known=rk.actions,
                                             explore=rk.explore, seeds=1)
                lv = {"gain": gain, "evals": evals, "ptxas": 0, "pipeline": "", "replayed": True}
            rows[k] = {"greedy_gain": ge, "greedy_evals": gv, "gain": lv.get("gain"), "evals": lv.get("evals"),
                       "ptxas": lv.get("ptxas"), "pipeline": lv.get("pipeline"), "error": lv.get("error"),
                       "greedy_pipeline": ",".join(s.action for s in ep if s.action != STOP),
                       "replayed": lv.get("replayed", False),
                       "baseline_matches_recording": lv.get("baseline_matches_recording")}
        doc["groups"][g] = {"ranker": {"order": rk.trained_on.get("order_model"), "top_k": rk.top_k,
                                       "explore": rk.explore,
                                       "threshold": rk.threshold if math.isfinite(rk.threshold) else None},
                            "train_s": train_s, "search_s": out["wall_total_s"], "kernels": rows}
        print(f"{g}: trained {train_s:.0f} s, searched {out['wall_total_s']:.0f} s", file=sys.stderr, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1, default=str))
    text = table(doc)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    return 0


def random_pass(doc: dict, work: Path, cache: Path, workers: int) -> str:
    """Random search at guided's budget on the kernels ``doc`` searched live (greedy took a step there), per
    group; its gain and evaluations go into each row (``random_gain``, ``random_evals``). Returns the table."""
    lines = ["| held-out group | kernels searched live | greedy gain / evals | guided LIVE gain / evals | "
             "random LIVE gain / evals (budget) |", "|---|---|---|---|---|"]
    tot = dict.fromkeys(("gg", "ge", "g", "e", "r", "re", "n"), 0.0)
    for g, row in doc["groups"].items():
        ks = {k: r for k, r in row["kernels"].items() if not r.get("replayed") and r["gain"] is not None}
        if not ks:
            continue
        budget = math.ceil(sum(r["evals"] for r in ks.values()) / len(ks))
        out = search(",".join(ks), work, f"random_{g}", ["--strategy", "random", "--budget", str(budget),
                                                         "--cache", str(cache)], workers)
        got = per_kernel(out)
        for k, r in ks.items():
            r["random_gain"], r["random_evals"] = got.get(k, {}).get("gain"), got.get(k, {}).get("evals")
        ok = [r for r in ks.values() if r.get("random_gain") is not None]
        n = len(ok)
        vals = (sum(max(0.0, r["greedy_gain"]) for r in ok), sum(r["greedy_evals"] for r in ok),
                sum(r["gain"] for r in ok), sum(r["evals"] for r in ok), sum(r["random_gain"] for r in ok),
                sum(r["random_evals"] for r in ok), n)
        for key, v in zip(tot, vals):
            tot[key] += v
        row["random_budget"] = budget
        lines.append(f"| {g} | {n} | {vals[0] / n:.2f} / {vals[1] / n:.1f} | {vals[2] / n:.2f} / {vals[3] / n:.1f} | "
                     f"{vals[4] / n:.2f} / {vals[5] / n:.1f} ({budget}) |")
    n = tot["n"] or 1
    share = (lambda x: f"{100 * x / tot['gg']:.0f}%") if tot["gg"] > 0 else (lambda x: "-")
    lines.append(f"| **all** | {int(tot['n'])} | {tot['gg'] / n:.2f} / {tot['ge'] / n:.1f} | "
                 f"{tot['g'] / n:.2f} / {tot['e'] / n:.1f} ({share(tot['g'])}) | "
                 f"{tot['r'] / n:.2f} / {tot['re'] / n:.1f} ({share(tot['r'])}) |")
    return "\n".join(lines)


def table(doc: dict) -> str:
    """Pooled and per-group rows: greedy (recorded) vs guided (live), gains as share of greedy's."""
    lines = ["| held-out group | kernels | greedy >= 1% | greedy gain / evals | guided LIVE gain / evals | ptxas calls "
             "(cache misses) | gain vs greedy | evals vs greedy | ranker |",
             "|---|---|---|---|---|---|---|---|---|"]
    tot = dict.fromkeys(("gg", "ge", "g", "e", "p", "n", "n1"), 0.0)
    failed = []
    per_group_share = []
    for g, row in doc["groups"].items():
        ks = [r for r in row["kernels"].values() if r["gain"] is not None]
        failed += [k for k, r in row["kernels"].items() if r["gain"] is None]
        if not ks:
            continue
        gg = sum(max(0.0, r["greedy_gain"]) for r in ks)
        ge = sum(r["greedy_evals"] for r in ks)
        gl = sum(r["gain"] for r in ks)
        el = sum(r["evals"] for r in ks)
        p = sum(r["ptxas"] for r in ks)
        n1 = sum(1 for r in ks if r["greedy_gain"] >= 1.0)
        n = len(ks)
        for key, v in zip(tot, (gg, ge, gl, el, p, n, n1)):
            tot[key] += v
        if gg / n > 0.05:
            per_group_share.append(gl / gg)
        rk = row["ranker"]
        lines.append(f"| {g} | {n} | {n1} | {gg / n:.2f} / {ge / n:.1f} | {gl / n:.2f} / {el / n:.1f} | {p} | "
                     + (f"{100 * gl / gg:.0f}%" if gg > 0 else "-") + f" | {100 * el / ge:.0f}% | "
                     f"{rk['order']}, k={rk['top_k']}+{rk['explore']} |")
    if not tot["n"]:
        return ("No kernel held out (every kernel of the groups asked for is in --new-since's file, or none has "
                "a result).")
    n = tot["n"]
    lines.append(f"| **all** | {int(tot['n'])} | {int(tot['n1'])} | {tot['gg'] / n:.2f} / {tot['ge'] / n:.1f} | "
                 f"{tot['g'] / n:.2f} / {tot['e'] / n:.1f} | {int(tot['p'])} | "
                 + (f"**{100 * tot['g'] / tot['gg']:.0f}%**" if tot["gg"] > 0 else "-")
                 + f" | **{100 * tot['e'] / tot['ge']:.0f}%** | |")
    if per_group_share:
        lines += ["", f"Per held-out group where greedy gains (> 0.05% on average, {len(per_group_share)} groups): "
                  f"guided LIVE gets {100 * sum(per_group_share) / len(per_group_share):.0f}% of greedy's gain on "
                  "average."]
    rows = [r for row in doc["groups"].values() for r in row["kernels"].values()]
    live = [r for r in rows if not r.get("replayed")]
    off = [r for r in live if r.get("baseline_matches_recording") is False]
    lines += ["", f"{len(live)} of {len(rows)} kernels searched live (greedy took a step there); the others' rows are "
              "their exact replay (greedy stopped at the root). Baselines that differ from the recording's: "
              f"{len(off)}."]
    if failed:
        lines += ["", f"No live result (left out of every row): {', '.join(sorted(failed))}"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
