"""A toolchain that fails on its own is not a verdict about the kernel.

ptxas or nvdisasm killed by a signal, out of memory, or hung past the time
limit is a *transient* ``toolchain`` failure: retried once, never cached,
never "bad input", exit 5 -- while ptxas really rejecting a candidate stays a
cached ``ptxas`` failure. Fake binaries (``PTXOPT_PTXAS``/``PTXOPT_NVDISASM``)
wrap the real ones and misbehave only on compiles, as ``FAKE_MODE`` says.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptxopt.cli.exitcodes import BAD_INPUT, SEVERITY, TABLE, TOOLCHAIN
from ptxopt.evaluate import Candidate, evaluate
from ptxopt.toolchain import ToolCrashed, ToolchainTimeout, find_nvdisasm, installed_ptxas
from ptxopt.toolchain.process import crash_reason, run_tool, time_limit

ROOT = Path(__file__).resolve().parents[2]
SMALL = "gemm_tile_2x2x2"

# misbehaves only when compiling/disassembling (the locator's --version/--help probes pass through);
# FAKE_ONCE=FILE: misbehave only on the first such call
_FAKE = """#!/bin/bash
case " $* " in *"{trigger}"*) ;; *) exec "{real}" "$@";; esac
mode="$FAKE_MODE"
if [ -n "$FAKE_ONCE" ]; then if [ -e "$FAKE_ONCE" ]; then mode=""; else : > "$FAKE_ONCE"; fi; fi
case "$mode" in
  segv) kill -SEGV $$ ;;
  oom) echo "{name} fatal   : Memory allocation failure"; exit 1 ;;
  hang) exec sleep 30 ;;
esac
exec "{real}" "$@"
"""


def _fake(tmp_path: Path, name: str, real: Path, trigger: str) -> Path:
    p = tmp_path / f"fake-{name}"
    p.write_text(_FAKE.format(real=real, name=name, trigger=trigger))
    p.chmod(0o755)
    return p


@pytest.fixture
def fake_ptxas(tmp_path, monkeypatch):
    real = installed_ptxas()[0].path
    p = _fake(tmp_path, "ptxas", real, "-arch=")
    monkeypatch.setenv("PTXOPT_PTXAS", str(p))
    return p


@pytest.fixture
def fake_nvdisasm(tmp_path, monkeypatch):
    p = _fake(tmp_path, "nvdisasm", find_nvdisasm().path, ".cubin")
    monkeypatch.setenv("PTXOPT_NVDISASM", str(p))
    return p


def _rows(cache: Path) -> int:
    if not cache.exists():
        return 0
    with sqlite3.connect(cache) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def _unique(pipeline: str = "") -> Candidate:
    # a text no earlier test compiled: the process's compile memo must not answer
    c = Candidate.from_corpus(SMALL, pipeline)
    from dataclasses import replace

    return replace(c, ptx=c.ptx + f"\n// test_tool_faults {time.time_ns()}\n")


# ---------------------------------------------------------------------------
# the classification, in one place


def test_crash_reason_classifies_signals_memory_and_internal_errors():
    assert crash_reason(-11, "") == "was killed by SIGSEGV"
    assert crash_reason(-9, "") == "was killed by SIGKILL"
    assert crash_reason(1, "ptxas fatal   : Memory allocation failure") == "ran out of memory"
    assert crash_reason(1, "nvdisasm fatal : Internal error: bad thing") == "hit an internal error"
    assert crash_reason(255, "ptxas kernel.ptx, line 3; error   : syntax error") is None  # a real rejection
    assert crash_reason(0, "Memory allocation failure") is None


def test_a_crash_is_retried_once_and_then_raised(tmp_path):
    once = tmp_path / "once"
    script = tmp_path / "t.sh"
    script.write_text(f'#!/bin/bash\nif [ -e {once} ]; then echo fine; exit 0; fi\n: > {once}\nkill -SEGV $$\n')
    script.chmod(0o755)
    assert run_tool([script], timeout=5).output.strip() == "fine"  # the retry succeeded
    always = tmp_path / "a.sh"
    always.write_text("#!/bin/bash\nkill -SEGV $$\n")
    always.chmod(0o755)
    with pytest.raises(ToolCrashed) as err:
        run_tool([always], timeout=5)
    assert err.value.transient and "SIGSEGV" in str(err.value)
    assert err.value.repeated and "deterministic on this input" in str(err.value)
    assert "run again" not in str(err.value)


def test_two_different_crashes_are_not_called_deterministic(tmp_path):
    once = tmp_path / "once"
    script = tmp_path / "t.sh"
    script.write_text(f'#!/bin/bash\nif [ -e {once} ]; then kill -ABRT $$; fi\n: > {once}\nkill -SEGV $$\n')
    script.chmod(0o755)
    with pytest.raises(ToolCrashed) as err:
        run_tool([script], timeout=5)
    assert not err.value.repeated and "retried once" in str(err.value)


def test_time_limit_caps_every_child(tmp_path):
    t = time.perf_counter()
    with time_limit(0.5), pytest.raises(ToolchainTimeout):
        run_tool(["sleep", "20"], timeout=30)
    assert time.perf_counter() - t < 5


def test_the_exit_code_is_in_the_table_and_ranked():
    assert TABLE["toolchain-failed"][0] == TOOLCHAIN
    assert SEVERITY.index(BAD_INPUT) < SEVERITY.index(TOOLCHAIN) < SEVERITY.index(1)


# ---------------------------------------------------------------------------
# the evaluator: transient failures are results that are never cached


@pytest.mark.parametrize("mode, words", [("segv", "SIGSEGV"), ("oom", "out of memory")])
def test_a_crashing_ptxas_is_never_cached(fake_ptxas, monkeypatch, tmp_path, mode, words):
    cache = tmp_path / "c.sqlite"
    c = _unique("maxnreg_64")
    monkeypatch.setenv("FAKE_MODE", mode)
    r = evaluate(c, cache=cache)
    assert r.status == "toolchain" and words in r.error and not r.bad_input and not r.cacheable
    assert _rows(cache) == 0
    monkeypatch.delenv("FAKE_MODE")  # ptxas is healthy again: the candidate is evaluated, not served
    again = evaluate(c, cache=cache)
    assert again.ok and not again.cache_hit


def test_one_crash_is_absorbed_by_the_retry(fake_ptxas, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_MODE", "segv")
    monkeypatch.setenv("FAKE_ONCE", str(tmp_path / "once"))
    assert evaluate(_unique("maxnreg_64"), cache=tmp_path / "c.sqlite").ok


def test_a_crashing_nvdisasm_is_not_unsupported(fake_nvdisasm, monkeypatch, tmp_path):
    cache = tmp_path / "c.sqlite"
    monkeypatch.setenv("FAKE_MODE", "segv")
    r = evaluate(_unique("maxnreg_128"), cache=cache)
    assert r.status == "toolchain" and "nvdisasm" in r.error and "SIGSEGV" in r.error
    assert _rows(cache) == 0


# ---------------------------------------------------------------------------
# the command line: a crash on the original is not bad input; --timeout bounds ptxas


def _cli(args, env_extra, timeout=60):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    return subprocess.run([sys.executable, "-m", "ptxopt.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("mode", ["segv", "hang"])
def test_eval_of_an_original_the_tool_crashed_on_exits_5(fake_ptxas, tmp_path, mode):
    t = time.perf_counter()
    p = _cli(["eval", f"corpus:{SMALL}", "--cache", str(tmp_path / "c.sqlite"), "--timeout", "2"],
             {"PTXOPT_PTXAS": str(fake_ptxas), "FAKE_MODE": mode})
    assert p.returncode == TOOLCHAIN, p.stderr
    assert "bad input" not in p.stderr and "Traceback" not in p.stderr
    assert ("SIGSEGV" if mode == "segv" else "did not finish within 2 s") in p.stderr
    assert time.perf_counter() - t < 25  # --timeout 2 bounds the ptxas run, not its 600 s default
    assert _rows(tmp_path / "c.sqlite") == 0


def test_search_whose_ptxas_crashes_exits_5_and_caches_nothing(fake_ptxas, tmp_path):
    p = _cli(["search", f"corpus:{SMALL}", "--max-steps", "1", "-q", "--cache", str(tmp_path / "c.sqlite")],
             {"PTXOPT_PTXAS": str(fake_ptxas), "FAKE_MODE": "segv"})
    assert p.returncode == TOOLCHAIN, p.stderr
    assert "SIGSEGV" in p.stderr and "bad input" not in p.stderr and "Traceback" not in p.stderr
    assert _rows(tmp_path / "c.sqlite") == 0


def test_optimize_raises_a_crash_as_it_is_not_as_bad_input(fake_ptxas, monkeypatch):
    import ptxopt

    monkeypatch.setenv("FAKE_MODE", "segv")
    with pytest.raises(ToolCrashed):
        ptxopt.optimize(_unique().ptx, "vec_ld")


def test_nvdisasm_refusing_an_old_target_says_which_arch_to_use(tmp_path):
    from ptxopt.toolchain.locate import Tool
    from ptxopt.toolchain.sass import NvdisasmError, disassemble

    fake = tmp_path / "nvdisasm"
    fake.write_text('#!/bin/bash\necho "nvdisasm fatal   : SM60 is deprecated and not supported"\nexit 1\n')
    fake.chmod(0o755)
    with pytest.raises(NvdisasmError) as err:
        disassemble(b"\x7fELF", nvdisasm=Tool("nvdisasm", fake, (13, 0), "13.0.0"))
    assert "SM60 is deprecated" in str(err.value) and "--arch sm_89" in str(err.value)
