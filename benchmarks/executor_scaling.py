"""Local vs Ray executors on one small search, measured in one run (issue 33).

Prints (JSON, with --json) for the same search -- KERNELS, greedy,
``--max-steps 2``, a fresh cache each time -- the wall time in this process,
with the local executor (1 and 2 worker processes) and with Ray (a private
head on 127.0.0.1 with 2 CPUs; 1 and 2 tasks in flight), and checks that
every run gives the same results and cache keys. Then: Ray's cost per task
(a no-op task's round trip, against the local pool's), the bytes that cross
the network per task and per evaluation (pickled arguments and results,
cache rows included), and the driver's cost to write one evaluation's rows
(the bound on how many evaluations per second one driver can absorb).

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KERNELS = ["gemm_tile_2x2x2", "gemm_tile_2x2x4", "gemm_tile_2x4x2", "gemm_tile_4x2x2"]


def search(tmp: Path, tag: str, **kw):
    from ptxopt.evaluate import Candidate
    from ptxopt.search.measure import EvalOptions
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

    ex.run(task, [("ok", i) for i in range(ex.workers or 2)])  # workers started and warm
    t = time.perf_counter()
    ex.run(task, [("ok", i) for i in range(n)])
    return (time.perf_counter() - t) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import ray

    from ptxopt.executor import LocalExecutor
    from ptxopt.executor.journal import merge_rows, new_rows, private_cache
    from ptxopt.executor.raycluster import RayExecutor, runtime_env

    out: dict = {"kernels": KERNELS, "max_steps": 2, "cpus": os.cpu_count(), "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ref = None
        for tag, kw in [("in-process", {}), ("local -j1", {"workers": 1}), ("local -j2", {"workers": 2})]:
            out["runs"][tag], got = search(tmp, tag.replace(" ", ""), **kw)
            ref = ref or got
            out["runs"][tag]["identical"] = got == ref
        t = time.perf_counter()
        ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 runtime_env=runtime_env(), log_to_driver=False, logging_level="ERROR")
        out["ray_init_s"] = round(time.perf_counter() - t, 2)
        for n in (1, 2):
            ex = RayExecutor(workers=n)
            out["runs"][f"ray {n}"], got = search(tmp, f"ray{n}", executor=ex)
            out["runs"][f"ray {n}"]["identical"] = got == ref
            out["runs"][f"ray {n}"]["first_tasks_s_note"] = "includes starting Ray workers and unpacking the runtime env"
            if n == 2:
                ev = out["runs"]["ray 2"]["evaluations"]
                out["transfer"] = {"tasks": ex.stats["tasks"], "sent_bytes": ex.stats["sent_bytes"],
                                   "received_bytes": ex.stats["received_bytes"],
                                   "bytes_per_evaluation": round((ex.stats["sent_bytes"] + ex.stats["received_bytes"]) / ev)}
        # warm again: the same search through Ray when its workers are up (and the driver cache is warm: hits)
        out["runs"]["ray 2 (workers warm, fresh cache)"], got = search(tmp, "ray2b", executor=RayExecutor(workers=2))
        out["runs"]["ray 2 (workers warm, fresh cache)"]["identical"] = got == ref
        out["noop_task_s"] = {"ray": round(noop_round_trips(RayExecutor(workers=2), 200), 5)}
        lex = LocalExecutor(2)
        out["noop_task_s"]["local pool (incl. pool start)"] = round(noop_round_trips(lex, 200), 5)
        ray.shutdown()
        # what the driver pays per evaluation to write the rows a worker returned
        from ptxopt.evaluate import evaluate_many

        with private_cache(None) as w:
            evaluate_many([("corpus:gemm_tile_2x2x2", p) for p in ["", "vec_ld", "vec_st", "reorder_cp", "maxnreg_32",
                                                                   "cache_cg", "vec_ld,vec_st", "reorder_il"]], cache=w)
            rows = new_rows(w, None)
        from ptxopt.evaluate import EvalCache

        with EvalCache(tmp / "merge.sqlite") as db:  # the driver's open cache, as search_many holds it
            t = time.perf_counter()
            for i in range(20):
                merge_rows(db.path, rows, cache=db)
            out["driver_merge_s_per_evaluation"] = round((time.perf_counter() - t) / (20 * len(rows.results)), 5)
    inproc = out["runs"]["in-process"]
    out["in_process_s_per_evaluation"] = round(inproc["wall_s"] / inproc["evaluations"], 4)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out["runs"].items():
            print(f"{k:36s} {v['wall_s']:7.2f} s  {v['evaluations']} evaluations  identical={v['identical']}")
        print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
