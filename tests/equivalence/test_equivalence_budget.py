"""A step budget for one equivalence check (ptxopt.equivalence.budget): it
bounds the whole check, never strengthens a verdict, and stops straight-line
thread-serial runs too."""

import numpy as np
import pytest

from ptxopt.kernels.corpus import get
from ptxopt.equivalence.budget import BUDGET_SPENT, StepBudget
from ptxopt.equivalence.interpret import verify
from ptxopt.interp import Program, run_kernel
from ptxopt.interp.errors import StepLimit
from ptxopt.interp.workload import make_args
from ptxopt.ptx.parser import parse

KERNEL = "cuda_reduce_sum_smem"  # 256 threads, a barrier: the check runs a thread-serial launch


def _pair():
    spec = get(KERNEL)
    t = spec.ptx_text()
    # a harmless change the interpreter must check: one more (dead) instruction
    anchor = "\tbar.sync \t0;\n"
    assert anchor in t
    return spec, parse(t), parse(t.replace(anchor, anchor + "\tmov.u32 \t%r1, %r1;\n", 1))


def test_a_spent_budget_is_inconclusive_and_says_so():
    spec, a, b = _pair()
    full = StepBudget(10**8)
    r = verify(a, b, spec=spec, budget=full)
    assert r.status == "equal" and not r.budget_spent and full.used > 1000
    # a budget the first launch shows the check cannot finish in: it stops there, spending little
    small = StepBudget(full.used // 3)
    r = verify(a, b, spec=spec, budget=small)
    assert r.status == "inconclusive" and r.budget_spent and r.verdict == "inconclusive"
    assert r.error.startswith(BUDGET_SPENT) and "would need about" in r.error
    assert small.used < small.steps and r.trials == 1
    # a budget smaller than one run: that run stops at it
    tiny = StepBudget(10)
    r = verify(a, b, spec=spec, budget=tiny)
    assert r.budget_spent and tiny.spent and "stopped the original in launch 0" in r.error
    assert r.trials == 0


def test_a_difference_found_within_the_budget_is_still_a_difference():
    spec = get(KERNEL)
    t = spec.ptx_text()
    bad = t.replace("\tbar.sync \t0;\n", "", 1)  # a race the warp-serial launches show
    budget = StepBudget(10**8)
    r = verify(parse(t), parse(bad), spec=spec, budget=budget)
    assert r.verdict == "differ" and not r.budget_spent  # a race or a mismatch: found, not hidden


def test_strict_steps_stop_straight_line_thread_serial_code():
    # max_steps alone is checked at backward branches: a thread-serial run of
    # loop-free code ran to the end whatever the limit (a budget must not)
    spec = get("cuda_gelu_tanh")
    prog = Program(parse(spec.ptx_text()))
    grid, block = spec.launch.grid, spec.launch.block
    args = make_args(spec, 0, "random")
    done = run_kernel(prog, spec.entry, grid, block, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                      schedule="threads", max_steps=20)
    assert done.steps > 20  # the old behaviour, kept without strict_steps
    with pytest.raises(StepLimit) as e:
        run_kernel(prog, spec.entry, grid, block, args, schedule="threads", max_steps=20, strict_steps=True)
    assert 20 < e.value.steps < done.steps  # the failure says how far it got


def test_the_budget_ends_the_alternatives_of_a_module_check():
    from ptxopt.api import check_equivalence

    spec, a, b = _pair()
    alts = [spec] * 3  # alternatives are tried while inconclusive: a spent budget tries no more
    verdict, note, _, _ = check_equivalence(a, b, alts, prove=False, steps=200)
    assert verdict == "inconclusive" and BUDGET_SPENT in note
    verdict, _, _, _ = check_equivalence(a, b, alts, prove=False)
    assert verdict == "equal"


def test_budget_must_be_positive():
    with pytest.raises(ValueError):
        StepBudget(0)
