"""The executor interface (ptxopt.executor): failure rules every executor shares, and the
driver as the only writer of the cache (so workers never race on it). Ray itself: tests/executor/test_ray_executor.py (slow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.executor import DIED, LocalExecutor, make_executor
from ptxopt.evaluate.journal import Rows, merge_rows, new_rows, private_cache, seed_rows
from ptxopt.testing.executor_tasks import Fatal, task

ROOT = Path(__file__).resolve().parents[2]


def test_make_executor_specs():
    assert isinstance(make_executor(None, 3), LocalExecutor) and make_executor("local", 2).workers == 2
    ray = make_executor("ray:127.0.0.1:6379", 4)
    assert (ray.kind, ray.address, ray.workers) == ("ray", "127.0.0.1:6379", 4)  # nothing imported or started yet
    assert make_executor("ray").address is None
    for bad in ("bogus", "ray:", "thread", 3):
        with pytest.raises(ValueError):
            make_executor(bad)


def test_in_process_a_raising_task_is_a_result_and_fatal_stops():
    ex = LocalExecutor(0)
    out = ex.run(task, [("ok", 1), ("raise", 2), ("ok", 3)], fatal=(Fatal,))
    assert [o.value for o in out] == [2, None, 6]
    assert out[1].error == "ValueError: task 2 failed" and not out[1].ok
    seen = []
    with pytest.raises(Fatal):
        ex.run(task, [("ok", 1), ("fatal", 0), ("ok", 3)], fatal=(Fatal,), on_outcome=seen.append)
    assert [o.index for o in seen] == [0]  # stopped at the fatal task


def test_worker_pool_retries_a_death_once_alone_and_fails_only_the_culprit(tmp_path):
    """Two workers; one task kills its worker every time, one only the first time: the pool is
    rebuilt, the innocent tasks and the once-killer succeed, only the culprit is reported dead.
    The culprit kills its worker only after the once-killer has run (``die-after``): when it died
    first, the pool's teardown could kill the once-killer after it started and before its body ran,
    and its retry alone was its first real run (it failed this way once under load)."""
    once = tmp_path / "once"
    args = [("ok", 1), ("die-after", str(once)), ("die-once", str(once)), ("raise", 4), ("ok", 5)]
    got = {}
    out = LocalExecutor(2).run(task, args, on_outcome=lambda o: got.setdefault(o.index, o))
    assert out[0].value == 2 and out[4].value == 10
    assert out[1].died == DIED and out[1].value is None
    assert out[2].ok and out[2].value == str(once) and once.exists()
    assert out[3].error == "ValueError: task 4 failed"
    assert sorted(got) == list(range(5))  # each outcome reported once, as it was known


def test_journal_round_trip_and_bad_rows_are_dropped(tmp_path):
    """Rows a worker returns reach the driver's cache through EvalCache; a row that is not a
    result is never stored; seeding gives a worker the driver's rows for its kernel."""
    from ptxopt.evaluate import EvalCache, evaluate

    driver = tmp_path / "driver.sqlite"
    with private_cache(None) as worker:  # what a worker does: evaluate against its private cache
        r = evaluate("corpus:gemm_tile_2x2x2", "vec_ld", cache=worker)
        rows = new_rows(worker, None)
    assert not driver.exists()
    assert [k for k, _, _ in rows.results] == [r.key] and len(rows.pipelines) == 1
    rows.results.append(("not-a-key", None, '{"status": "ok"}'))  # malformed: dropped
    assert merge_rows(driver, rows) == 1
    with EvalCache(driver) as c:
        assert c.get(r.key).cycles == r.cycles and len(c) == 1
    seed = seed_rows(driver, "gemm_tile_2x2x2")
    assert [k for k, _, _ in seed.results] == [r.key] and seed_rows(driver, "other").results == []
    with private_cache(seed) as worker:  # seeded: a hit, and nothing new to send back
        again = evaluate("corpus:gemm_tile_2x2x2", "vec_ld", cache=worker)
        assert again.cache_hit and len(new_rows(worker, seed)) == 0


def test_a_search_worker_never_opens_the_drivers_cache(tmp_path):
    """search_many's task runs against a private cache and returns rows: the driver's path (here
    one that cannot even be created) is never touched by it."""
    from ptxopt.evaluate import Candidate
    from ptxopt.search.meter import EvalOptions
    from ptxopt.search.run import SearchConfig, _job

    blocked = tmp_path / "file"
    blocked.write_text("")
    cfg = SearchConfig(max_steps=1, options=EvalOptions(cache=str(blocked / "sub" / "eval.sqlite")))
    res, rows = _job((Candidate.from_corpus("gemm_tile_2x2x2", ""), cfg, None, Rows()))
    assert res.error is None and res.evaluations == len(rows.results) > 1
    assert {p for p, _ in rows.pipelines} and not (blocked / "sub").exists()


def test_evaluator_workers_forward_their_writes():
    """The evaluator pool's worker reads the cache but sends put/alias to the parent."""
    from ptxopt.evaluate.parallel import _Forwarding

    class Conn:
        sent: list = []

        def send(self, m):
            self.sent.append(m)

    class Cache:
        def get(self, key):
            return ("get", key)

        def resolve(self, key):
            return ("resolve", key)

    f = _Forwarding(Cache(), Conn())
    assert f.get("k") == ("get", "k") and f.resolve("p") == ("resolve", "p")
    f.put("R", "pk", "sha")
    f.alias("pk", "rk")
    assert Conn.sent == [("put", "R", "pk", "sha"), ("alias", "pk", "rk")]


def test_cli_refuses_a_bad_executor_with_exit_2():
    p = subprocess.run([sys.executable, "-m", "ptxopt.cli", "search", "gemm_tile_2x2x2", "--executor", "mars"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "unknown executor 'mars'" in p.stderr and "Traceback" not in p.stderr


def test_an_evaluation_batch_whose_worker_dies_fails_only_the_culprit(monkeypatch):
    """Through an executor, a batch whose worker died twice is split: each candidate runs alone
    once more, so only the one that kills its worker fails (an in-process stand-in executor)."""
    from ptxopt.evaluate import evaluate_many
    from ptxopt.evaluate import parallel
    from ptxopt.executor.interface import Outcome

    class Dying(LocalExecutor):  # a batch holding the "vec_st" candidate dies, as its worker would
        def _round(self, fn, args, indices, fatal, record, *, fresh_worker=False):
            died = []
            for i in indices:
                if any(c.pipeline == "vec_st" for c in args[i][1]):
                    died.append((i, True))
                else:
                    record(Outcome(i, value=fn(args[i])))
            return died

    cands = [("corpus:gemm_tile_2x2x2", p) for p in ["", "vec_ld", "vec_st", "reorder_cp"]]
    monkeypatch.setattr(parallel, "_batches", lambda items, size: iter([items]))  # one batch of all four
    out = evaluate_many(cands, cache=None, executor=Dying(0))
    assert [r.status for r in out] == ["ok", "ok", "internal", "ok"]
    assert "died" in out[2].error


def test_a_worker_running_other_code_than_the_driver_stops_the_run(monkeypatch):
    """Each task out of process first compares the worker's source digest with the driver's: a
    worker started after ptxopt's source changed is refused (fatal), in-process runs are not checked.
    The driver's snapshot is made stale here, as a merge into the tree during a run makes it."""
    from ptxopt.executor import CodeMismatch
    from ptxopt.support import digests

    digests.own_code_digests()  # the driver's snapshot
    with LocalExecutor(1) as ex:
        assert [o.value for o in ex.run(task, [("ok", 1), ("ok", 2)])] == [2, 4]
        monkeypatch.setitem(digests._CODE, "package", "0" * 16)
        with pytest.raises(CodeMismatch, match="other ptxopt code than the driver"):
            ex.run(task, [("ok", 1), ("ok", 2)])
    assert [o.value for o in LocalExecutor(0).run(task, [("ok", 3)])] == [6]


@pytest.mark.slow  # a spawned worker imports the evaluator and runs ptxas (~5 s)
def test_a_worker_evaluation_has_the_drivers_keys_or_is_refused(monkeypatch):
    """The class behind 'results equal, keys differ' between a local and a worker run: the driver's
    digests were taken before ptxopt's source changed, a worker starts after and keys its rows by
    the new digests.  Either the worker's results carry the driver's keys or the run is refused."""
    from ptxopt.evaluate import evaluate_many
    from ptxopt.support import digests

    digests.own_code_digests()
    monkeypatch.setattr(digests, "_CODE", {k: "0" * 16 for k in digests._CODE})  # stale: the tree changed
    cands = [("corpus:gemm_tile_2x2x2", p) for p in ("", "vec_ld")]
    here = [(r.key, r.status, r.cycles) for r in evaluate_many(cands, cache=None)]
    try:
        with LocalExecutor(1) as ex:
            there = [(r.key, r.status, r.cycles) for r in evaluate_many(cands, cache=None, executor=ex, workers=1)]
    except Exception as e:  # noqa: BLE001
        assert "other ptxopt code than the driver" in str(e), e
    else:
        assert there == here


def test_killing_a_pool_waits_for_its_manager_to_close_the_wakeup_pipe():
    """An interrupted pool is ended with its manager thread joined: left running, the thread closes
    the wake-up pipe while CPython 3.11's exit hook writes to it (a traceback printed on SIGTERM).
    ``shutdown()`` drops the pool's reference to the thread, so it must be taken before."""
    import time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from ptxopt.executor.local import _end

    pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
    pool.submit(time.sleep, 60)
    deadline = time.monotonic() + 30
    while not any(p.is_alive() for p in (pool._processes or {}).values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    manager, wakeup = pool._executor_manager_thread, pool._executor_manager_thread_wakeup
    assert manager is not None and manager.is_alive()
    _end(pool, kill=True)
    assert not manager.is_alive()
    assert wakeup._closed
