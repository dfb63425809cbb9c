"""Cold cost of the operand facts: the reorder passes + print on one kernel, and
parse + every per-instruction fact over the corpus, for one or two source
trees measured in one run (cold pass cost of two versions of the walker, side by side).

Cold means a fresh parse for every timed repetition (the facts live on the
instructions, so a module that was looked at once is warm) and every memo
cleared; the parse itself is timed separately. Each tree runs in its own
child process (``PYTHONPATH=<tree>``), the trees alternate round by round so
machine noise hits both alike, and the best round of each is reported with
the ratio new/old.

Run: ``python benchmarks/speed/walker_cost.py [--old DIR] [--rounds N] [--kernel ID]``
(without ``--old``: this tree alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
from ptxopt.kernels.corpus import get, load_manifest
from ptxopt.ptx.emit import emit
from ptxopt.evaluate.session import cold_start as clear_front_end
from ptxopt.ptx.parser import parse
from ptxopt.passes.pipeline import make_pass
from ptxopt.analysis.alias import address_of
try:
    from ptxopt.ptx.operand_facts import facts
    def all_facts(ins):
        facts(ins)
except ImportError:  # before the walker: the answers every analysis asked for
    from ptxopt import opcodes
    def all_facts(ins):
        opcodes.defs_uses(ins); opcodes.role(ins); address_of(ins); opcodes.access_bytes(ins)
kernel = sys.argv[1]
out = {}
text = get(kernel).ptx_text()
for name in ("reorder_cp", "reorder_il", "reorder_lf", "reorder_sl"):
    m = parse(text)
    clear_front_end()
    p = make_pass(name)
    t0 = time.perf_counter()
    emit(p.apply(m)[0])
    out[name] = time.perf_counter() - t0
texts = [k.ptx_text() for k in load_manifest()]
t0 = time.perf_counter()
mods = [parse(t) for t in texts]
out["parse"] = time.perf_counter() - t0
clear_front_end()
n = 0
t0 = time.perf_counter()
for m in mods:
    for fn in m.functions:
        for ins in fn.instructions():
            all_facts(ins)
            n += 1
out["facts"] = time.perf_counter() - t0
t0 = time.perf_counter()
for m in mods:
    for fn in m.functions:
        for ins in fn.instructions():
            all_facts(ins)
out["facts_again"] = time.perf_counter() - t0
out["instructions"] = n
print(json.dumps(out))
"""


def run(tree: Path, kernel: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", CHILD, kernel], env=env, cwd=tree, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, help="the tree before the walker (a checkout or archive)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kernel", default="gemm_tile_16x16x16")
    args = ap.parse_args()
    trees = {"new": HERE} | ({"old": args.old.resolve()} if args.old else {})
    best: dict[str, dict] = {k: {} for k in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            for key, v in run(tree, args.kernel).items():
                best[label][key] = min(best[label].get(key, v), v)
    keys = [k for k in best["new"] if k != "instructions"]
    print(f"best of {args.rounds} rounds, seconds; {best['new']['instructions']} instructions in the corpus; "
          f"reorder on {args.kernel} (fresh parse, memos cleared)")
    print(f"{'':<14}" + "".join(f"{label:>10}" for label in trees) + ("   new/old" if "old" in trees else ""))
    for k in keys:
        row = f"{k:<14}" + "".join(f"{best[label][k]:10.4f}" for label in trees)
        if "old" in trees:
            row += f"   {best['new'][k] / best['old'][k]:7.2f}"
        print(row)
    if "old" in trees:
        pn = sum(best["new"][k] for k in keys if k.startswith("reorder"))
        po = sum(best["old"][k] for k in keys if k.startswith("reorder"))
        print(f"{'reorder total':<14}{pn:10.4f}{po:10.4f}   {pn / po:7.2f}")
        fn = best["new"]["parse"] + best["new"]["facts"]
        fo = best["old"]["parse"] + best["old"]["facts"]
        print(f"{'parse+facts':<14}{fn:10.4f}{fo:10.4f}   {fn / fo:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
