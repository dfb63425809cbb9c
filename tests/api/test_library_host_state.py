"""A library call leaves the host program's process state as it found it
(:mod:`ptxopt.support.host_state`): a table of the public entry points, each called
by a host that has its own SIGALRM/SIGTERM/SIGINT handlers, an armed
``ITIMER_REAL``, its own GC thresholds and environment -- with a plain
pipeline, and with a plugin pass that tampers with all of it.

The host's timer is re-armed with what it had left minus the call's time;
one that runs out during the call rings the host's handler once, on return,
never in the middle of ptxopt.
"""

from __future__ import annotations

import gc
import io
import itertools
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from ptxopt.passes import FunctionPass, register, unregister

SCALE = Path(__file__).resolve().parents[2] / "examples" / "mul_pow2" / "tests" / "scale.ptx"
SIGNALS = (signal.SIGALRM, signal.SIGTERM, signal.SIGINT)
HOST_TIMER = 100.0
#: the functions of the entry points (a ring with one of them on the stack came in the middle of a call)
CALLS = {"optimize", "evaluate", "evaluate_many", "rewrite"}  # seconds on the host's ITIMER_REAL before the call


@dataclass(frozen=True)
class Tamper(FunctionPass):
    """A plugin pass that changes every piece of process state it can reach."""

    kind: ClassVar[str] = "tamper_plugin"
    family: ClassVar[str] = "test_tamper"

    def run_function(self, fn, report, module) -> None:
        sys.stdout = io.StringIO()
        sys.stderr = io.StringIO()
        os.environ["PTXOPT_TAMPERED"] = "1"
        os.environ.pop("PTXOPT_HOST_VAR", None)
        gc.set_threshold(1, 1, 1)
        gc.disable()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(frozen=True)
class Sleep(FunctionPass):
    """A plugin pass that takes longer than the host's short timer has left."""

    kind: ClassVar[str] = "sleep_plugin"
    family: ClassVar[str] = "test_sleep"

    def run_function(self, fn, report, module) -> None:
        time.sleep(SLEEP_S)


SLEEP_S = 0.2  # the sleep_plugin pass: every call takes at least this long (SHORT_TIMER runs out during it)
SHORT_TIMER = 0.05


_calls = itertools.count()


def _kernel() -> str:
    """The kernel, a text no earlier call saw (no in-process memo skips the passes)."""
    return SCALE.read_text() + f"// call {next(_calls)}\n"


def _optimize(pipeline):
    from ptxopt import optimize

    return optimize(_kernel(), pipeline, estimate=False)


def _evaluate(pipeline):
    from ptxopt.evaluate import evaluate

    return evaluate(_kernel(), pipeline, cache=None)


def _evaluate_many(pipeline):
    from ptxopt.evaluate import evaluate_many

    return evaluate_many([(_kernel(), pipeline)], cache=None)


def _triton_hook(pipeline):
    pytest.importorskip("triton")
    import ptxopt.triton as pt
    from ptxopt.testing.triton_corpus import compile_kernel

    pt.enable(pipeline, estimate=False, disk_cache=False)
    try:
        compile_kernel("relu_scale")
        assert pt.report() and pt.report()[-1].pipeline == pipeline  # the hook ran the passes
    finally:
        pt.disable()


ENTRY_POINTS = [_optimize, _evaluate, _evaluate_many,
                pytest.param(_triton_hook, marks=pytest.mark.slow, id="triton_hook")]


def _ids(f):
    return f.__name__.strip("_") if callable(f) else None


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A host program's state: its own handlers, GC thresholds and environment
    (put back afterwards whatever the call did)."""
    if sys.platform == "win32":
        pytest.skip("no SIGALRM")
    rung: list[list[str]] = []  # per ring: the ptxopt frames it interrupted

    def on_alarm(signum, frame):
        inside = []  # the entry points' own frames on the stack: rung in the middle of a call
        while frame is not None:
            code = frame.f_code
            if f"{os.sep}ptxopt{os.sep}" in code.co_filename and code.co_name in CALLS:
                inside.append(f"{code.co_filename}:{frame.f_lineno} ({code.co_name})")
            frame = frame.f_back
        rung.append(inside)

    def on_term(signum, frame):
        pass

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    threshold, enabled, stdout, stderr = gc.get_threshold(), gc.isenabled(), sys.stdout, sys.stderr
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.set_threshold(1234, 11, 12)
    monkeypatch.setenv("PTXOPT_HOST_VAR", "kept")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    monkeypatch.setenv("PTXOPT_CACHE", str(tmp_path / "ptxopt" / "c.sqlite"))
    register(Tamper, replace=True)
    register(Sleep, replace=True)
    yield rung
    signal.setitimer(signal.ITIMER_REAL, 0)
    for s, h in saved.items():
        signal.signal(s, h)
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()
    sys.stdout, sys.stderr = stdout, stderr
    os.environ.pop("PTXOPT_TAMPERED", None)
    unregister("tamper_plugin")
    unregister("sleep_plugin")


def _snapshot() -> dict:
    return {"handlers": {s: signal.getsignal(s) for s in SIGNALS}, "stdout": sys.stdout, "stderr": sys.stderr,
            "gc": (gc.isenabled(), gc.get_threshold()), "environ": dict(os.environ)}


@pytest.mark.parametrize("pipeline", ["maxnreg_128,sleep_plugin", "tamper_plugin,sleep_plugin"])
@pytest.mark.parametrize("call", ENTRY_POINTS, ids=_ids)
def test_the_hosts_state_is_as_it_was(host, call, pipeline):
    before = _snapshot()
    signal.setitimer(signal.ITIMER_REAL, HOST_TIMER)
    t0 = time.monotonic()
    call(pipeline)
    took = time.monotonic() - t0
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    assert _snapshot() == before
    assert host == []  # the host's timer did not ring
    # re-armed with what it had left minus the call's time (not disarmed, not given its full time
    # again); the time between computing what is left and re-arming (a preempted process: a
    # scheduler slice or more) cannot be counted, hence the slack, half of what the call took at least
    assert 0 < left <= HOST_TIMER - took + SLEEP_S / 2 and interval == 0


@pytest.mark.parametrize("call", ENTRY_POINTS, ids=_ids)
def test_a_host_timer_that_runs_out_during_the_call_rings_on_return(host, call):
    before = _snapshot()
    signal.setitimer(signal.ITIMER_REAL, SHORT_TIMER)
    call("sleep_plugin")  # the call takes longer than the timer has left
    assert len(host) == 1, host  # rung once ...
    assert host[0] == [], host  # ... and not in the middle of ptxopt
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert _snapshot() == before


def test_a_periodic_host_timer_keeps_its_interval(host):
    signal.setitimer(signal.ITIMER_REAL, SHORT_TIMER, HOST_TIMER)
    _optimize("sleep_plugin")
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    assert len(host) == 1 and interval == HOST_TIMER and 0 < left <= HOST_TIMER


def test_a_call_from_another_thread_leaves_the_hosts_timer_running(host):
    """Signals belong to the main thread: a call from another thread neither
    stops nor re-arms the host's timer (ptxopt's own limits do not apply there)."""
    import threading

    signal.setitimer(signal.ITIMER_REAL, HOST_TIMER)
    before = _snapshot()
    t = threading.Thread(target=_optimize, args=("tamper_plugin",))
    t.start()
    t.join()
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    after = _snapshot()
    assert 0 < left < HOST_TIMER and host == []
    # what a thread can put back is put back; the handlers the plugin changed from a
    # thread (it may not: signal.signal raises there, a pass failure) are the host's
    assert after == before


def test_a_deadline_inside_another_timer_gives_it_back(host):
    """ptxopt's own time limit (:func:`ptxopt.evaluate.deadline.deadline`, used
    without the library guard, e.g. by the CLI) re-arms a timer that was
    running; an enclosing deadline that ran out meanwhile rings on exit."""
    from ptxopt.evaluate.deadline import CandidateTimeout, deadline

    signal.setitimer(signal.ITIMER_REAL, HOST_TIMER)
    with deadline(5):
        time.sleep(SLEEP_S)
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    assert 0 < left <= HOST_TIMER - SLEEP_S + SLEEP_S / 2 and host == []
    with pytest.raises(CandidateTimeout):
        with deadline(SHORT_TIMER):
            with deadline(5):
                time.sleep(SLEEP_S)
            pytest.fail("the enclosing limit ran out inside: it rings when the inner one ends")
    assert signal.getsignal(signal.SIGALRM) is not None and host == []


def test_a_helper_thread_outliving_the_call_never_puts_back_an_old_environment(monkeypatch):
    """optimize()'s estimate runs in a ptxopt helper thread and may end after optimize() raised and the
    host changed its environment: the helper must not restore its stale snapshot (a fake ptxas set by a
    test came back after the test had removed it, and every later compile crashed)."""
    import os
    import threading

    from ptxopt.support.host_state import preserved

    monkeypatch.setenv("PTXOPT_TEST_HELPER_ENV", "during the call")
    entered, leave = threading.Event(), threading.Event()

    def helper():
        with preserved():
            entered.set()
            leave.wait(5)

    t = threading.Thread(target=helper, name="ptxopt-estimate_0")
    t.start()
    entered.wait(5)
    monkeypatch.delenv("PTXOPT_TEST_HELPER_ENV")  # the host moves on while the helper still runs
    leave.set()
    t.join(5)
    assert "PTXOPT_TEST_HELPER_ENV" not in os.environ
