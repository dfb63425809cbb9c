"""How fast is the evaluator?  All figures from one run, on the gemm_tile corpus.

1. **Overhead beyond ptxas**: wall time of evaluating every gemm_tile kernel
   (sim backend, cold cache, in this process), minus the time ptxas alone
   takes to compile the same printed PTX, as a fraction of that ptxas time.
   Target <= 50%.  Everything else is in the overhead: parsing, passes,
   printing, the equivalence check in the interpreter, nvdisasm, the cycle
   model, hashing and the SQLite commits.  Reported for the baseline (empty
   pipeline: nothing to compare, the text is the original's), for two
   pipelines that change every kernel's code (the interpreter runs the
   original and the candidate four times each) and for one that changes only
   a hint (``maxnreg_128``: ``hints-only``, equal by construction, not run).
   Every kernel is one candidate here, so the original's interpreter runs
   are paid in full; a search pays them once per kernel (item 4).
   Measured twice for the baseline, ``vec_ld`` and ``reorder_cp``: with the
   translation validator first (the default: a ``proved`` candidate skips the
   interpreter launches) and without it (``prove=False``: the interpreter
   decides every changed candidate, as before the prover existed).
2. **Warm vs cold**: the same corpus again from the warm cache, new process
   state (memos cleared).  Target >= 50x faster.
3. **Throughput**: evaluations per second with 1 and 2 worker processes
   (cold cache; each kernel under several pipelines).
4. **One greedy step** (what a search does): the baseline and every single
   pass on a few kernels, in this process, cold cache -- the parsed original
   and its reference outputs are reused across the kernel's candidates.

Usage: ``python benchmarks/speed/eval_speed.py [--selector gemm_tile] [--overhead-only] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ptxopt.kernels.corpus import select  # noqa: E402
from ptxopt.evaluate import Candidate, evaluate_many  # noqa: E402
from ptxopt.evaluate import prepare as frontend  # noqa: E402
from ptxopt.toolchain.arch import DEFAULT_ARCH  # noqa: E402

CHANGING = ("vec_ld", "reorder_cp", "maxnreg_128")  # each changes every gemm_tile kernel's text (the last, hints only)
GREEDY_KERNELS = ("gemm_tile_4x4x4", "gemm_tile_6x6x6", "gemm_tile_8x4x8", "gemm_tile_8x8x8")


def _fresh_state() -> None:
    """Forget parsed originals, remembered reference outputs and compiles (a new process would not have
    them): the evaluator's memos of a new session, made the active one."""
    from ptxopt.evaluate.session import EvaluationSession

    EvaluationSession().state.enter()


def _ptxas_alone(results, arch=DEFAULT_ARCH) -> float:
    """Compile the printed PTX of every result again with nothing else running (ptxas's memo bypassed)."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.toolchain import compile_ptx

    texts = []
    for c in results:
        texts.append(emit(PassManager(c.pipeline).run(parse(c.ptx)).module))
    t = time.perf_counter()
    for text in texts:
        compile_ptx(text, arch, memo=False)
    return time.perf_counter() - t


def overhead(kernels, pipeline: str, tmp: Path, prove: bool = True) -> dict:
    cands = [Candidate.from_corpus(k, pipeline) for k in kernels]
    db = tmp / f"overhead-{pipeline or 'baseline'}-{'prove' if prove else 'interp'}.sqlite"
    _fresh_state()
    t = time.perf_counter()
    rs = evaluate_many(cands, workers=0, cache=db, prove=prove)
    wall = time.perf_counter() - t
    assert all(r.ok for r in rs), [r for r in rs if not r.ok][:1]
    ptxas = _ptxas_alone(cands)
    stages = {k: sum(r.timings.get(k, 0.0) for r in rs) for k in ("pass", "ptxas", "verify", "backend")}
    return {"pipeline": pipeline or "(baseline)", "prove": prove, "kernels": len(rs), "wall_s": wall,
            "ptxas_alone_s": ptxas,
            "overhead_fraction": (wall - ptxas) / ptxas, "stage_sums_s": stages,
            "equivalence": sorted({r.equivalence for r in rs})}


def warm_vs_cold(kernels, pipelines, tmp: Path) -> dict:
    cands = [Candidate.from_corpus(k, p) for k in kernels for p in pipelines]
    db = tmp / "warm.sqlite"
    _fresh_state()
    t = time.perf_counter()
    cold = evaluate_many(cands, workers=0, cache=db)
    t_cold = time.perf_counter() - t
    _fresh_state()
    t = time.perf_counter()
    warm = evaluate_many(cands, workers=0, cache=db)
    t_warm = time.perf_counter() - t
    assert all(r.cache_hit for r in warm) and not any(r.cache_hit for r in cold)
    return {"candidates": len(cands), "cold_s": t_cold, "warm_s": t_warm, "speedup": t_cold / t_warm}


def throughput(kernels, pipelines, tmp: Path, workers: int) -> dict:
    cands = [Candidate.from_corpus(k, p) for k in kernels for p in pipelines]
    db = tmp / f"throughput-{workers}.sqlite"
    _fresh_state()
    t = time.perf_counter()
    rs = evaluate_many(cands, workers=workers, cache=db)
    wall = time.perf_counter() - t
    return {"workers": workers, "candidates": len(rs), "wall_s": wall, "evals_per_s": len(rs) / wall,
            "ok": sum(r.ok for r in rs)}


def greedy_step(kernels, tmp: Path) -> dict:
    from ptxopt.passes import pass_names

    names = [n for n in pass_names() if n != "stop"]
    cands = [Candidate.from_corpus(k, p) for k in kernels for p in [""] + names]
    db = tmp / "greedy.sqlite"
    _fresh_state()
    t = time.perf_counter()
    rs = evaluate_many(cands, workers=0, cache=db)
    wall = time.perf_counter() - t
    changed = [c for c, r in zip(cands, rs) if r.changed]
    ptxas = _ptxas_alone([c for c, r in zip(cands, rs) if r.ok])
    return {"kernels": [k.id for k in kernels], "candidates": len(rs), "changed": len(changed),
            "statuses": {s: sum(r.status == s for r in rs) for s in sorted({r.status for r in rs})},
            "wall_s": wall, "evals_per_s": len(rs) / wall, "ptxas_alone_s": ptxas,
            "overhead_fraction": (wall - ptxas) / ptxas}


PROVER_COMPARED = ("", "vec_ld", "reorder_cp")


def _print_overhead(rows) -> None:
    for o in rows:
        s = o["stage_sums_s"]
        print(f"   {o['pipeline']:<12} wall {o['wall_s']:6.2f} s, ptxas alone {o['ptxas_alone_s']:5.2f} s "
              f"-> overhead {100 * o['overhead_fraction']:5.0f}%   (stage sums: pass {s['pass']:.2f}, ptxas "
              f"{s['ptxas']:.2f}, verify {s['verify']:.2f}, backend {s['backend']:.2f} s; "
              f"equivalence {'/'.join(o['equivalence'])})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--selector", default="gemm_tile")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--overhead-only", action="store_true", help="Only item 1 (with and without the prover).")
    args = ap.parse_args()
    kernels = select(args.selector)
    with tempfile.TemporaryDirectory(prefix="ptxopt-eval-speed-") as d:
        tmp = Path(d)
        # warm up imports, the pipeline parser, toolchain versions, code digests
        evaluate_many([Candidate.from_corpus(kernels[0], "vec_st")], cache=None)
        out = {
            "cpus": os.cpu_count(),
            "overhead": [overhead(kernels, p, tmp) for p in ("",) + CHANGING],
            "overhead_without_prover": [overhead(kernels, p, tmp, prove=False) for p in PROVER_COMPARED],
        }
        if not args.overhead_only:
            out.update({
                "warm_vs_cold": warm_vs_cold(kernels, ("", "vec_ld"), tmp),
                "throughput": [throughput(kernels, ("", "vec_ld", "reorder_cp"), tmp, w) for w in (1, 2)],
                "greedy_step": greedy_step([k for k in kernels if k.id in GREEDY_KERNELS] or kernels[:4], tmp),
            })
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"gemm_tile corpus ({len(kernels)} kernels), sim backend, {out['cpus']} CPUs")
    print("1. evaluation time beyond ptxas, as a fraction of ptxas time (target <= 50%):")
    print("   prover first (default):")
    _print_overhead(out["overhead"])
    print("   without the prover (the interpreter decides every changed candidate):")
    _print_overhead(out["overhead_without_prover"])
    if args.overhead_only:
        return
    w = out["warm_vs_cold"]
    print(f"2. warm cache vs cold ({w['candidates']} candidates): cold {w['cold_s']:.2f} s, warm "
          f"{w['warm_s'] * 1000:.0f} ms -> {w['speedup']:.0f}x faster (target >= 50x)")
    print("3. throughput (cold cache):")
    for t in out["throughput"]:
        print(f"   {t['workers']} worker(s): {t['candidates']} evaluations in {t['wall_s']:.2f} s = "
              f"{t['evals_per_s']:.1f} evaluations/s")
    g = out["greedy_step"]
    print(f"4. one greedy step (baseline + every single pass on {len(g['kernels'])} kernels, in-process): "
          f"{g['candidates']} candidates ({g['changed']} changed the kernel; {g['statuses']}) in "
          f"{g['wall_s']:.2f} s = {g['evals_per_s']:.1f} evaluations/s; ptxas alone {g['ptxas_alone_s']:.2f} s "
          f"-> overhead {100 * g['overhead_fraction']:.0f}%")


if __name__ == "__main__":
    main()
