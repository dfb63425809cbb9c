"""The hand reviews of loop mutants (benchmarks/mutation_reviewed.json, operator
"loop") checked where a run can check them: the closed hole is a real
difference (a concrete input shows it) that the check no longer calls
``equal``, and the contract-bound equivalence stops at the contract's edge."""

import numpy as np
import pytest

from ptxopt import parse
from ptxopt.kernels.corpus import get
from ptxopt.interp import run_kernel
from ptxopt.interp.workload import make_args
from ptxopt.testing.loop_mutants import loop_mutants


def _run(module, spec, args, grid=None):
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    return run_kernel(module, spec.entry, grid or spec.launch.grid, spec.launch.block, a, spec.launch.shared_bytes)


def test_flash_causal_dropped_guard_turns_a_negative_zero_positive():
    """The hole: the mutant's extra iterations past the causal limit add
    p = 0 times zero-filled V with alpha = 1. Program 1's rows end at -0.0 in
    the original (block 0 leaves acc = -64, block 1's scores are 184 higher
    in log2 units so alpha flushes to +0 and acc * alpha = -0.0, and block 1's
    V is -0.0): the mutant stores +0.0 there."""
    spec = get("triton_flash_attn_fwd_causal")
    m = parse(spec.ptx_text(), spec.path)
    mu = next(x for x in loop_mutants(m, spec.entry, 4) if x.operator == "dropped_guard" and x.line == 286)
    args = make_args(spec, 0, "random")
    d = 64
    q, k, v = np.ones((128, d), np.float16), np.zeros((128, d), np.float16), np.zeros((128, d), np.float16)
    k[64:] = 16.0
    v[:64] = -1.0
    v[64:] = np.float16(-0.0)
    args[0], args[1], args[2] = q.ravel(), k.ravel(), v.ravel()
    a = _run(m, spec, args).buffers[3].reshape(128, d).view(np.uint16)
    b = _run(mu.module, spec, args).buffers[3].reshape(128, d).view(np.uint16)
    assert (a[64:] == 0x8000).all() and (b[64:] == 0).all()


def _flash_causal_dropped_guard():
    spec = get("triton_flash_attn_fwd_causal")
    m = parse(spec.ptx_text(), spec.path)
    mu = next(x for x in loop_mutants(m, spec.entry, 4) if x.operator == "dropped_guard" and x.line == 286)
    return spec, m, mu


def test_flash_causal_dropped_guard_masks_more_reads():
    """What closes the hole: the mutant's extra iterations read nothing
    (their cp.async copies zero-fill, src-size 0), so the read footprints
    agree, but they mask 3 more rounds of K and V copies in the loop than
    the original (one launch of each kernel, random inputs)."""
    from ptxopt.equivalence.footprint import footprint_difference, loop_tags, masked_difference
    from ptxopt.interp import Program

    spec, m, mu = _flash_causal_dropped_guard()
    args = make_args(spec, 0, "random")
    runs = []
    for mod in (m, mu.module):
        p = Program(mod)
        tags, labels = loop_tags(p, spec.entry)
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        r = run_kernel(p, spec.entry, spec.launch.grid, spec.launch.block, a, spec.launch.shared_bytes, reads=tags)
        runs.append((r, labels, [q.name for q in p.kernel_params(spec.entry)]))
    (ro, lo, names), (rt, lt, _) = runs
    assert footprint_difference(ro.reads, rt.reads, names, lo, lt) == ({}, {})
    assert masked_difference(ro.masked, rt.masked, lo, lt) == (
        "masked global reads differ loop $L__BB0_3: 32768 bytes in the original, 114688 in the transformed")


@pytest.mark.slow
def test_flash_causal_dropped_guard_is_not_equal():
    from ptxopt.equivalence.interpret import verify

    spec, m, mu = _flash_causal_dropped_guard()
    r = verify(m, mu.module, spec.entry, spec=spec)
    assert r.status == "inconclusive" and "masked global reads differ" in r.error, (r.status, r.error)


def test_attention_step_17_is_equal_only_up_to_the_contract():
    """triton_attention's mutant (the key counter steps 17 in a group's first
    copy) runs the same blocks for every seq_len the contract's 64-row buffers
    allow, and one block fewer at seq_len = 65 (buffers of 80 rows)."""
    spec = get("triton_attention")
    m = parse(spec.ptx_text(), spec.path)
    mu = next(x for x in loop_mutants(m, spec.entry, 4) if x.operator == "off_by_one_step" and x.line == 221)
    args = make_args(spec, 0, "random")
    for n in (49, 64):
        args[4] = n
        assert np.array_equal(_run(m, spec, args).buffers[3].view(np.uint32),
                              _run(mu.module, spec, args).buffers[3].view(np.uint32)), n
    rng = np.random.default_rng(0)
    big = [rng.uniform(-1, 1, 80 * 16).astype(np.float16) for _ in range(3)]
    args = [big[0], big[1], big[2], np.zeros(80 * 16, np.float32), 65, 0.25, None, None]
    a = _run(m, spec, args, grid=(5, 1, 1)).buffers[3]
    b = _run(mu.module, spec, args, grid=(5, 1, 1)).buffers[3]
    assert not np.array_equal(a.view(np.uint32), b.view(np.uint32))
