"""What the pass matrix's memo of the originals' runs saves: passes over a
sample of corpus kernels, checked as tests/passes/test_pass_matrix.py checks them
(2 interpreter trials, 1 for its HEAVY kernels), once with the memo
(:data:`ptxopt.testing.matrix.REFERENCE_RUNS`) and once without, each in a
fresh process; per pass: CPU seconds and interpreter launches. The cells'
outcomes and details must be the same both ways (exit 1 otherwise).

Run: ``python benchmarks/speed/matrix_reference_runs.py [--passes P,Q] [--every N]``
(default: the fast tier's hand-written kernels; ``--every N``: every Nth
kernel of the slow tier's slice instead).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
HEAVY = {"triton_flash_attn_fwd", "triton_flash_attn_fwd_causal", "triton_attention", "cuda_attention_small",
         "gen_gemv_00"}  # as tests/passes/test_pass_matrix.py


def _one(passes: list[str], every: int, memo: bool) -> dict:
    sys.path.insert(0, str(TESTS))
    import ptxopt.equivalence.interpret as interpret
    import ptxopt.testing.matrix as matrix
    from corpus_tiers import is_fast, slow_kernels
    from ptxopt.kernels.corpus import load_manifest
    from ptxopt.ptx.parser import parse

    if not memo:
        matrix.REFERENCE_RUNS = 0
    launches = [0]
    run_kernel = interpret.run_kernel

    def counted(*a, **k):
        launches[0] += 1
        return run_kernel(*a, **k)

    interpret.run_kernel = counted
    specs = load_manifest()
    kernels = slow_kernels(specs)[::every] if every else [k for k in specs if is_fast(k) and not k.generated]
    modules = {k.id: parse(k.ptx_text(), k.id) for k in kernels}
    rows, cells = [], []
    for p in passes:
        c0, n0 = time.process_time(), launches[0]
        for k in kernels:
            c = matrix.run_cell(p, k, modules[k.id], equivalence_trials=1 if k.id in HEAVY else 2)
            cells.append([p, k.id, c.outcome, c.detail])
        rows.append([p, time.process_time() - c0, launches[0] - n0])
    return {"kernels": len(kernels), "rows": rows, "cells": cells}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", default="vec_ld,reorder_cp,reorder_il,reorder_lf,unroll_4,swp_ld_1")
    ap.add_argument("--every", type=int, default=0, help="every Nth kernel of the slow slice (0: fast tier)")
    ap.add_argument("--child", choices=("memo", "plain"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    passes = a.passes.split(",")
    if a.child:
        print(json.dumps(_one(passes, a.every, a.child == "memo")))
        return 0
    out = {}
    for mode in ("plain", "memo"):
        r = subprocess.run([sys.executable, __file__, "--passes", a.passes, "--every", str(a.every), "--child", mode],
                           capture_output=True, text=True, check=True)
        out[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"{out['memo']['kernels']} kernels; CPU seconds and interpreter launches per pass, without / with the memo")
    for (p, c0, n0), (_, c1, n1) in zip(out["plain"]["rows"], out["memo"]["rows"]):
        print(f"  {p:12s} {c0:7.1f} s {n0:5d}   {c1:7.1f} s {n1:5d}")
    t0 = sum(r[1] for r in out["plain"]["rows"])
    t1 = sum(r[1] for r in out["memo"]["rows"])
    print(f"  {'total':12s} {t0:7.1f} s         {t1:7.1f} s")
    same = out["plain"]["cells"] == out["memo"]["cells"]
    print("cells identical both ways" if same else "CELLS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
