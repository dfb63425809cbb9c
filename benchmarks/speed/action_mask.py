"""What a search state's action mask costs, as a fraction of one ptxas compile of that state.

The target: <= 25% of one ptxas compile, so that the mask never dominates
a search step. Three figures per state, all measured in this run (best of
``--reps``):

* **cold**: nothing remembered (analysis memos, printed-text memos and the
  move memo cleared): every pass applied to the state, and its output compared
  with the state (:mod:`ptxopt.ptx.print_compare`; printed only where the
  statements do not decide; a child is printed when first visited);
* **memo file**: a new process's first look at a state it has seen before
  (in-process memos cleared, the move memo file beside the evaluation cache
  present) -- what a GRPO epoch or a repeated search pays;
* **one child**: building the child of one action after a memo-file mask
  (what a rollout step pays on top of the mask).

The ``cold CPU`` column is the cold mask's CPU time over one ptxas run's
CPU time (its children's rusage): less swayed by a loaded machine than wall.

States: each kernel's root and its child after ``cache_cg`` (a typical
second step). Run: ``python benchmarks/speed/action_mask.py [--kernels gemm_tile_8x8x8,...]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ptxopt.evaluate import Candidate  # noqa: E402
from ptxopt.evaluate.session import cold_start as _forget  # noqa: E402
from ptxopt.evaluate.move_memo import MoveMemo  # noqa: E402
from ptxopt.search.state import State  # noqa: E402
from ptxopt.toolchain import compile_ptx  # noqa: E402
from ptxopt.toolchain.arch import DEFAULT_ARCH  # noqa: E402

TARGET = 0.25
DEFAULT = "gemm_tile_4x4x4,gemm_tile_8x8x8,gemm_tile_12x12x12,gemm_tile_16x16x16,cuda_softmax_row,triton_layernorm_row"


def _state(kernel: str, step: str | None, memo: MoveMemo) -> State:
    s = State.root(Candidate.from_corpus(kernel, ""), memo=memo)
    return s.child(step) if step else s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=DEFAULT)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "moves.sqlite"
        print(f"{'state':38} {'ptxas':>8} {'cold':>16} {'memo file':>16} {'one child':>10} {'cold CPU':>9}")
        worst = 0.0
        for kernel in args.kernels.split(","):
            for step in (None, "cache_cg"):
                _forget()
                s = _state(kernel, step, MoveMemo(None))
                ptxas = ptxas_cpu = float("inf")
                for _ in range(args.reps):
                    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    ptxas = min(ptxas, compile_ptx(s.printed, DEFAULT_ARCH, memo=False).wall_time_s)
                    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    ptxas_cpu = min(ptxas_cpu, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
                cold = cold_cpu = warm = child = float("inf")
                for _ in range(args.reps):
                    _forget()
                    s = _state(kernel, step, MoveMemo(None))
                    t0, c0 = time.perf_counter(), time.process_time()
                    s.action_mask()
                    cold = min(cold, time.perf_counter() - t0)
                    cold_cpu = min(cold_cpu, time.process_time() - c0)
                    _forget()
                    s = _state(kernel, step, MoveMemo(path))
                    s.action_mask()  # fills the file
                    _forget()
                    s = _state(kernel, step, MoveMemo(path))  # a new process: only the file is left
                    t0 = time.perf_counter()
                    mask = s.action_mask()
                    warm = min(warm, time.perf_counter() - t0)
                    legal = [i for i, ok in enumerate(mask[:-1]) if ok]
                    if legal:
                        from ptxopt.search.actions import ACTIONS

                        t0 = time.perf_counter()
                        s.child(ACTIONS[legal[0]])
                        child = min(child, time.perf_counter() - t0)
                worst = max(worst, warm / ptxas)
                name = kernel + (f" +{step}" if step else "")
                print(f"{name:38} {ptxas * 1e3:6.0f}ms {cold * 1e3:7.1f}ms {cold / ptxas:6.0%} "
                      f"{warm * 1e3:7.1f}ms {warm / ptxas:6.0%} {child * 1e3:8.1f}ms {cold_cpu / ptxas_cpu:8.0%}")
        print(f"worst memo-file mask: {worst:.1%} of ptxas (target <= {TARGET:.0%}); "
              "cold masks are listed as measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
