"""Do two source trees print the same pass outputs and operand facts?

A behaviour-preserving change (e.g. a faster reorder + print path)
must leave every pass's printed output and report, and every instruction's
operand facts, byte-identical. This digests, for every corpus kernel (or every
``--stride``-th): each pass's output + report from the parsed kernel; each
reorder policy's output + report from 7 start states (the kernel, and after
vec_ld, vec_st, cache_cg, prefetch_L1, reorder_cp, unroll_2); the output and
records of a few pipelines run by the pass manager (passes in place, one
after the other: what the analysis manager's invalidation acts on); the
facts of every instruction. Each tree runs in its own child process
(``PYTHONPATH=<tree>``); the digests are compared key by key.

Run: ``python benchmarks/reports/pass_identity.py --old DIR [--stride N]`` (DIR: the
tree before, e.g. ``git archive main | tar -x -C DIR``); exit 1 on any
difference.
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
import hashlib, json, sys
try:
    from ptxopt.ptx import operand_facts
    from ptxopt.kernels.corpus import load_manifest
    from ptxopt.ptx.emit import emit
    try:
        from ptxopt.evaluate.session import cold_start as clear_front_end
    except ImportError:  # a tree from before the evaluation session
        from ptxopt.search.memos import clear_front_end
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.pipeline import make_pass
except ImportError:  # a tree from before the modules moved into packages
    from ptxopt import operand_facts
    from ptxopt.corpus import load_manifest
    from ptxopt.emit import emit
    from ptxopt.memos import clear_front_end
    from ptxopt.parser import parse
    from ptxopt.pipeline import make_pass
from ptxopt.passes import pass_names

REORDERS = ("reorder_cp", "reorder_il", "reorder_lf", "reorder_sl")
STARTS = ("", "vec_ld", "vec_st", "cache_cg", "prefetch_L1", "reorder_cp", "unroll_2")
PIPELINES = ("vec_ld,reorder_cp,unroll_2,reorder_il,prefetch_L1", "maxnreg_128,reorder_sl,launch_bounds_2,reorder_lf",
             "cache_cg,prefetch_L2,swp_ld_1,reorder_cp", "nc_ld,vec_st,loop_version_2,reorder_il,split_ld")

def run_pipeline(text, m):
    try:
        try:
            from ptxopt.passes.passmanager import PassManager
        except ImportError:
            from ptxopt.passmanager import PassManager
        r = PassManager(text).run(m)
        recs = [(x.name, x.skipped, x.reverted, x.report.to_json() if x.report else None) for x in r.records]
        return h(emit(r.module) + json.dumps(recs))
    except Exception as e:
        return f"{type(e).__name__}: {e}"

def h(s):
    return hashlib.sha256(s.encode()).hexdigest()[:16]

def app(name, m):
    try:
        o, rep = make_pass(name).apply(m)
        return o, h(emit(o) + json.dumps(rep.to_json()))
    except Exception as e:  # the same failure in both trees is the same answer
        return None, f"{type(e).__name__}: {e}"

out = {}
for k in load_manifest()[::int(sys.argv[1])]:
    m = parse(k.ptx_text(), k.id)
    out[k.id + "|facts"] = h("\n".join(repr(tuple(operand_facts.facts(i)))
                                       for fn in m.functions for i in fn.instructions()))
    for p in pass_names():
        out[k.id + "|" + p] = app(p, m)[1]
    for s in STARTS:
        base = app(s, m)[0] if s else m
        if base is not None:
            for r in REORDERS:
                out[k.id + "|" + s + ">" + r] = app(r, base)[1]
    for pl in PIPELINES:
        out[k.id + "|run " + pl] = run_pipeline(pl, m)
    clear_front_end()
print(json.dumps(out))
"""


def digests(tree: Path, stride: int) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", CHILD, str(stride)], env=env, cwd=tree, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the tree before (a checkout or archive)")
    ap.add_argument("--stride", type=int, default=1, help="every N-th corpus kernel")
    args = ap.parse_args()
    new, old = digests(HERE, args.stride), digests(args.old.resolve(), args.stride)
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    kernels = len({k.split("|")[0] for k in new})
    facts = sum(1 for k in new if k.endswith("|facts"))
    print(f"{kernels} kernels: {len(new) - facts} pass outputs and {facts} kernels' facts compared; "
          f"{len(differ)} differ")
    for k in differ[:20]:
        print(f"  {k}: old {old.get(k)} new {new.get(k)}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
