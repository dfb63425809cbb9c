"""How much does the translation validator (:mod:`ptxopt.equivalence.prove`) prove?

1. **Pass matrix**: every pass on every corpus kernel; of the cells whose
   printed module changed, the fraction ``proved``, per corpus family
   (gemm_tile: ptxopt-generated tiles; nvcc; Triton), with the
   ``inconclusive`` reasons tallied (the reason's kind, without the block
   and register names) and the prover's time per cell. A ``differ`` here
   would be a bug (a pass never changes a kernel's interface).
2. **Mutants x verdicts**: every mutant (:mod:`ptxopt.testing.mutants`,
   ``--per-operator`` sites per operator) of every nvcc and Triton corpus
   kernel and of every adversarial kernel (``tests/adversarial/``), against
   its original: rows are mutation operators, columns the prover's
   verdicts. A ``proved`` mutant is a false proof unless the mutated
   instruction's results are all dead (an equivalent mutant: column
   ``proved (dead site)``, judged by liveness, not by the prover); the
   ``proved`` column must be zero.

Usage: ``python benchmarks/reports/prove_matrix.py [--per-operator 3] [--json]``
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.ptx.emit import emit  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402
from ptxopt.passes import pass_names  # noqa: E402
from ptxopt.passes.pipeline import changed_output  # noqa: E402
from ptxopt.equivalence.prove import prove  # noqa: E402
from ptxopt.testing.mutants import OPERATORS, mutants  # noqa: E402

FAMILIES = ("gemm_tile", "nvcc", "triton")


def family(spec) -> str:
    return spec.compiler if spec.compiler in ("nvcc", "triton") else "gemm_tile"


def reason_kind(reason: str) -> str:
    """The kind of an inconclusive reason: without the function, block, register and node names."""
    r = re.sub(r"^[\w$.]+: ", "", reason)
    r = re.sub(r"^block \d+ \([^)]*\): ", "", r)
    r = re.sub(r"%[\w.]+", "%r", r)
    r = re.sub(r"\[[^\]]*\]", "[...]", r)
    r = re.sub(r"\d+", "N", r)
    return r.split(": ")[0][:110]


def pass_matrix(kernels) -> dict:
    out = {f: {"changed": 0, "proved": 0, "inconclusive": 0, "differ": 0, "reasons": Counter(),
               "by_pass": defaultdict(Counter), "seconds": []} for f in FAMILIES}
    for spec in kernels:
        m = parse(spec.ptx_text(), spec.id)
        text = emit(m)
        fam = out[family(spec)]
        for p in pass_names():
            new = changed_output(p, m)
            if new is None or (cand := emit(new)) == text:
                continue
            r = prove(text, cand, entry=spec.entry)
            fam["changed"] += 1
            fam[r.verdict] += 1
            fam["by_pass"][p][r.verdict] += 1
            fam["seconds"].append(r.seconds)
            if r.verdict != "proved":
                fam["reasons"][f"{p}: {reason_kind(r.reason)}"] += 1
    return out


def _dead_site(module, entry: str, line: int) -> bool:
    from ptxopt.analysis.cfg import CFG
    from ptxopt.analysis.defuse import liveness

    cfg = CFG(module.pick_entry(entry))
    live = liveness(cfg)
    sites = [(b, k, iid) for b in cfg.blocks for k, iid in enumerate(b.iids) if cfg.instructions[iid].line == line]
    if len(sites) != 1:
        return False  # no instruction, or several, with that line: not judged dead
    b, k, iid = sites[0]
    defs = cfg.du[iid][0]
    return bool(defs) and not any(r in live.live_after(b.index)[k] for r in defs)


def mutant_table(per_operator: int) -> dict:
    groups = {"nvcc+triton corpus": [], "adversarial": []}
    for spec in load_manifest():
        if spec.compiler in ("nvcc", "triton"):
            groups["nvcc+triton corpus"].append((spec.id, spec.ptx_text(), spec.entry))
    for path in sorted((ROOT / "tests" / "adversarial").glob("*.ptx")):
        m = parse(path.read_text(), path.name)
        for fn in m.entries:
            groups["adversarial"].append((path.stem, path.read_text(), fn.name))
    out = {}
    for g, items in groups.items():
        table = {op: Counter() for op in OPERATORS}
        false = []
        for name, ptx, entry in items:
            m = parse(ptx, name)
            text = emit(m)
            for mu in mutants(m, entry, per_operator=per_operator):
                r = prove(text, emit(mu.module), entry=entry)
                col = r.verdict
                if col == "proved":
                    if mu.operator in ("constant", "swap") and _dead_site(m, entry, mu.line):
                        col = "proved (dead site)"
                    else:
                        false.append(f"{name}: {mu.operator} line {mu.line} ({mu.what})")
                table[mu.operator][col] += 1
        out[g] = {"table": {op: dict(c) for op, c in table.items()}, "false_proofs": false}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-operator", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    pm = pass_matrix(load_manifest())
    mt = mutant_table(args.per_operator)
    wall = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"pass_matrix": {f: {**{k: v for k, v in d.items() if k not in ("reasons", "by_pass")},
                                              "reasons": dict(d["reasons"]),
                                              "by_pass": {p: dict(c) for p, c in d["by_pass"].items()}}
                                          for f, d in pm.items()},
                          "mutants": mt, "wall_s": wall}, indent=2))
        return
    print("1. pass matrix: cells (kernel x pass) that changed the module, and how many the prover proved")
    for f in FAMILIES:
        d = pm[f]
        n = d["changed"]
        sec = d["seconds"] or [0.0]
        print(f"   {f:<10} {d['proved']:5d} / {n:5d} proved = {100 * d['proved'] / max(n, 1):5.1f}%   "
              f"(inconclusive {d['inconclusive']}, differ {d['differ']}; prover time per cell: median "
              f"{1000 * statistics.median(sec):.1f} ms, max {1000 * max(sec):.0f} ms)")
        for why, k in d["reasons"].most_common(8):
            print(f"      {k:4d}  {why}")
    print(f"\n2. mutants x prover verdicts (--per-operator {args.per_operator})")
    cols = ("proved", "proved (dead site)", "inconclusive", "differ")
    for g, d in mt.items():
        print(f"   {g}:")
        print(f"     {'operator':<14}" + "".join(f"{c:>20}" for c in cols))
        tot = Counter()
        for op, c in d["table"].items():
            tot.update(c)
            print(f"     {op:<14}" + "".join(f"{c.get(x, 0):>20}" for x in cols))
        print(f"     {'total':<14}" + "".join(f"{tot.get(x, 0):>20}" for x in cols))
        for fp in d["false_proofs"]:
            print(f"     FALSE PROOF: {fp}")
    print(f"\n({wall:.0f} s)")


if __name__ == "__main__":
    main()
