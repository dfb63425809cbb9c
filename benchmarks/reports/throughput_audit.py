"""Audit of every throughput gain: greedy under ``--objective throughput`` over a
stratified sample of the corpus and over kernels written outside it, with the
binding bound before/after and the mechanism of every gain >= 5%.

Why: a reward that a learned policy is trained on must obey the physics of
BRIEF section 6b (traffic conserved, loops and spills counted, no estimate
below the launch's floors).  A gain that comes from a model error -- a
prefetch that erases L2 traffic, a loop counted once -- shows up here as a
large gain whose binding bound is a bandwidth the pass cannot change.

Sample (a fixed rule, no randomness): the corpus kernels are grouped by their
manifest ``group`` (pointwise, row_reduction, ...); kernels without one by
family kind: ``gemm_tile`` and ``real:<compiler>`` (the hand-written nvcc and
Triton kernels).  From each stratum, sorted by id, the first kernel and the
one in the middle (index n // 2) -- ``--per-group`` of them, evenly spaced.
Then every kernel of ``benchmarks/outside_kernels/`` (written outside the
corpus: transposes, a warp-shuffle reduction, a bit-manipulation kernel, two
register-tiled SGEMMs, a row softmax, a gemv, a strided axpy; each with a
``.contract.json`` whose performance launch gives grid, block and scalars but no
buffer byte counts, as a user writes it).

Per kernel: greedy (``--max-steps``, default 4) under throughput, the gain
(percent of the baseline's cycles), the pipeline, and -- from
``ptxopt explain --json`` before/after the pipeline -- the binding bound
before and after, the bound values, registers, spills and DRAM bytes.  The
``mechanism`` column names the bound whose value fell the most and by how
much (a factual account of what the model credited, to be judged against
BRIEF 6b by a reader).  Every cycle figure is an ESTIMATE of the sim model,
uncalibrated for throughput.

Writes ``benchmarks/results/throughput_audit.md`` and ``.json`` (``--out``
to change the stem; ``--label`` names the run, e.g. ``before``/``after``).
One run takes a few minutes on one core without a cache.

Usage: ``python benchmarks/reports/throughput_audit.py [--label before] [--per-group 2] [--max-steps 4]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "benchmarks" / "outside_kernels"
#: Kernels written outside the corpus (PTX from nvcc 13.0 -O3 -arch=sm_89, sources next to them).
OUTSIDE = tuple(sorted(p.name.split(".")[0] for p in DATA.glob("*.contract.json")))
GAIN_REPORTED = 5.0  # percent: gains at or above it get the before/after bounds and the mechanism


def stratum(spec) -> str:
    """The stratum of a corpus kernel: its manifest group, else gemm_tile / real:<compiler>."""
    if getattr(spec, "group", None):
        return spec.group
    if spec.family == "gemm_tile":
        return "gemm_tile"
    return f"real:{spec.compiler}"


def sample(per_group: int) -> list:
    """``per_group`` kernels per stratum, evenly spaced in id order (index i * n // per_group)."""
    from ptxopt.kernels.corpus import select

    groups: dict[str, list] = defaultdict(list)
    for s in select("all"):
        groups[stratum(s)].append(s)
    out = []
    for g in sorted(groups):
        specs = sorted(groups[g], key=lambda s: s.id)
        picks = sorted({i * len(specs) // per_group for i in range(per_group)})
        out += [specs[i] for i in picks]
    return out


def outside_candidates() -> list:
    """``(Candidate, path)`` of the kernels outside the corpus, with their contracts."""
    from ptxopt.cli.common import with_contract, with_performance
    from ptxopt.evaluate import Candidate

    out = []
    for name in OUTSIDE:
        path = str(DATA / f"{name}.ptx")
        entry = json.loads((DATA / f"{name}.contract.json").read_text())["entry"]
        cand = Candidate(Path(path).read_text(), name=name, entry=entry)
        cand = with_contract(cand, path, {})
        cand = with_performance(cand, path, {})
        out.append((cand, path))
    return out


def explain(target: str, pipeline: str, extra: list[str]) -> dict | None:
    """``ptxopt explain TARGET -p PIPELINE --objective throughput --json`` (the public command,
    so a later run audits whatever the model then is); None when it fails."""
    cmd = [sys.executable, "-m", "ptxopt.cli", "explain", target, "--objective", "throughput", "--json", *extra]
    if pipeline:
        cmd += ["-p", pipeline]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)["kernels"][0]


def mechanism(before: dict, after: dict) -> str:
    """The bound that fell the most (absolute cycles), the binding bounds, registers and spills."""
    bb, ab = before["bounds"], after["bounds"]
    drop = max(bb, key=lambda k: bb[k] - ab.get(k, 0.0))
    parts = [f"{drop} {bb[drop]:,.0f} -> {ab.get(drop, 0):,.0f}"]
    if before["binding"] != after["binding"]:
        parts.append(f"binding {before['binding']} -> {after['binding']}")
    if before["registers"] != after["registers"]:
        parts.append(f"registers {before['registers']} -> {after['registers']}")
    sb = before["spills"]["store_bytes"] + before["spills"]["load_bytes"]
    sa = after["spills"]["store_bytes"] + after["spills"]["load_bytes"]
    if sb != sa:
        parts.append(f"spills {sb} -> {sa} B")
    ob, oa = before.get("occupancy") or {}, after.get("occupancy") or {}
    if ob.get("warps_per_sm") != oa.get("warps_per_sm"):
        parts.append(f"warps/SM {ob.get('warps_per_sm')} -> {oa.get('warps_per_sm')}")
    return "; ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="run", help="what this run is (before/after), stored in the table")
    ap.add_argument("--per-group", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=4)
    ap.add_argument("--cache", default=None, help="evaluator cache (default: none, every figure computed)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "throughput_audit"))
    ap.add_argument("--only", default=None, help="comma list of kernel names (a quick look; not for the table "
                                                 "unless --merge)")
    ap.add_argument("--merge", action="store_true",
                    help="with --only: replace those kernels' rows in the existing --out table (same label)")
    ap.add_argument("--explain-arg", action="append", default=[],
                    help="extra argument for every `ptxopt explain` call (e.g. --explain-arg=--l2=cold)")
    args = ap.parse_args()

    from ptxopt.evaluate import Candidate
    from ptxopt.search import EvalOptions, SearchConfig, search_many

    kernels = [(Candidate.from_corpus(s), stratum(s), f"corpus:{s.id}") for s in sample(args.per_group)]
    kernels += [(c, "outside", p) for c, p in outside_candidates()]
    if args.only:
        keep = set(args.only.split(","))
        kernels = [k for k in kernels if k[0].label in keep]
    options = EvalOptions(backend="sim", cache=args.cache, objective="throughput")
    cfg = SearchConfig("greedy", max_steps=args.max_steps, options=options)
    t0 = time.perf_counter()
    results = search_many([(c, g) for c, g, _ in kernels], cfg, workers=0,
                          on_result=lambda r: print(f"searched {r.kernel}: {r.improvement_pct or 0:.2f}% "
                                                    f"{r.pipeline or '-'}", file=sys.stderr, flush=True))
    search_s = time.perf_counter() - t0
    rows = []
    for (cand, group, target), r in zip(kernels, results):
        gain = r.improvement_pct
        row = {"kernel": cand.label, "group": group, "gain_pct": gain, "pipeline": r.pipeline,
               "baseline_cycles": r.baseline_cycles, "best_cycles": r.best_cycles, "verdict": r.verdict,
               "error": r.error, "performance": r.performance}
        if gain is not None and gain >= GAIN_REPORTED and r.pipeline:
            b = explain(target, "", args.explain_arg)
            a = explain(target, r.pipeline, args.explain_arg)
            if a is not None and "after" in a and b is not None and "error" not in b:
                a = a["after"]
                row.update({"binding_before": b["binding"], "binding_after": a["binding"],
                            "bounds_before": b["bounds"], "bounds_after": a["bounds"],
                            "dram_bytes": b["dram_bytes"], "mechanism": mechanism(b, a)})
            else:
                row["mechanism"] = f"explain failed: {(a or {}).get('error') or (b or {}).get('error')}"
        rows.append(row)
        print(f"{cand.label:<32}{group:<18}{(gain if gain is not None else float('nan')):>8.2f}%  "
              f"{r.pipeline or '-':<40}{row.get('binding_before', ''):<14}{row.get('mechanism', r.error or '')}",
              flush=True)
    doc = summarise({"label": args.label, "objective": "throughput", "strategy": "greedy",
                     "max_steps": args.max_steps, "per_group": args.per_group, "kind": "estimate",
                     "search_wall_s": search_s, "kernels": rows})
    print(f"mean gain {doc['mean_gain_pct'] or 0:.2f}% over {len(rows)} kernels; search {search_s:.0f} s")
    out = Path(args.out)
    if args.only and not args.merge:
        return
    if args.only:
        old = json.loads(out.with_suffix(".json").read_text())
        new = {r["kernel"]: r for r in rows}
        rows = [new.pop(r["kernel"], r) for r in old["kernels"]] + list(new.values())
        doc = summarise(old | {"kernels": rows})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))


def summarise(doc: dict) -> dict:
    """``doc`` with the mean gain per group and over all kernels (from its ``kernels`` rows)."""
    by_group: dict[str, list[float]] = defaultdict(list)
    for row in doc["kernels"]:
        if row["gain_pct"] is not None:
            by_group[row["group"]].append(row["gain_pct"])
    allg = [x for v in by_group.values() for x in v]
    return {**doc, "mean_gain_pct": sum(allg) / len(allg) if allg else None,
            "groups": {g: {"kernels": len(v), "mean_gain_pct": sum(v) / len(v)} for g, v in sorted(by_group.items())}}


def markdown(doc: dict) -> str:
    lines = [f"# Throughput audit ({doc['label']}): greedy, max {doc['max_steps']} steps, objective throughput",
             "", "Every cycle figure is an ESTIMATE of the sim model (throughput: uncalibrated). "
             "Written by `benchmarks/reports/throughput_audit.py`.", "",
             f"Mean gain {doc['mean_gain_pct'] or 0:.2f}%.", "", "| group | kernels | mean gain % |", "|---|---:|---:|"]
    lines += [f"| {g} | {s['kernels']} | {s['mean_gain_pct']:.2f} |" for g, s in doc["groups"].items()]
    lines += ["", "| kernel | group | gain % | pipeline | binding before | binding after | mechanism |",
              "|---|---|---:|---|---|---|---|"]
    for r in doc["kernels"]:
        g = "error" if r["gain_pct"] is None else f"{r['gain_pct']:.2f}"
        lines.append(f"| {r['kernel']} | {r['group']} | {g} | {r['pipeline'] or '-'} | "
                     f"{r.get('binding_before', '')} | {r.get('binding_after', '')} | "
                     f"{r.get('mechanism') or r.get('error') or ''} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
