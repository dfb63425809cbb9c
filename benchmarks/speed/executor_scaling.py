"""Local vs Ray executors on one small search, measured in one run (same machine, same load).

Prints (JSON, with --json) for the same search -- KERNELS, greedy,
``--max-steps 2``, a fresh cache each time -- the wall time in the driver
process alone, with the local executor (1 and 2 worker processes) and with
Ray (a private head on 127.0.0.1 with 2 CPUs; 1 and 2 tasks in flight). Each
configuration runs in a fresh driver process: a *cold* search (workers just
started: imports, the runtime environment unpacked) and then a *warm* one
(a fresh cache, the same workers), and every run must give the in-process
run's results and cache keys. Then: each executor's cost per task (a no-op
task's round trip, warm), the bytes that cross the network per task and per
evaluation (pickled arguments and results, cache rows included), and the
driver's cost to write one evaluation's rows (which bounds how many
evaluations per second one driver can absorb).

Run it under ``nice -n 10`` on a shared machine; ratios in one run are what
to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

KERNELS = ["gemm_tile_2x2x2", "gemm_tile_2x2x4", "gemm_tile_2x4x2", "gemm_tile_4x2x2"]


def search(tmp: Path, tag: str, **kw):
    from ptxopt.evaluate import Candidate
    from ptxopt.search.meter import EvalOptions
    from ptxopt.search.run import SearchConfig, search_many

    cache = tmp / f"{tag}.sqlite"
    cfg = SearchConfig(max_steps=2, options=EvalOptions(cache=str(cache)))
    ks = [(Candidate.from_corpus(k, ""), None) for k in KERNELS]
    t = time.perf_counter()
    res = search_many(ks, cfg, **kw)
    wall = time.perf_counter() - t
    db = sqlite3.connect(cache)
    keys = (sorted(db.execute("SELECT key, status, cycles FROM results")),
            sorted(db.execute("SELECT key, result_key FROM pipelines")))
    db.close()
    summary = [(r.kernel, r.pipeline, r.verdict, r.best_cycles, r.error) for r in res]
    return {"wall_s": round(wall, 2), "evaluations": sum(r.evaluations for r in res)}, (summary, keys)


def noop_round_trips(ex, n: int) -> float:
    from ptxopt.testing.executor_tasks import task

    ex.run(task, [("ok", i) for i in range(ex.workers or 2)])  # workers up
    t = time.perf_counter()
    ex.run(task, [("ok", i) for i in range(n)])
    return (time.perf_counter() - t) / n


CONFIGS = {"in-process": ("local", 0), "local -j1": ("local", 1), "local -j2": ("local", 2),
           "ray 1": ("ray", 1), "ray 2": ("ray", 2)}


def one(tag: str) -> dict:
    """One configuration in this (fresh) process: a cold search, then the same search again with a
    fresh cache and the executor's workers (or this process) warm; both checked against each other."""
    kind, n = CONFIGS[tag]
    out: dict = {}
    if kind == "ray":
        import ray

        from ptxopt.executor.raycluster import RayExecutor, runtime_env

        t = time.perf_counter()
        ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 runtime_env=runtime_env(), log_to_driver=False, logging_level="ERROR")
        out["ray_init_s"] = round(time.perf_counter() - t, 2)
        ex = RayExecutor(workers=n)
    else:
        from ptxopt.executor import LocalExecutor

        ex = LocalExecutor(n)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        kw = {"executor": ex} if n else {}
        out["cold"], a = search(tmp, "cold", **kw)
        if kind == "ray":
            out["transfer"] = dict(ex.stats)
            out["transfer"]["bytes_per_evaluation"] = round(
                (ex.stats["sent_bytes"] + ex.stats["received_bytes"]) / out["cold"]["evaluations"])
        out["warm"], b = search(tmp, "warm", **kw)
        out["digest"] = json.dumps(a, sort_keys=True, default=str)
        out["cold_equals_warm"] = a == b
        if n:
            out["noop_task_s"] = round(noop_round_trips(ex, 200), 5)
        ex.close()
        if kind == "ray":
            import ray

            ray.shutdown()
    return out


def driver_merge_cost() -> float:
    """Seconds the driver spends per evaluation writing rows a worker returned (cache held open)."""
    from ptxopt.evaluate import EvalCache, evaluate_many
    from ptxopt.evaluate.journal import merge_rows, new_rows, private_cache

    with private_cache(None) as w:
        evaluate_many([("corpus:gemm_tile_2x2x2", p) for p in ["", "vec_ld", "vec_st", "reorder_cp", "maxnreg_32",
                                                               "cache_cg", "vec_ld,vec_st", "reorder_il"]], cache=w)
        rows = new_rows(w, None)
    with tempfile.TemporaryDirectory() as d, EvalCache(Path(d) / "merge.sqlite") as db:
        t = time.perf_counter()
        for _ in range(20):
            merge_rows(db.path, rows, cache=db)
        return round((time.perf_counter() - t) / (20 * len(rows.results)), 5)


def main() -> int:
    import subprocess

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", choices=list(CONFIGS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    out: dict = {"kernels": KERNELS, "max_steps": 2, "cpus": os.cpu_count(), "runs": {}}
    for tag in CONFIGS:  # each in a fresh driver process: no configuration inherits another's warm state
        p = subprocess.run([sys.executable, __file__, "--one", tag], capture_output=True, text=True)
        if p.returncode:
            print(p.stderr, file=sys.stderr)
            return 1
        out["runs"][tag] = json.loads(p.stdout.strip().splitlines()[-1])
    ref = out["runs"]["in-process"]["digest"]
    for r in out["runs"].values():
        r["identical_to_in_process"] = r.pop("digest") == ref
    out["driver_merge_s_per_evaluation"] = driver_merge_cost()
    inproc = out["runs"]["in-process"]
    out["in_process_s_per_evaluation"] = {k: round(inproc[k]["wall_s"] / inproc[k]["evaluations"], 4)
                                          for k in ("cold", "warm")}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out["runs"].items():
            print(f"{k:12s} cold {v['cold']['wall_s']:7.2f} s  warm {v['warm']['wall_s']:7.2f} s  "
                  f"{v['cold']['evaluations']} evaluations  identical={v['identical_to_in_process']}")
        print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
