"""Is a search bound by ptxas alone?  The targets below, measured in one run.

1. **Greedy vs its own ptxas runs**: greedy search (max 6 steps) on 8
   gemm_tile kernels spread over the sizes, cold evaluation cache, in this
   process (``search_many(workers=0)``: one kernel after the other, what
   ``ptxopt search -j 1`` does inside its one worker, without the CLI's
   start-up).  Every child the toolchain starts goes through
   :func:`ptxopt.toolchain.process._run_once`; this script wraps it to count
   runs per tool and to take each child's wall time and CPU time (reaped
   with ``os.wait4``).  Ratios, target <= 1.5x:

   * wall: search wall time / sum of the wall times of its ptxas runs;
   * CPU: (this process's CPU + every child's CPU) / CPU of its ptxas runs.

   ``search_many`` searches these kernels in lockstep (their candidates
   share one evaluation stream, :mod:`ptxopt.search.stepwise`; ``-j 1``
   does the same in its one worker); ``--sequential``
   also runs the one-after-the-other path (``lockstep=False``, what it did
   before) in the same invocation, cold as well, prints both and checks
   that both give the same results and trajectories.

2. **Identical cubins**: of the cubins the ``sim`` backend was given to
   measure in (1), how many are byte-identical to one it was given before
   in the same run (different pipelines that ptxas compiles to the same
   code).  Each such cubin needs no nvdisasm run and no model run when SASS
   and estimates are keyed by the cubin's digest.

3. **Evaluation beyond ptxas** on corpus kernels (``--eval-selector``,
   default ``gemm_tile``): every kernel under one pipeline that changes its
   code (``vec_ld``), cold cache, in this process; (wall - ptxas wall) /
   ptxas wall, and the same by CPU.  Target <= 50%.

``--profile N``: cProfile the greedy search of (1) again (cold cache, new
memos) and print the top N functions by own time.

Usage: ``nice -n 10 python benchmarks/speed/search_speed.py [--kernels 2x2x2,...] [--profile 5] [--json OUT]``
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

#: 8 gemm_tile kernels spread over the sizes (the sim calibration's default subset)
KERNELS = ("2x2x2", "2x4x6", "4x4x4", "4x6x8", "6x6x6", "6x8x4", "8x4x2", "8x8x8")


class ToolLog:
    """Runs, wall and CPU seconds per tool, gathered from every child the toolchain starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: collections.Counter = collections.Counter()
        self.wall: collections.Counter = collections.Counter()
        self.cpu: collections.Counter = collections.Counter()

    def reset(self) -> None:
        with self.lock:
            self.runs.clear(), self.wall.clear(), self.cpu.clear()

    def install(self) -> None:
        from ptxopt.toolchain import process
        from ptxopt.toolchain.process import ToolRun

        log = self

        def run_once(argv, tool, timeout, cwd):
            # process._run_once with the child reaped by os.wait4 (its own rusage); no timeout needed here
            t = time.perf_counter()
            p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
            out = p.stdout.read()
            p.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - t
            with log.lock:
                log.runs[tool] += 1
                log.wall[tool] += wall
                log.cpu[tool] += ru.ru_utime + ru.ru_stime
            return ToolRun(p.returncode, out.decode("utf-8", "replace"), wall)

        process._run_once = run_once


class CubinLog:
    """Digests of the cubins the sim backend is asked to measure."""

    def __init__(self) -> None:
        self.digests: list[str] = []

    def install(self) -> None:
        from ptxopt.measure.sim import SimBackend

        orig = SimBackend.measure_many
        log = self

        def measure_many(backend, jobs):
            out = orig(backend, jobs)
            for j in jobs:
                if j.compiled is not None:
                    log.digests.append(hashlib.sha256(j.compiled.cubin).hexdigest())
            return out

        SimBackend.measure_many = measure_many

    def rate(self) -> tuple[int, int]:
        return len(self.digests) - len(set(self.digests)), len(self.digests)


def _fresh_state() -> None:
    """Forget every in-process memo (a new process would not have them): a cold evaluation session."""
    try:
        from ptxopt.evaluate.session import cold_start
    except ImportError:  # a tree from before the evaluation session
        cold_start = None
    if cold_start is not None:
        cold_start()
        return
    from ptxopt.search import memos
    from ptxopt.equivalence import decision, prove
    from ptxopt.evaluate import prepare as frontend
    from ptxopt.measure import sim
    from ptxopt.toolchain import ptxas

    memos.clear_front_end()
    frontend._MEMO.clear()
    decision.clear()
    ptxas.clear_memo()
    prove._MEMO.clear()
    getattr(prove, "clear_memo", lambda: None)()  # the original's symbolic runs (where the prover has that memo)
    getattr(sim, "clear_memo", lambda: None)()  # SASS and estimates by cubin digest (where the sim has that memo)


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def greedy(kernels, tmp: Path, tools: ToolLog, cubins: CubinLog, tag: str, lockstep: bool = True) -> dict:
    from ptxopt.kernels.corpus import get
    from ptxopt.evaluate import Candidate
    from ptxopt.search import EvalOptions, SearchConfig, search_many

    specs = [get(f"gemm_tile_{k}") for k in kernels]
    cfg = SearchConfig("greedy", max_steps=6, options=EvalOptions(backend="sim", cache=str(tmp / f"{tag}.sqlite")))
    _fresh_state()
    tools.reset()
    cubins.digests.clear()
    c0, t0 = _cpu(), time.perf_counter()
    rs = search_many([(Candidate.from_corpus(s), s.family) for s in specs], cfg, workers=0, lockstep=lockstep)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    dup, n = cubins.rate()
    return {"lockstep": lockstep, "kernels": [s.id for s in specs], "wall_s": wall, "cpu_s": cpu,
            "evaluations": sum(r.evaluations for r in rs),
            "best": {r.kernel: (r.pipeline, r.baseline_cycles, r.best_cycles, r.verdict) for r in rs},
            # every candidate's cycles at every step: a before/after comparison checks all of them
            "trajectories": {r.kernel: [(s.pipeline, s.action, s.candidates) for s in r.steps] for r in rs},
            "runs": dict(tools.runs), "tool_wall_s": dict(tools.wall), "tool_cpu_s": dict(tools.cpu),
            "wall_ratio": wall / tools.wall["ptxas"], "cpu_ratio": cpu / tools.cpu["ptxas"],
            "identical_cubins": dup, "cubins_measured": n}


def beyond_ptxas(selector: str, pipeline: str, tmp: Path, tools: ToolLog) -> dict:
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate import Candidate, evaluate_many

    cands = [Candidate.from_corpus(k, pipeline) for k in select(selector)]
    _fresh_state()
    tools.reset()
    c0, t0 = _cpu(), time.perf_counter()
    rs = evaluate_many(cands, workers=0, cache=tmp / f"beyond-{pipeline}.sqlite")
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return {"selector": selector, "pipeline": pipeline, "kernels": len(cands), "ok": sum(r.ok for r in rs),
            "wall_s": wall, "cpu_s": cpu, "runs": dict(tools.runs), "tool_wall_s": dict(tools.wall),
            "tool_cpu_s": dict(tools.cpu),
            "wall_beyond": (wall - tools.wall["ptxas"]) / tools.wall["ptxas"],
            "cpu_beyond": (cpu - tools.cpu["ptxas"]) / tools.cpu["ptxas"]}


def profile(kernels, tmp: Path, top: int) -> list[tuple]:
    import cProfile
    import pstats

    from ptxopt.kernels.corpus import get
    from ptxopt.evaluate import Candidate
    from ptxopt.search import EvalOptions, SearchConfig, search_many

    specs = [get(f"gemm_tile_{k}") for k in kernels]
    cfg = SearchConfig("greedy", max_steps=6, options=EvalOptions(backend="sim", cache=str(tmp / "prof.sqlite")))
    _fresh_state()
    prof = cProfile.Profile()
    prof.enable()
    search_many([(Candidate.from_corpus(s), s.family) for s in specs], cfg, workers=0)
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [(f"{Path(f).name}:{line}({fn})", tt, tt / total, ct) for (f, line, fn), (_, _, tt, ct, _) in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(KERNELS), help="gemm_tile shapes for the greedy search")
    ap.add_argument("--eval-selector", default="gemm_tile", help="corpus kernels for item 3 ('' to skip)")
    ap.add_argument("--profile", type=int, default=0, help="print the top N of a cProfile'd greedy search")
    ap.add_argument("--sequential", action="store_true",
                    help="also run the greedy search of (1) one kernel after the other (lockstep=False) and compare")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    tools, cubins = ToolLog(), CubinLog()
    tools.install()
    cubins.install()
    out: dict = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="ptxopt-search-speed-") as d:
        tmp = Path(d)
        from ptxopt.kernels.corpus import get
        from ptxopt.evaluate import Candidate, evaluate_many

        evaluate_many([Candidate.from_corpus(get("gemm_tile_2x2x2"), "vec_st")], cache=None)  # warm up imports
        runs = [("greedy", True)] + ([("greedy_sequential", False)] if args.sequential else [])
        for tag, lockstep in runs:
            g = out[tag] = greedy(kernels, tmp, tools, cubins, tag, lockstep)
            how = "in lockstep" if lockstep else "one after the other"
            print(f"1. greedy on {len(kernels)} gemm tiles, cold cache, in-process, {how}: wall {g['wall_s']:.1f} s, "
                  f"CPU {g['cpu_s']:.1f} s; {g['evaluations']} evaluations; runs {g['runs']}")
            print(f"   tool wall s {_r(g['tool_wall_s'])}; tool CPU s {_r(g['tool_cpu_s'])}")
            print(f"   search / its ptxas runs: wall {g['wall_ratio']:.2f}x, CPU {g['cpu_ratio']:.2f}x (target <= 1.5x)")
        if args.sequential:
            a, b = out["greedy"], out["greedy_sequential"]
            same = _same(a["best"], b["best"]) and _same(a["trajectories"], b["trajectories"])
            out["same_results"] = same
            print(f"   lockstep vs one after the other: results and trajectories {'identical' if same else 'DIFFER'}; "
                  f"wall {b['wall_s'] / a['wall_s']:.2f}x faster, CPU {b['cpu_s'] / a['cpu_s']:.2f}x less")
        g = out["greedy"]
        print(f"2. identical cubins: {g['identical_cubins']} of {g['cubins_measured']} cubins measured "
              f"({100 * g['identical_cubins'] / max(1, g['cubins_measured']):.1f}%) repeat an earlier one")
        if args.eval_selector:
            b = out["beyond"] = beyond_ptxas(args.eval_selector, "vec_ld", tmp, tools)
            print(f"3. evaluation beyond ptxas, {b['kernels']} {b['selector']} kernels x {b['pipeline']} "
                  f"({b['ok']} ok): wall {b['wall_s']:.1f} s, CPU {b['cpu_s']:.1f} s; runs {b['runs']}; "
                  f"beyond ptxas: wall {100 * b['wall_beyond']:.0f}%, CPU {100 * b['cpu_beyond']:.0f}% "
                  f"(target <= 50%)")
        if args.profile:
            rows = out["profile"] = profile(kernels, tmp, args.profile)
            print(f"4. profile of the greedy search, top {args.profile} by own time:")
            for name, tt, frac, ct in rows:
                print(f"   {100 * frac:5.1f}%  {tt:6.2f} s own, {ct:6.2f} s cumulative  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def _same(a, b) -> bool:
    """Equal, but for the seconds a verdict note quotes ("... matched (0.002 s)")."""
    import re

    norm = lambda o: re.sub(r"\(\d+(\.\d+)? s\)", "(s)", json.dumps(o, sort_keys=True))  # noqa: E731
    return norm(a) == norm(b)


def _r(d: dict) -> str:
    return "{" + ", ".join(f"{k}: {v:.2f}" for k, v in sorted(d.items())) + "}"


if __name__ == "__main__":
    main()
