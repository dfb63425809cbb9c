"""Ray as the executor: a local Ray head on 127.0.0.1, a small search through it,
the same results and cache as the local executor; the failure rules on Ray; the GPU actor
logic on CPU (num_gpus=0, the sim backend standing in for the gpu one: nothing here is measured
on a GPU). Slow tier: starting Ray takes ~10-20 s here."""

from __future__ import annotations

import sqlite3

import pytest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

KERNELS = ("gemm_tile_2x2x2", "gemm_tile_2x2x4")


@pytest.fixture(scope="module")
def head():
    from ptxopt.executor.raycluster import runtime_env

    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env=runtime_env(), log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _search(tmp_path, tag, **kw):
    from ptxopt.evaluate import Candidate
    from ptxopt.search.meter import EvalOptions
    from ptxopt.search.run import SearchConfig, search_many

    cache = tmp_path / f"{tag}.sqlite"
    cfg = SearchConfig(max_steps=1, options=EvalOptions(cache=str(cache)))
    res = search_many([(Candidate.from_corpus(k, ""), None) for k in KERNELS], cfg, **kw)
    db = sqlite3.connect(cache)
    keys = (sorted(db.execute("SELECT key, status, cycles FROM results")),
            sorted(db.execute("SELECT key, result_key FROM pipelines")))
    db.close()
    return [(r.kernel, r.pipeline, r.verdict, r.best_cycles, r.evaluations, r.error) for r in res], keys


def test_a_search_through_ray_equals_the_local_one(head, tmp_path):
    here = _search(tmp_path, "local")
    assert all(r[-1] is None for r in here[0]) and here[1][0]
    assert _search(tmp_path, "ray", executor="ray", workers=2) == here  # same verdicts, same cache keys


def test_failure_rules_on_ray(head, tmp_path):
    from ptxopt.executor import DIED, make_executor
    from ptxopt.testing.executor_tasks import Fatal, task

    ex = make_executor("ray", 2)
    once = tmp_path / "once"
    out = ex.run(task, [("ok", 1), ("raise", 2), ("die", 0), ("die-once", str(once)), ("ok", 5)], fatal=(Fatal,))
    assert [out[0].value, out[4].value] == [2, 10]
    assert out[1].error == "ValueError: task 2 failed"
    assert out[2].died == DIED
    assert out[3].ok and once.exists()
    with pytest.raises(Fatal):
        ex.run(task, [("fatal", 0)], fatal=(Fatal,))
    assert ex.stats["tasks"] >= 7 and ex.stats["sent_bytes"] > 0
    ex.close()
    assert ray.is_initialized()  # a cluster the caller joined is left running


def test_measurement_actors_hold_their_backend_and_match_local(head):
    """The ActorFleet logic on CPU: 2 actors (num_gpus=0) with the sim backend stand in for GPUs;
    a chunk is spread over both, results come back in order and equal the local backend's."""
    from ptxopt.evaluate import evaluate_many
    from ptxopt.executor.gpu_actors import ActorFleet
    from ptxopt.measure.backend_registry import register_backend
    from ptxopt.measure.sim import SimBackend

    pipes = ["", "vec_ld", "vec_st", "reorder_cp", "maxnreg_32"]
    cands = [("corpus:gemm_tile_2x2x2", p) for p in pipes]
    here = evaluate_many(cands, cache=None)
    fleet = ActorFleet("sim", actors=2, num_gpus=0)
    try:
        register_backend("sim", lambda: fleet, replace=True)
        there = evaluate_many(cands, cache=None)
        info = fleet.info()
    finally:
        register_backend("sim", SimBackend, replace=True)
        fleet.close()
    assert [(r.key, r.status, r.cycles, r.equivalence) for r in there] == \
           [(r.key, r.status, r.cycles, r.equivalence) for r in here]
    assert len({i["pid"] for i in info}) == 2 and all(i["measured"] > 0 for i in info)


def test_evaluations_through_ray_equal_the_local_ones(head, tmp_path):
    """eval --executor ray: batches as tasks; same results and the same cache rows as in process."""
    from ptxopt.evaluate import evaluate_many

    cands = [("corpus:gemm_tile_2x2x2", p) for p in ["", "vec_ld", "vec_st", "reorder_cp", "no_such_pass"]]

    def run(tag, **kw):
        cache = tmp_path / f"{tag}.sqlite"
        out = evaluate_many(cands, cache=cache, **kw)
        db = sqlite3.connect(cache)
        rows = (sorted(db.execute("SELECT key, status, cycles FROM results")),
                sorted(db.execute("SELECT key, result_key FROM pipelines")))
        db.close()
        return [(r.key, r.status, r.cycles, r.equivalence) for r in out], rows

    here = run("here")
    assert here[0][-1][1] == "illegal" and here[1][0]
    assert run("ray", executor="ray", workers=2) == here


def _ray_task_running(session: int) -> bool:
    """A Ray worker in process session ``session`` is running one of our tasks (its title is ``ray::_call``)."""
    import os
    from pathlib import Path

    for p in Path("/proc").glob("[0-9]*"):
        try:
            if b"ray::_call" in (p / "cmdline").read_bytes() and os.getsid(int(p.name)) == session:
                return True
        except (OSError, ProcessLookupError):
            continue
    return False


def test_sigterm_during_a_ray_search_exits_143_and_writes_what_finished(tmp_path):
    """ray.init replaces the driver's SIGTERM handler with an abort (exit 134): ptxopt puts its own
    back, so SIGTERM cancels the tasks, writes the JSON (interrupted) and exits 143."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "out.json"
    proc = subprocess.Popen([sys.executable, "-m", "ptxopt.cli", "search", "gemm_tile", "--executor", "ray", "-j", "2",
                             "-q", "--cache", str(tmp_path / "c.sqlite"), "--json", str(out)], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _ray_task_running(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "terminated (SIGTERM)" in err
    assert json.loads(out.read_text())["interrupted"] is True
