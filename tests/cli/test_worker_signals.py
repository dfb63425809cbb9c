"""``search -j 2``'s workers die with their parent and stay quiet on Ctrl-C
(ptxopt.support.workers): no orphans, no tracebacks.

Each test starts the real CLI in its own session with a fresh cache (so the
workers have work), waits until both workers exist, and signals it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import with_default_sigint

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _workers(pid: int) -> list[int]:
    """The pool's worker processes (not the resource tracker, not a ptxas)."""
    found = []
    for c in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes():
                found.append(c)
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has died (re-parented, perhaps never reaped here)


def _start(tmp_path):
    """``search gemm_tile -j 2`` with a fresh cache, and its two workers once they exist."""
    proc = subprocess.Popen(with_default_sigint([sys.executable, "-m", "ptxopt.cli", "search", "gemm_tile", "-j",
                                                 "2", "-q", "--cache", str(tmp_path / "eval.sqlite")]),
                            cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(workers := _workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(workers) == 2, proc.communicate()
    return proc, workers


def _gone_within(pids, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def test_workers_die_with_a_killed_parent(tmp_path):
    proc, workers = _start(tmp_path)
    try:
        os.kill(proc.pid, signal.SIGKILL)  # the parent alone: nothing tells the workers
        proc.wait()
        assert _gone_within(workers, 5), [p for p in workers if _alive(p)]
    finally:
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.parametrize("delay", [0.3, 2.0], ids=["importing", "working"])
def test_ctrl_c_exits_130_without_a_worker_traceback(tmp_path, delay):
    """SIGINT to the whole process group, as a terminal sends it: while the
    workers are still importing, and once they work."""
    proc, workers = _start(tmp_path)
    try:
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("ptxopt: interrupted after"), err
    assert _gone_within(workers, 5)


@pytest.mark.parametrize("to_group", [False, True], ids=["parent", "group"])
def test_sigterm_takes_the_ctrl_c_path_and_exits_143(tmp_path, to_group):
    """``timeout``/``docker stop`` signal the parent alone, a batch scheduler the
    whole group: either way what finished is written (``--json``) and the exit
    code is the table's ``terminated``."""
    out = tmp_path / "out.json"
    proc = subprocess.Popen([sys.executable, "-m", "ptxopt.cli", "search", "gemm_tile", "-j", "2", "-q",
                             "--cache", str(tmp_path / "eval.sqlite"), "--json", str(out)], cwd=ROOT,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(workers := _workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        time.sleep(1.0)
        (os.killpg if to_group else os.kill)(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    from ptxopt.cli.exitcodes import TERMINATED

    assert proc.returncode == TERMINATED == 143, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("ptxopt: terminated (SIGTERM) after"), err
    import json

    assert json.loads(out.read_text())["interrupted"] is True
    assert _gone_within(workers, 5)


# a ptxas that SIGKILLs the worker running it (its parent) when compiling a kernel marked KILLME;
# with ONCE=FILE only the first time
_KILLER = """#!/bin/bash
for a in "$@"; do case "$a" in *.ptx) src="$a";; esac; done
if [ -n "$src" ] && grep -q KILLME "$src"; then
  if [ -z "$ONCE" ] || [ ! -e "$ONCE" ]; then [ -n "$ONCE" ] && : > "$ONCE"; kill -9 $PPID; exit 1; fi
fi
exec "{real}" "$@"
"""


@pytest.mark.parametrize("once", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["dies-twice", "dies-once"])
def test_a_dead_worker_fails_only_the_kernel_it_held(tmp_path, once):
    """One of two kernels kills its worker: the pool is rebuilt, the other is
    searched; the culprit, retried once alone, fails only if it kills again."""
    import json

    from ptxopt.evaluate import Candidate
    from ptxopt.toolchain import installed_ptxas

    fake = tmp_path / "ptxas"
    fake.write_text(_KILLER.format(real=installed_ptxas()[0].path))
    fake.chmod(0o755)
    src = tmp_path / "kernels"
    src.mkdir()
    for name in ("gemm_tile_2x2x2", "gemm_tile_2x2x4"):
        text = Candidate.from_corpus(name, "").ptx
        (src / f"{name}.ptx").write_text(text + ("\n// KILLME\n" if name == "gemm_tile_2x2x4" else ""))
    env = {**os.environ, "PTXOPT_PTXAS": str(fake), "PYTHONPATH": str(ROOT)}
    if once:
        env["ONCE"] = str(tmp_path / "once")
    out = tmp_path / "out.json"
    p = subprocess.run([sys.executable, "-m", "ptxopt.cli", "search", str(src), "-j", "2", "-q", "--max-steps", "1",
                        "--cache", str(tmp_path / "eval.sqlite"), "--json", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert out.exists(), p.stderr
    doc = json.loads(out.read_text())
    errors = {k["kernel"].rsplit("/", 1)[-1]: k["error"] for k in doc["kernels"]}
    assert len(errors) == 2, p.stderr
    assert "BrokenProcessPool" not in p.stderr
    if once:
        assert p.returncode == 0 and not any(errors.values()), p.stderr
    else:
        assert p.returncode == 1, p.stderr
        assert [k for k, e in errors.items() if e] == ["gemm_tile_2x2x4.ptx"], errors
        assert "worker process died" in errors["gemm_tile_2x2x4.ptx"]
