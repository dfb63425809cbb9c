"""What keeping passes inside the contract costs: stdout capture and time limits.

Every pass application runs with stdout captured (:mod:`ptxopt.support.pass_output`)
and under the time limit (:func:`ptxopt.evaluate.deadline.deadline`). An
action mask switches the capture and installs the timer once, then each pass
inside pays an offset look and two timer calls (:func:`ptxopt.evaluate.deadline.per_step`). Two tables:

* the guards alone, microseconds per use (best of 5 x 20,000), outside and
  inside an enclosing one;
* cold root masks of a stratified sample of corpus kernels (the 10th, 50th
  and 90th percentile by size), CPU time, median of ``--reps``, with the guards
  and with them replaced by no-ops.

Run: ``python benchmarks/speed/pass_guard_cost.py [--reps 7]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import ptxopt.passes.base as base  # noqa: E402
import ptxopt.search.state as st  # noqa: E402
from ptxopt.evaluate import Candidate  # noqa: E402
from ptxopt.evaluate.deadline import StepClock, deadline, per_step  # noqa: E402
from ptxopt.evaluate.session import cold_start as clear_front_end  # noqa: E402
from ptxopt.support.pass_output import captured  # noqa: E402


def _per_use(stmt: str, around=None) -> float:
    with around or contextlib.nullcontext():
        best = min(timeit.repeat(stmt, number=20_000, repeat=5,
                                 globals={"captured": captured, "deadline": deadline, "clock": StepClock(600)}))
    return best / 20_000 * 1e6


def _mask_cpu(path: Path) -> float:
    clear_front_end()
    root = st.State.root(Candidate(path.read_text(), name=path.stem))
    t = time.process_time()
    root.moves()
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print("guard                      outside   inside another")
    for name, stmt, outer in (("captured (stdout)", "with captured('x'): pass", captured("outer")),
                              ("deadline (time limit)", "with deadline(600): pass", deadline(6000)),
                              ("step clock start+stop", "clock.start(); clock.stop()", per_step(600))):
        alone = _per_use(stmt)
        inside = _per_use(stmt, outer)
        print(f"{name:24s} {alone:7.1f} us {inside:7.1f} us")
    files = sorted((ROOT / "corpus").rglob("*.ptx"), key=os.path.getsize)
    sample = [files[len(files) // 10], files[len(files) // 2], files[-len(files) // 10]]
    real = (base.captured, st.captured, st.per_step)
    off = (lambda *a, **k: contextlib.nullcontext(), lambda *a, **k: contextlib.nullcontext(),
           lambda *a, **k: contextlib.nullcontext(StepClock(None)))
    print("\nkernel                        bytes  mask CPU: guarded   no guards   difference")
    for path in sample:
        cpu = {}
        _mask_cpu(path)  # warm: imports and first-use costs are no one's
        for mode in ("guarded", "none") * args.reps:
            base.captured, st.captured, st.per_step = real if mode == "guarded" else off
            cpu.setdefault(mode, []).append(_mask_cpu(path))
        base.captured, st.captured, st.per_step = real
        g, n = statistics.median(cpu["guarded"]), statistics.median(cpu["none"])
        print(f"{path.stem:28s} {path.stat().st_size:7d}  {g * 1e3:9.1f} ms {n * 1e3:9.1f} ms  "
              f"{(g - n) * 1e3:+6.1f} ms ({100 * (g - n) / n:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
