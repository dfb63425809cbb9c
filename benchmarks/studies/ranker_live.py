"""Guided search LIVE (ptxas and the sim, no replay) against greedy and random at guided's budget.

The replay report (``ranker_report.py``) holds out template groups of the
corpus and replays recorded greedy trajectories (a lower bound on guided's
gain). This script runs the real searches on kernels the ranker never saw --
by default the kernels written outside the corpus
(``benchmarks/outside_kernels``, their contracts' performance launches):

1. ``greedy`` (every legal action measured at every step);
2. ``guided --policy RANKER``;
3. ``random --budget N``, N = guided's evaluations per kernel, rounded up
   (random at equal budget; it needs guided's result);

each on its own fresh evaluation cache (so each one's ptxas calls and wall
time are its own), with ``--min-improvement 0`` (the raw estimate, as the
trajectories hold it) and ``--json-out`` into the work folder; ``--only``
runs some of them and keeps the others' results from an earlier run (a
greedy run does not depend on the ranker). Gains are computed from each
kernel's baseline and best cycles (sim ESTIMATES). Evaluations are counted
as ``search`` counts them; ptxas calls are evaluations minus cache hits.

Usage (nice it on a shared machine)::

    nice -n 10 python benchmarks/studies/ranker_live.py [TARGET] [--policy greedy_sim_sm_89] [-j 2]
        [--work runs/live] [--only greedy,guided,random] [--md OUT.md] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def search(target: str, work: Path, name: str, args: list[str], workers: int) -> dict:
    out = work / f"{name}.json"
    cache = work / f"{name}.sqlite"
    for old in work.glob(f"{name}.sqlite*"):
        old.unlink()
    cmd = [sys.executable, "-c", "import sys; from ptxopt.cli import main; sys.argv[0] = 'ptxopt'; main()",
           "search", target, "--backend", "sim", "--cache", str(cache), "-j", str(workers), "-q",
           "--min-improvement", "0", "--json-out", str(out), *args]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode not in (0, 1) or not out.exists():
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        raise SystemExit(f"{name}: ptxopt search exited {r.returncode}")
    doc = json.loads(out.read_text())
    doc["wall_total_s"] = wall
    doc["command"] = args
    out.write_text(json.dumps(doc, indent=1, default=str))
    print(f"{name}: {wall:.0f} s", file=sys.stderr, flush=True)
    return doc


def earlier(work: Path, name: str, args: list[str]) -> dict:
    """The result of an earlier run of ``name`` with the same command, from the work folder."""
    out = work / f"{name}.json"
    if not out.exists():
        raise SystemExit(f"{name}: no earlier result in {work} (run it: --only {name})")
    doc = json.loads(out.read_text())
    if doc.get("command") != args:
        raise SystemExit(f"{out}: an earlier run of {doc.get('command')}, not {args}: rerun it (--only {name})")
    return doc


def gain(k: dict) -> float | None:
    b, a = k.get("baseline_cycles"), k.get("best_cycles")
    if not b or a is None or k.get("error"):
        return None
    return 100.0 * (1.0 - min(a, b) / b)


def per_kernel(doc: dict) -> dict[str, dict]:
    return {Path(k["kernel"]).stem: {"gain": gain(k), "baseline": k.get("baseline_cycles"),
                                     "evals": k.get("evaluations", 0),
                                     "ptxas": k.get("evaluations", 0) - k.get("cache_hits", 0),
                                     "pipeline": k.get("pipeline") or "", "error": k.get("error")}
            for k in doc["kernels"]}


def table(runs: dict[str, dict]) -> str:
    names = list(runs)
    rows = {n: per_kernel(d) for n, d in runs.items()}
    kernels = sorted(set.intersection(*(set(r) for r in rows.values())))
    ok = [k for k in kernels if all(rows[n][k]["gain"] is not None for n in names)]
    g_gain = sum(rows["greedy"][k]["gain"] for k in ok) / len(ok) if ok else math.nan
    g_evals = sum(rows["greedy"][k]["evals"] for k in ok) / len(ok) if ok else math.nan
    lines = ["| strategy | mean gain % | vs greedy | evaluations / kernel | vs greedy | ptxas calls | wall (s) | "
             "kernels gaining >= 1% |", "|---|---|---|---|---|---|---|---|"]
    for n in names:
        gm = sum(rows[n][k]["gain"] for k in ok) / len(ok) if ok else math.nan
        em = sum(rows[n][k]["evals"] for k in ok) / len(ok) if ok else math.nan
        vs = f"{100 * gm / g_gain:.0f}%" if g_gain else "-"
        lines.append(f"| {n} | {gm:.2f} | {vs} | {em:.1f} | "
                     f"{100 * em / g_evals if g_evals else math.nan:.0f}% | {sum(rows[n][k]['ptxas'] for k in ok)} | "
                     f"{runs[n]['wall_total_s']:.0f} | {sum(1 for k in ok if rows[n][k]['gain'] >= 1.0)} |")
    lines += ["", f"{len(ok)} kernels with a result under every strategy"
              + (f"; left out (an error under one of them): {', '.join(sorted(set(kernels) - set(ok)))}"
                 if set(kernels) - set(ok) else ""), "",
              "| kernel | " + " | ".join(f"{n} gain % / evals" for n in names) + " | greedy's pipeline | guided's pipeline |",
              "|---|" + "---|" * (len(names) + 2)]
    for k in ok:
        lines.append(f"| {k} | " + " | ".join(f"{rows[n][k]['gain']:.2f} / {rows[n][k]['evals']}" for n in names)
                     + f" | {rows['greedy'][k]['pipeline'] or '-'} | {rows['guided'][k]['pipeline'] or '-'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", nargs="?", default=str(ROOT / "benchmarks" / "outside_kernels"))
    ap.add_argument("--policy", default="greedy_sim_sm_89", help="the ranker (a committed name or a file)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "runs" / "live"))
    ap.add_argument("--only", default="greedy,guided,random", help="the strategies to run now; the others' results "
                    "come from an earlier run in --work")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    if only - {"greedy", "guided", "random"}:
        ap.error(f"--only: greedy, guided, random (not {', '.join(sorted(only - {'greedy', 'guided', 'random'}))})")

    def run(name, cmd):
        return search(args.target, work, name, cmd, args.workers) if name in only else earlier(work, name, cmd)

    greedy = run("greedy", ["--strategy", "greedy"])
    guided = run("guided", ["--strategy", "guided", "--policy", args.policy])
    evals = [k.get("evaluations", 0) for k in guided["kernels"]]
    budget = math.ceil(sum(evals) / max(1, len(evals)))
    rand = run("random", ["--strategy", "random", "--budget", str(budget)])
    runs = {"guided": guided, f"random --budget {budget}": rand, "greedy": greedy}
    text = table(runs)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({n: per_kernel(d) | {"_wall_s": d["wall_total_s"]}
                                               for n, d in runs.items()}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
