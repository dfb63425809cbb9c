"""Differential fuzzing of every pass: random race-free kernels
with carry chains, aliasing bases, guards, branches, barriers, atomics,
prefetches and clock reads (:mod:`ptxopt.testing.random_kernels`); each of
the 20 passes must leave the kernel unchanged or produce PTX that ptxas
accepts and the interpreter finds equal. The CI run is bounded and
derandomised; ``benchmarks/reports/fuzz_passes.py`` runs the long campaign."""

import random

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxopt.ptx.ir import instruction_slots
from ptxopt.testing.differential import check_passes
from ptxopt.testing.random_kernels import STEP_KINDS, kernel_from_steps, launch, random_steps
from ptxopt.toolchain import compile_ptx

STEP = st.tuples(*[st.integers(0, 1 << 16)] * 5)


def _check(steps):
    out = check_passes(kernel_from_steps(steps), launch())
    assert not out.findings, "\n".join(map(str, out.findings))


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=4, max_size=24))
def test_every_pass_is_refused_or_equal(steps):
    _check(steps)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=4, max_size=32))
def test_every_pass_is_refused_or_equal_more(steps):
    _check(steps)


def test_generated_kernels_assemble_and_use_every_step_kind():
    seen = set()
    for seed in range(12):
        steps = random_steps(random.Random(seed), 30)
        seen |= {STEP_KINDS[s[0] % len(STEP_KINDS)] for s in steps}
        compile_ptx(kernel_from_steps(steps), "sm_89")
    assert seen == set(STEP_KINDS)


def test_the_check_catches_a_broken_rewrite():
    """A 'pass' that drops a store the kernel does not overwrite later must be
    reported."""
    def drop_first_store(pipeline, module):
        m = module.copy()
        for items, i, ins in instruction_slots(m.entries[0].body):
            if ins.opcode == "st" and "global" in ins.modifiers:
                del items[i]
                return m
        raise AssertionError("no store")

    steps = [(0, 0, 2, 1, 0), (1, 0, 3, 1, 1), (3, 1, 2, 3, 0)]  # ld, st to a, carry
    text = kernel_from_steps(steps)
    out = check_passes(text, launch(), pipelines=["broken"], apply=drop_first_store)
    assert [f.what for f in out.findings] == ["mismatch"]


def test_the_check_catches_a_broken_carry_chain():
    """Moving addc above its add.cc makes it read a stale carry."""
    def swap_carry(pipeline, module):
        m = module.copy()
        slots = list(instruction_slots(m.entries[0].body))
        for k, (items, i, ins) in enumerate(slots):
            if ins.opcode in ("addc", "subc"):
                # move the carry consumer above its producer's neighbour
                j = next(j for j in range(k - 1, -1, -1) if "cc" in slots[j][2].modifiers)
                items.insert(slots[j][1], items.pop(i))
                return m
        raise AssertionError("no carry chain")

    text = kernel_from_steps([(3, 1, 2, 3, 0)])
    assert "addc" in text
    out = check_passes(text, launch(), pipelines=["broken"], apply=swap_carry)
    assert [f.what for f in out.findings] == ["mismatch"]
