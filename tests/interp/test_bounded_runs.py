"""Every run is bounded: oversized launches are refused before anything is
allocated (the hardware's shared and local limits, the interpreter's memory
budget, exit 2 naming the limit), an endless kernel stops at the time limit
and on SIGTERM even where the interpreter runs in a helper thread, and a Ray
address where nothing listens is an error, not minutes of silent retries.

The oversized cases are a table; the sizes are those that broke (a grid of a
billion blocks, ``buffer_bytes: 1e11``, 4 GiB of dynamic shared memory) or,
where the old code allocated in full, just past the limit (so that a
regression costs a few MiB, not gigabytes).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ptxopt.support import cancel
from ptxopt.interp import run_kernel
from ptxopt.interp.errors import StepLimit
from ptxopt.interp.limits import ENV, MAX_LOCAL_PER_THREAD, MAX_SHARED_PER_BLOCK, MemoryLimit
from ptxopt.ptx.parser import parse
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


def _kernel(decl: str = "", body: str = "") -> str:
    return f"""
.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out)
{{
    {decl}
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {body}
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r1;
    ret;
}}
"""


STORE = _kernel()
#: ``out[i] += 2`` until it equals an odd value: never (the counter stays even)
ENDLESS = """
.version 8.0
.target sm_89
.address_size 64

.visible .entry spin(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r3, [n];
    or.b32 %r3, %r3, 1;
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0;
LOOP:
    add.u32 %r1, %r1, 2;
    setp.ne.u32 %p1, %r1, %r3;
    @%p1 bra LOOP;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""

# id, PTX, grid, block, dynamic shared bytes, buffer bytes, budget (GiB; None: the default), words of the message
OVERSIZED = [
    ("grid of 1e9 blocks", STORE, (10**9, 1, 1), (32, 1, 1), 0, 64, None, ["29.8 GiB", "budget of 4 GiB"]),
    ("4 GiB dynamic shared", STORE, (1, 1, 1), (32, 1, 1), 4 << 30, 128, None,
     ["4 GiB of shared memory", f"{MAX_SHARED_PER_BLOCK:,} bytes"]),
    ("declared shared past the hardware", _kernel(f".shared .align 4 .b8 sm[{MAX_SHARED_PER_BLOCK + 4}];"),
     (1, 1, 1), (1, 1, 1), 0, 64, None, ["shared memory per block", f"{MAX_SHARED_PER_BLOCK:,} bytes"]),
    ("declared local past the hardware", _kernel(f".local .align 4 .b8 lm[{MAX_LOCAL_PER_THREAD + 4}];"),
     (1, 1, 1), (1, 1, 1), 0, 64, None, [".local memory per thread", f"{MAX_LOCAL_PER_THREAD:,} bytes"]),
    ("buffers over a small budget", STORE, (1, 1, 1), (32, 1, 1), 0, 4 * MIB, 1 / 1024, ["budget of 1 MiB"]),
    ("coverage flags over a small budget", STORE, (2048, 1, 1), (1024, 1, 1), 0, 64, 1 / 1024,
     ["grid (2048,1,1) x block (1024,1,1)", "budget of 1 MiB"]),
]


@pytest.mark.parametrize("ptx, grid, block, shared, nbytes, budget, words",
                         [c[1:] for c in OVERSIZED], ids=[c[0] for c in OVERSIZED])
def test_oversized_launch_is_refused_naming_the_limit(monkeypatch, ptx, grid, block, shared, nbytes, budget, words):
    if budget is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, repr(budget))
    with pytest.raises(MemoryLimit) as e:
        run_kernel(parse(ptx), None, grid, block, [np.zeros(nbytes, np.uint8)], shared, coverage=True)
    for w in words:
        assert w in str(e.value)


def test_a_launch_within_the_limits_runs(monkeypatch):
    monkeypatch.setenv(ENV, repr(4 / 1024))  # 32 threads x 64 KiB of .local, 227 KiB of shared: 2.3 MiB
    ptx = _kernel(f".shared .align 4 .b8 sm[{MAX_SHARED_PER_BLOCK}];\n"
                  f"    .local .align 4 .b8 lm[{64 * 1024}];")
    res = run_kernel(parse(ptx), None, (2, 1, 1), (32, 1, 1), [np.zeros(128, np.uint8)], 0, coverage=True)
    assert res.buffers[0].view(np.uint32).tolist() == list(range(32))


def test_a_callees_local_stack_is_bounded():
    ptx = """
.version 8.0
.target sm_89
.address_size 64

.func f()
{
    .local .align 4 .b8 lm[%d];
    ret;
}

.visible .entry k(.param .u64 out)
{
    call f, ();
    ret;
}
""" % (MAX_LOCAL_PER_THREAD + 4)
    with pytest.raises(MemoryLimit, match=r"f: .* of \.local memory per thread"):
        run_kernel(parse(ptx), None, (1, 1, 1), (1, 1, 1), [np.zeros(4, np.uint8)])


def _contract(tmp_path, **fields) -> Path:
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"grid": [1, 1, 1], "block": [32, 1, 1], **fields}))
    return p


# the CLI: exit 2 and one line naming the limit, before anything is allocated
CLI_OVERSIZED = [
    ("grid of 1e9 blocks", lambda tmp: ["--grid", "1000000000,1,1", "--block", "32,1,1"], "budget of 4 GiB"),
    ("buffer_bytes 1e11", lambda tmp: ["--contract", _contract(tmp, buffer_bytes=10**11)], "93.1 GiB"),
    ("shared_bytes 4 GiB", lambda tmp: ["--contract", _contract(tmp, shared_bytes=4 << 30)],
     "no GPU launches more than"),
]


@pytest.mark.parametrize("extra, words", [c[1:] for c in CLI_OVERSIZED], ids=[c[0] for c in CLI_OVERSIZED])
def test_verify_refuses_an_oversized_launch_with_exit_2(tmp_path, monkeypatch, extra, words):
    monkeypatch.delenv(ENV, raising=False)
    k = tmp_path / "k.ptx"
    k.write_text(STORE)
    r = run_cli("verify", k, k, "--no-ptxas", *extra(tmp_path))
    assert r.exit_code == 2, r.stderr
    assert words in r.stderr and r.stderr.count("\n") == 1
    assert ("--interp-memory" in r.stderr) == ("budget" in r.stderr)  # the budget can be raised, the hardware not
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr


def test_interp_memory_raises_the_budget(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "4")  # restored after the test (the option sets it for worker processes)
    k = tmp_path / "k.ptx"
    k.write_text(STORE)
    c = _contract(tmp_path, buffer_bytes=4 * MIB)
    small = run_cli("verify", k, k, "--no-ptxas", "--contract", c, "--interp-memory", "0.001")
    assert small.exit_code == 2 and "budget of 1.02 MiB" in small.stderr
    ok = run_cli("verify", k, k, "--no-ptxas", "--contract", c, "--interp-memory", "0.1", "--trials", "1",
                 "--no-layouts")
    assert ok.exit_code == 0, ok.stderr
    assert "--interp-memory GiB" in run_cli("verify", "--help").stdout


# ---------------------------------------------------------------------------
# stopping an endless kernel in a helper thread


def _spin_in_thread(wrap, max_steps: int = 50_000_000):
    """Run ENDLESS in a helper thread under ``wrap``; what it raised (or the thread, still running)."""
    out = {}

    def body():
        try:
            with wrap():
                run_kernel(parse(ENDLESS), None, (1, 1, 1), (1, 1, 1), [np.zeros(4, np.uint32), 1],
                           max_steps=max_steps)
        except BaseException as e:  # noqa: BLE001 -- what stopped it is the result
            out["raised"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


def test_deadline_stops_the_interpreter_in_a_helper_thread():
    from ptxopt.evaluate.deadline import CandidateTimeout, deadline

    t, out = _spin_in_thread(lambda: deadline(0.2))
    t.join(60)  # a guard for the old code (no limit off the main thread): not a timing assertion
    assert not t.is_alive(), "the helper thread ignored its deadline"
    assert isinstance(out.get("raised"), CandidateTimeout)


def test_stop_ends_the_interpreter_in_every_thread():
    from contextlib import nullcontext

    t, out = _spin_in_thread(nullcontext)
    try:
        time.sleep(0.2)
        cancel.stop()
        t.join(60)
    finally:
        cancel.resume()
    assert not t.is_alive(), "the helper thread ignored the stop"
    assert isinstance(out.get("raised"), cancel.Stopped)


def test_the_step_budget_still_stops_an_endless_kernel():
    with pytest.raises(StepLimit, match="step limit of 3000 exceeded"):
        run_kernel(parse(ENDLESS), None, (1, 1, 1), (1, 1, 1), [np.zeros(4, np.uint32), 1], max_steps=3000)


def _ptxopt(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "ptxopt.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow
def test_eval_timeout_stops_the_loop_profile(tmp_path):
    k = tmp_path / "spin.ptx"
    k.write_text(ENDLESS)
    p = _ptxopt("eval", k, "--timeout", "2", "--no-cache", "--json")
    try:
        out, err = p.communicate(timeout=60)  # a guard: the old code ran on for the whole step budget
    finally:
        p.kill()
    assert p.returncode == 1, err
    r = json.loads(out)
    assert r["status"] == "timeout" and "2 s" in r["error"]


@pytest.mark.slow
@pytest.mark.parametrize("command", [["eval"], ["search", "--max-steps", "1", "-q"]],
                         ids=["eval", "search"])
def test_sigterm_ends_a_run_whose_measure_thread_spins(tmp_path, command):
    k = tmp_path / "spin.ptx"
    k.write_text(ENDLESS)
    p = _ptxopt(*command, k, "--timeout", "600", "--cache", tmp_path / "c.sqlite", "--json")
    try:
        time.sleep(6)  # into the loop profile (it never ends)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)  # a guard: the old code waited for the measure thread
    finally:
        p.kill()
    assert p.returncode == 143, err
    assert "terminated (SIGTERM)" in err
    if command[0] == "search":  # search promises its JSON document on an interrupt
        json.loads(out)


# ---------------------------------------------------------------------------
# Ray: an address where nothing listens


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_ray_address_is_said_at_once():
    from ptxopt.executor.raycluster import unreachable

    port = _closed_port()
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in unreachable(f"127.0.0.1:{port}", 2.0)
    assert "cannot reach" in unreachable(f"ray://127.0.0.1:{port}", 2.0)
    assert unreachable("auto") is None  # Ray finds that address itself


@pytest.mark.slow
def test_eval_on_an_unreachable_ray_cluster_exits_2(tmp_path):
    pytest.importorskip("ray")
    k = tmp_path / "k.ptx"
    k.write_text(STORE)
    p = _ptxopt("eval", k, "--executor", f"ray:127.0.0.1:{_closed_port()}", "-j", "2", "--no-cache")
    try:
        out, err = p.communicate(timeout=60)  # a guard: the old code retried for minutes
    finally:
        p.kill()
    assert p.returncode == 2, err
    assert "cannot reach the Ray cluster at 127.0.0.1:" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_ray_executor_refuses_an_unreachable_address_in_python():
    pytest.importorskip("ray")
    from ptxopt.executor import make_executor
    from ptxopt.executor.raycluster import RayUnreachable

    with pytest.raises(RayUnreachable, match="cannot reach the Ray cluster"):
        make_executor(f"ray:127.0.0.1:{_closed_port()}", 1).connect()
