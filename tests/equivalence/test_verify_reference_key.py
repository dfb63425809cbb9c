"""verify's memo of the original's runs (``reference``) keys the trip-count
launches by their scalars: two candidates of one original that change
different loops launch different scalars under the same trial number, and a
second candidate must not be compared with the original's run of the first
one's scalars."""

import pytest

from ptxopt.equivalence.interpret import Geometry, verify
from ptxopt.ptx.parser import parse

TWO_LOOPS = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry two_loops(.param .u64 out, .param .u32 n, .param .u32 m)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [n];
    ld.param.u32 %r2, [m];
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
$L_first:
    add.s32 %r4, %r4, 3;
    add.s32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra $L_first;
    mov.u32 %r5, 0;
    mov.u32 %r6, 0;
$L_second:
    add.s32 %r6, %r6, 5;
    add.s32 %r5, %r5, 1;
    setp.lt.u32 %p2, %r5, %r2;
    @%p2 bra $L_second;
    st.global.u32 [%rd2], %r4;
    st.global.u32 [%rd2+4], %r6;
    ret;
}
"""


def _extra_test(text: str, which: str) -> str:
    """The same kernel with a dead extra test in one loop (what a loop rewrite's copy of an exit test
    looks like to the trip-count plan: the loop's control changed)."""
    at = {"first": "add.s32 %r3, %r3, 1;", "second": "add.s32 %r5, %r5, 1;"}[which]
    reg = {"first": "%r3", "second": "%r5"}[which]
    assert at in text
    return text.replace(at, f"{at}\n    setp.eq.u32 %p3, {reg}, 1000;")


@pytest.mark.slow  # two checks with 11 trip-count launches each: ~3 s
def test_two_candidates_changing_different_loops_share_no_trip_launch():
    m = parse(TWO_LOOPS)
    geo = Geometry(grid=(1, 1, 1), block=(1, 1, 1), buffer_bytes=64, scalars={"n": 6, "m": 6})
    memo: dict = {}
    for which in ("first", "second"):  # equal candidates (a dead test added): equal with the memo too
        res = verify(m, parse(_extra_test(TWO_LOOPS, which)), "two_loops", geometry=geo, reference=memo,
                     reference_key="two_loops")
        assert any(str(l.get("extra", "")).startswith("trip") for l in res.launches), which
        assert res.status == "equal", (which, res.status, res.error)
