"""The hand reviews of regular mutants (benchmarks/mutation_reviewed.json,
the campaign's --per-operator 3 on the max/softmax kernels) checked where a
run can check them: the reviewed equivalent is equal on the contract's
launch and on an input built to expose its edge, and the closed hole is a
real difference (a concrete input shows it) that the check no longer calls
``equal``."""

import numpy as np

from ptxopt import parse
from ptxopt.kernels.corpus import get
from ptxopt.interp import run_kernel
from ptxopt.interp.workload import make_args
from ptxopt.testing.mutants import mutants


def _mutant(kernel, line, what):
    spec = get(kernel)
    m = parse(spec.ptx_text(), spec.path)
    mu = next(x for x in mutants(m, spec.entry, 3) if x.line == line and x.what == what)
    return spec, m, mu


def _buffers(module, spec, args):
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    r = run_kernel(module, spec.entry, spec.launch.grid, spec.launch.block, a, spec.launch.shared_bytes)
    return [b.view(np.uint32) for b in r.buffers if isinstance(b, np.ndarray)]


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_layernorm_cross_warp_shuffle_mask_17_is_equivalent():
    """cuda_layernorm_row:280 (the variance's cross-warp butterfly starts
    with lane mask 17, not 16): lanes 16-31 sum the 8 warp totals with
    neighbouring lanes exchanged, which the xor-8/4/2/1 butterfly turns into
    the same value in every lane. Checked on the contract's random launch and
    on rows whose warp totals are exact powers of two (2^24 and small ones,
    mean exactly 0) where the order of the float additions shows in the
    result: sequential and tree sums of the totals differ."""
    spec, m, mu = _mutant("cuda_layernorm_row", 280, "mov constant -> 17")
    args = make_args(spec, 0, "random")
    assert _same(_buffers(m, spec, args), _buffers(mu.module, spec, args))

    # thread t holds columns t and t + 256: +a and -a, so its sum is 0, mu = 0,
    # and warp w's total of squares is 64 a_w^2, exactly
    a = np.array([512, 1 / 8, 1 / 4, 1 / 8, 1 / 16, 1 / 8, 1 / 4, 1 / 8], np.float32)
    totals = (64 * a * a).astype(np.float32)
    seq = np.float32(0)
    for t in totals:
        seq = np.float32(seq + t)
    pair = [np.float32(totals[i] + totals[i + 4]) for i in range(4)]  # the butterfly's xor-4 pairs
    tree = np.float32(np.float32(pair[0] + pair[2]) + np.float32(pair[1] + pair[3]))
    assert seq != tree  # the input tells association orders apart
    row = np.concatenate([np.repeat(a, 32), -np.repeat(a, 32)]).astype(np.float32)
    x = np.stack([row * np.float32(2.0 ** -r) for r in range(8)]).ravel()
    args[0] = x
    ro, rt = _buffers(m, spec, args), _buffers(mu.module, spec, args)
    assert _same(ro, rt)
    assert np.all(ro[4].view(np.float32) == 0)  # mean (x, gamma, beta, y, mean, rstd) is exactly 0


def test_reduce_max_shifted_shared_read_drops_a_subtree():
    """cuda_reduce_max_smem:75 (the s = 32 step reads smax[tid + 33]) is not
    equivalent: smax[32], the maximum of a block's elements 32, 96, 160 and
    224, is never read, and thread 31 reads smax[64] (already in smax[0])
    instead. A block whose maximum is one of those four loses it; a maximum
    at the neighbouring positions is still found."""
    spec, m, mu = _mutant("cuda_reduce_max_smem", 75, "ld.shared.f32 address +4")
    args = make_args(spec, 0, "random")
    x = args[0]
    for b, pos in enumerate((32, 96, 160, 224)):  # one lost element per block
        args[0] = x.copy()
        args[0][b * 256 + pos] = 1e6
        ro, rt = _buffers(m, spec, args), _buffers(mu.module, spec, args)
        assert ro[1].view(np.float32)[b] == 1e6 and rt[1].view(np.float32)[b] < 1e6, (b, pos)
    args[0] = x.copy()
    for b, pos in enumerate((31, 33, 64, 0)):
        args[0][b * 256 + pos] = 1e6
    assert _same(_buffers(m, spec, args), _buffers(mu.module, spec, args))


def test_reduce_max_shifted_shared_read_is_not_equal():
    """Once a known hole (benchmarks/mutation_reviewed.json, closed_holes):
    the global read footprints agree and the flavours put a block's maximum
    in the lost subtree only by chance, so every launch's outputs agree; the
    shared-memory reads of the s = 32 step's barrier interval do not
    (smax[32] in the original only, smax[64] in the mutant only)."""
    from ptxopt.equivalence.interpret import verify

    spec, m, mu = _mutant("cuda_reduce_max_smem", 75, "ld.shared.f32 address +4")
    r = verify(m, mu.module, spec.entry, spec=spec)
    assert r.status == "inconclusive", (r.status, r.error)
    assert "bytes 128-131 read only by the original; bytes 256-259 read only by the transformed" in r.error
