"""Shared-memory read footprints per CTA and barrier interval
(ptxopt.interp.shared_reads, footprint.shared_read_difference): a read in a
shared-memory max tree shifted onto an element already counted is never
``equal``; a rewrite that reads the same bytes between the same barriers
(a vector load for two scalar ones) still is."""

import numpy as np

from ptxopt import parse
from ptxopt.equivalence.footprint import shared_read_difference
from ptxopt.equivalence.interpret import Geometry, verify
from ptxopt.interp import run_kernel

THREADS = 256


def _tree_max(shift_step: int = 0, shift: int = 0, vector_last: bool = False) -> str:
    """A block-max tree over ``smax[256]`` (one input element per thread,
    steps s = 128, 64, ..., 1 with a barrier after each). ``shift_step``:
    the step whose second read is ``shift`` bytes further on; ``vector_last``:
    the s = 1 step (thread 0 only, ``smax`` 8-aligned) reads ``smax[0..1]``
    with one ``ld.shared.v2.f32``."""
    steps = []
    s = THREADS // 2
    while s:
        if vector_last and s == 1:
            loads = "\tld.shared.v2.f32 \t{%f2, %f3}, [%r6];\n"
        else:
            loads = (f"\tld.shared.f32 \t%f2, [%r6];\n"
                     f"\tld.shared.f32 \t%f3, [%r6+{4 * s + (shift if s == shift_step else 0)}];\n")
        steps.append(f"\tsetp.lt.u32 \t%p1, %r1, {s};\n\t@!%p1 bra \t$L_s{s};\n{loads}"
                     f"\tmax.f32 \t%f4, %f2, %f3;\n\tst.shared.f32 \t[%r6], %f4;\n$L_s{s}:\n\tbar.sync \t0;\n")
        s //= 2
    return f""".version 7.0
.target sm_70
.address_size 64

.visible .entry tree_max(
\t.param .u64 tree_max_in,
\t.param .u64 tree_max_out
)
{{
\t.reg .pred \t%p<3>;
\t.reg .f32 \t%f<6>;
\t.reg .b32 \t%r<7>;
\t.reg .b64 \t%rd<8>;
\t.shared .align 8 .b8 smax[{4 * THREADS}];

\tld.param.u64 \t%rd1, [tree_max_in];
\tld.param.u64 \t%rd2, [tree_max_out];
\tmov.u32 \t%r1, %tid.x;
\tmov.u32 \t%r2, %ctaid.x;
\tshl.b32 \t%r3, %r2, 8;
\tadd.s32 \t%r3, %r3, %r1;
\tcvta.to.global.u64 \t%rd3, %rd1;
\tmul.wide.u32 \t%rd4, %r3, 4;
\tadd.s64 \t%rd5, %rd3, %rd4;
\tld.global.f32 \t%f1, [%rd5];
\tshl.b32 \t%r4, %r1, 2;
\tmov.u32 \t%r5, smax;
\tadd.s32 \t%r6, %r5, %r4;
\tst.shared.f32 \t[%r6], %f1;
\tbar.sync \t0;
{"".join(steps)}\tsetp.ne.u32 \t%p2, %r1, 0;
\t@%p2 bra \t$L_end;
\tld.shared.f32 \t%f5, [smax];
\tcvta.to.global.u64 \t%rd6, %rd2;
\tmul.wide.u32 \t%rd7, %r2, 4;
\tadd.s64 \t%rd7, %rd6, %rd7;
\tst.global.f32 \t[%rd7], %f5;
$L_end:
\tret;
}}
"""


GEO = Geometry(grid=(2, 1, 1), block=(THREADS, 1, 1), buffer_bytes=2 * THREADS * 4)


def _max_of(text, x):
    r = run_kernel(parse(text), "tree_max", (2, 1, 1), (THREADS, 1, 1), [x, np.zeros(2, np.float32)])
    return r.buffers[1]


def test_a_shifted_tree_read_is_a_real_difference_the_outputs_rarely_show():
    """The s = 64 step reads smax[t + 65]: smax[64] (elements 64 and 192)
    is lost, smax[128] (already in smax[0]) read twice."""
    orig, mut = _tree_max(), _tree_max(64, 4)
    x = np.random.default_rng(0).random(2 * THREADS).astype(np.float32)
    assert np.array_equal(_max_of(orig, x), _max_of(mut, x))  # the maximum is elsewhere
    x[192] = 1e6
    assert _max_of(orig, x)[0] == 1e6 and _max_of(mut, x)[0] < 1e6


def test_a_shifted_shared_read_in_a_max_tree_is_not_equal():
    """Every launch's outputs agree (the flavours put no block maximum in
    the lost subtree: this was ``equal``), but the shared bytes read in the
    s = 64 step's interval differ, so the check ends ``inconclusive``."""
    orig, mut = parse(_tree_max()), parse(_tree_max(64, 4))
    r = verify(orig, mut, "tree_max", geometry=GEO)
    assert r.status == "inconclusive", (r.status, r.error)
    assert r.error.startswith("shared-memory reads differ in CTA (0, 0, 0), barrier interval 2, 'smax': "
                              "bytes 256-259 read only by the original; bytes 512-515 read only by the "
                              "transformed"), r.error
    assert "shared_reads" in r.launches[0]


def test_a_vector_load_of_the_same_shared_bytes_is_equal():
    orig, vec = parse(_tree_max()), parse(_tree_max(vector_last=True))
    r = verify(orig, vec, "tree_max", geometry=GEO)
    assert r.status == "equal", (r.status, r.error)
    assert not [la for la in r.launches if "shared_reads" in la]


def test_shared_reads_are_recorded_per_cta_and_interval():
    x = np.arange(2 * THREADS, dtype=np.float32)
    args = [x, np.zeros(2, np.float32)]
    r = run_kernel(parse(_tree_max()), "tree_max", (2, 1, 1), (THREADS, 1, 1), args, shared_reads=True)
    assert [cta for cta, _ in r.shared_reads] == [(0, 0, 0), (1, 0, 0)]
    rec = r.shared_reads[0][1]
    assert sorted(rec) == [(i, "smax") for i in range(1, 10)]  # a read after each of the 9 barriers
    bits = np.unpackbits(np.frombuffer(rec[(2, "smax")], np.uint8))
    assert list(np.flatnonzero(bits)) == list(range(0, 512))  # the s = 64 step: smax[0..127]
    last = np.unpackbits(np.frombuffer(rec[(9, "smax")], np.uint8))
    assert list(np.flatnonzero(last)) == [0, 1, 2, 3]  # thread 0 stores smax[0]
    assert run_kernel(parse(_tree_max()), "tree_max", (2, 1, 1), (THREADS, 1, 1), args).shared_reads is None


NAMED = """.version 7.0
.target sm_70
.address_size 64

.visible .entry named(
\t.param .u64 named_out
)
{
\t.reg .pred \t%p<2>;
\t.reg .f32 \t%f<3>;
\t.reg .b32 \t%r<7>;
\t.shared .align 4 .b8 buf[256];

\tmov.u32 \t%r1, %tid.x;
\tshl.b32 \t%r4, %r1, 2;
\tmov.u32 \t%r5, buf;
\tadd.s32 \t%r6, %r5, %r4;
\tsetp.lt.u32 \t%p1, %r1, 32;
\t@!%p1 bra \t$L_other;
\tbar.sync \t1, 32;
\tbar.sync \t1, 32;
\tbra.uni \t$L_read;
$L_other:
\tbar.sync \t2, 32;
$L_read:
\tld.shared.f32 \t%f1, [%r6];
\tret;
}
"""


def test_a_named_barrier_moves_only_the_threads_it_releases():
    """Warp 0 passes named barrier 1 twice, warp 1 barrier 2 once: each
    thread's interval is its own count, whatever the schedule."""
    for schedule in ("lockstep", "warps", "warps-reversed"):
        r = run_kernel(parse(NAMED), "named", 1, 64, [np.zeros(1, np.float32)], shared_reads=True,
                       schedule=schedule)
        rec = r.shared_reads[0][1]
        assert sorted(rec) == [(1, "buf"), (2, "buf")], schedule
        assert list(np.flatnonzero(np.unpackbits(np.frombuffer(rec[(2, "buf")], np.uint8)))) == list(range(128))
        assert list(np.flatnonzero(np.unpackbits(np.frombuffer(rec[(1, "buf")], np.uint8)))) == \
            list(range(128, 256))


def test_shared_read_difference_words():
    a = [((0, 0, 0), {(1, "s"): bytes([0xF0, 0])}), ((1, 0, 0), {(1, "s"): bytes([0xF0, 0])})]
    b = [((0, 0, 0), {(1, "s"): bytes([0xF0, 0])}), ((1, 0, 0), {(1, "s"): bytes([0x70, 0x80]),
                                                                 (2, "s"): bytes([0x01, 0])})]
    assert shared_read_difference(a, a) is None
    assert shared_read_difference(a, None) is None
    assert shared_read_difference(a, b) == ("shared-memory reads differ in CTA (1, 0, 0), barrier interval 1, 's': "
                                            "byte 0 read only by the original; byte 8 read only by the "
                                            "transformed")


def test_marking_any_access_width_sets_exactly_its_bytes():
    from ptxopt.interp.shared_reads import _mark

    for nbytes in (1, 2, 4, 8, 16, 32, 6):
        for base in (0, 4):
            arr = np.zeros(128, dtype=bool)
            off = np.array([0, nbytes * 2], dtype=np.intp) if nbytes != 6 else np.array([0, 12], dtype=np.intp)
            _mark(arr, off, nbytes, base)
            want = np.zeros(128, dtype=bool)
            for o in off:
                want[o: o + nbytes] = True
            assert np.array_equal(arr, want), (nbytes, base)
