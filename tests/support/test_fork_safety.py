"""A cache or move memo opened before a fork is left alone by the child (ptxopt.support.forksafe).

Each scenario runs in its own interpreter (``sys.exit`` must really end the
child): the parent writes rows, forks, writes more and closes; the child uses
the inherited object only after that and ends by ``sys.exit``, ``del``,
``close()`` or ``os._exit``. Every row of both must be in the file.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCENARIO = r"""
import os, sys, time
from ptxopt.evaluate import EvalCache, EvalResult
from ptxopt.evaluate.move_memo import MoveMemo

path, how = sys.argv[1], sys.argv[2]
def res(i):
    return EvalResult(kernel="k", pipeline=f"p{i}", status="ok", backend="sim", arch="sm_89", estimate=True,
                      cycles=1.0, key=f"key{i}")
c = EvalCache(path)
memo = MoveMemo(path + ".moves.sqlite")
for i in range(5):
    c.put(res(i))
    memo.put(f"d{i}", {"vec_ld": None})
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)  # the parent has written more and closed its connections
    c.put(res(100))
    memo.put("d100", {"vec_ld": None})
    if how == "exit":
        sys.exit(0)
    if how == "del":
        del c, memo
        sys.exit(0)
    if how == "close":
        c.close()
        memo.close()
        sys.exit(0)
    os._exit(0)
os.close(r)
for i in range(5, 8):
    c.put(res(i))
    memo.put(f"d{i}", {"vec_ld": None})
c.close()
memo.close()
os.write(w, b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("how", ["exit", "del", "close", "_exit"])
def test_a_child_never_loses_the_parents_rows_nor_its_own(tmp_path, how):
    path = tmp_path / "c.sqlite"
    p = subprocess.run([sys.executable, "-c", _SCENARIO, str(path), how], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(path) as db:
        keys = {k for (k,) in db.execute("SELECT key FROM results")}
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert keys == {f"key{i}" for i in (*range(8), 100)}
    with sqlite3.connect(f"{path}.moves.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 9


def test_the_inherited_connection_is_abandoned_not_closed(tmp_path):
    """In the child the parent's connection object is kept, unused: the cache opens its own."""
    code = r"""
import os, sys
from ptxopt.evaluate import EvalCache
from ptxopt.support import forksafe
c = EvalCache(sys.argv[1])
inherited = c._db
pid = os.fork()
if pid == 0:
    ok = c._db is None and inherited in forksafe._ABANDONED and c.db is not inherited and len(c) == 0
    c.close()
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c.sqlite")], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
