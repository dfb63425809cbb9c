"""Greedy searches on a few corpus kernels: trajectories, time, and the passes the evaluator applies.

For a before/after comparison of a change that must not move a search
(the evaluator measuring the module the search built instead of applying
the pipeline again): each kernel is searched greedily (cold evaluation
cache, a cold start of the in-process memos, in this process), one kernel
after the other through each search's meter (``lockstep=False``) and again
in lockstep (one evaluation stream). Printed per mode: wall and CPU time
(this process and its children), and how many pass-manager runs of a
non-empty pipeline the evaluator made and their wall time (the second
application of the passes). ``--json OUT`` also writes every step's
candidates (pipeline, status, verdict, cycles: ESTIMATES of the sim model),
which ``--diff A B`` compares.

Run on each tree: ``PYTHONPATH=<tree> python benchmarks/reports/greedy_identity.py --json OUT``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

KERNELS = "cuda_saxpy,triton_softmax_row,gemm_tile_4x4x4,gen_ew_chain_01,gen_softmax_rows_01,cuda_batchnorm_infer"


def _cold() -> None:
    try:
        from ptxopt.evaluate.session import cold_start
    except ImportError:  # a tree from before the evaluation session
        from ptxopt.equivalence import decision, prove
        from ptxopt.evaluate import frontend, keys
        from ptxopt.measure import loop_slice, sim
        from ptxopt.search import memos
        from ptxopt.toolchain import ptxas

        memos.clear_front_end()
        frontend._MEMO.clear()
        decision.clear()
        ptxas.clear_memo()
        prove.clear_memo()
        sim.clear_memo()
        loop_slice._CACHE.clear()  # what a new evaluation session also starts without
        keys._FINGERPRINTS.clear()
        return
    cold_start()


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class PassRuns:
    """Counts the pass manager's runs of non-empty pipelines, their wall time and their CPU time
    (of the calling thread: the passes run in it)."""

    def __init__(self) -> None:
        from ptxopt.passes.passmanager import PassManager

        self.n, self.seconds, self.cpu = 0, 0.0, 0.0
        real, log = PassManager.run, self

        def run(pm, module):
            if not len(pm.pipeline):
                return real(pm, module)
            t, c = time.perf_counter(), time.thread_time()
            try:
                return real(pm, module)
            finally:
                log.n += 1
                log.seconds += time.perf_counter() - t
                log.cpu += time.thread_time() - c

        PassManager.run = run


def search(kernels: list[str], steps: int, lockstep: bool, runs: PassRuns, tmp: Path) -> dict:
    from ptxopt.evaluate import Candidate
    from ptxopt.kernels.corpus import get
    from ptxopt.search import EvalOptions, SearchConfig, search_many

    cfg = SearchConfig("greedy", max_steps=steps,
                       options=EvalOptions(backend="sim", cache=str(tmp / f"cache-{lockstep}.sqlite")))
    cands = [(Candidate.from_corpus(get(k)), None) for k in kernels]
    _cold()
    runs.n, runs.seconds, runs.cpu = 0, 0.0, 0.0
    c0, t0 = _cpu(), time.perf_counter()
    rs = search_many(cands, cfg, workers=0, lockstep=lockstep)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return {"lockstep": lockstep, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "evaluator_pass_runs": runs.n, "evaluator_pass_s": round(runs.seconds, 3),
            "evaluator_pass_cpu_s": round(runs.cpu, 3),
            "evaluations": sum(r.evaluations for r in rs),
            "results": {r.kernel: {"best": [r.pipeline, r.best_cycles, r.verdict],
                                   "steps": [json.dumps(s.to_json(), sort_keys=True) for s in r.steps]}
                        for r in rs}}


def diff(a: Path, b: Path) -> int:
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    bad = 0
    for mode in ("meter", "lockstep"):
        for k in sorted(set(old[mode]["results"]) | set(new[mode]["results"])):
            if old[mode]["results"].get(k) != new[mode]["results"].get(k):
                bad += 1
                print(f"{mode} {k}: differs")
        print(f"{mode}: wall {old[mode]['wall_s']} -> {new[mode]['wall_s']} s, CPU {old[mode]['cpu_s']} -> "
              f"{new[mode]['cpu_s']} s, evaluator pass runs {old[mode]['evaluator_pass_runs']} -> "
              f"{new[mode]['evaluator_pass_runs']} ({old[mode]['evaluator_pass_s']} -> "
              f"{new[mode]['evaluator_pass_s']} s wall, {old[mode].get('evaluator_pass_cpu_s')} -> "
              f"{new[mode].get('evaluator_pass_cpu_s')} s CPU)")
    print(f"{bad} kernel trajectories differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=KERNELS)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--json", default=None)
    ap.add_argument("--diff", nargs=2, default=None)
    a = ap.parse_args()
    if a.diff:
        return diff(Path(a.diff[0]), Path(a.diff[1]))
    runs = PassRuns()
    kernels = [k for k in a.kernels.split(",") if k]
    with tempfile.TemporaryDirectory() as tmp:
        out = {"kernels": kernels, "steps": a.steps,
               "meter": search(kernels, a.steps, False, runs, Path(tmp)),
               "lockstep": search(kernels, a.steps, True, runs, Path(tmp))}
    for mode in ("meter", "lockstep"):
        o = out[mode]
        print(f"{mode}: wall {o['wall_s']} s, CPU {o['cpu_s']} s, {o['evaluations']} evaluations, "
              f"evaluator pass runs {o['evaluator_pass_runs']} ({o['evaluator_pass_s']} s wall, "
              f"{o['evaluator_pass_cpu_s']} s CPU)")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
