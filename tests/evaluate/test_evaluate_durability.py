"""A run killed with SIGKILL loses nothing it had already committed to the cache."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate import Candidate, evaluate_many

    kernels = [k for k in select("gemm_tile") if k.shape_dict["m"] * k.shape_dict["n"] * k.shape_dict["k"] <= 64]
    cands = [Candidate.from_corpus(k, p) for k in kernels for p in ("", "vec_ld", "reorder_cp")]

    def reported(i, r):
        print(i, r.key, r.status, flush=True)  # after the result was committed

    evaluate_many(cands, workers=int(sys.argv[2]), cache=sys.argv[1], batch=1, on_result=reported)
    print("finished", flush=True)
""")


@pytest.mark.parametrize("workers", [0, 2])
def test_sigkill_loses_nothing_committed(tmp_path, workers):
    db_path = tmp_path / "eval.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(db_path), str(workers)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    reported = []
    deadline = time.monotonic() + 40
    try:
        while len(reported) < 4 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or line.startswith("finished"):
                break
            i, key, status = line.split()
            reported.append(key)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run, workers included, mid-flight
        proc.wait()
    assert len(reported) >= 4, proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL

    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {k for (k,) in db.execute("SELECT key FROM results")}
    assert set(reported) <= keys  # every result reported as committed is there
    from ptxopt.kernels.corpus import select

    small = [k for k in select("gemm_tile") if k.shape_dict["m"] * k.shape_dict["n"] * k.shape_dict["k"] <= 64]
    assert len(keys) < 3 * len(small)  # it really was killed before the end
    # and the evaluator can carry on with the same file
    from ptxopt.evaluate import EvalCache

    with EvalCache(db_path) as c:
        assert all(c.get(k) is not None for k in reported)
