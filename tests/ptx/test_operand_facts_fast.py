"""The operand walker's fast paths (register-only operand lists, a register
with a register-based address or an immediate) give exactly the facts of the
full walk, on the corpus and on the shapes that could trip them: guards,
special registers with and without a dot, duplicates, the carry flag,
immediates and constant expressions, sinks, symbols and address extras."""

from __future__ import annotations

from ptxopt import parse
from ptxopt.kernels.corpus import load_manifest
from ptxopt.ptx.operand_facts import _form, _walk, _walk_operands

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"

TRICKY = """
add.u32 %r1, %r2, %r3;
@%p1 add.u32 %r1, %r2, %r3;
@!%p1 add.u32 %r1, %r1, %r1;
add.u32 %r1, %r2, %r2;
mov.u32 %r1, %tid.x;
mov.u32 %r1, %clock;
mov.u32 %r1, %laneid;
@%p1 mov.u32 %r1, %ctaid.y;
mov.u32 %r1, 7;
@%p2 mov.u32 %r1, 7;
mov.u32 %r1, -1;
mov.u32 %r1, (1+2);
mov.u32 %r1, %r1;
add.cc.u32 %r1, %r2, %r3;
addc.cc.u32 %r4, %r5, %r6;
addc.u32 %r4, %r4, %r4;
mad.lo.cc.u32 %r1, %r2, %r3, %r4;
setp.eq.u32 %p1|%p2, %r1, %r2;
ld.global.u32 %r1, [%rd1];
ld.global.u32 %r1, [%rd1+8];
@%p1 ld.global.u32 %r1, [%rd1+-4];
ld.global.u64 %rd1, [%rd1];
ld.shared.u32 %r1, [%r2+4294967292];
ld.global.u32 %r1, [buf+8];
ld.global.v2.u32 {%r1, %r2}, [%rd1];
ld.param.u64 %rd1, [out];
st.global.u32 [%rd1], %r1;
st.global.u32 [%rd1+16], %r1;
@!%p3 st.global.u32 [%rd1], %r1;
st.global.u64 [%rd1], %rd1;
st.global.u32 [%rd1], 5;
st.global.u32 [buf], %r1;
st.global.v2.u32 [%rd1], {%r1, %r2};
cvta.to.global.u64 %rd2, %rd1;
mov.u64 %rd1, buf;
mov.b64 %rd5, {%r1, %r2};
fma.rn.f32 %f1, %f2, %f3, %f1;
@%p1 bra $L1;
$L1:
bar.sync 0;
"""


def _check(m) -> int:
    n = 0
    for fn in m.functions:
        for ins in fn.instructions():
            assert _walk(ins) == _walk_operands(ins, _form(ins)), ins
            n += 1
    return n


def test_fast_paths_agree_with_the_walk_on_tricky_shapes():
    text = (HEAD + ".global .align 4 .b8 buf[64];\n.visible .entry k(.param .u64 out)\n{\n"
            ".reg .pred %p<4>;\n.reg .b32 %r<12>;\n.reg .b64 %rd<12>;\n.reg .f32 %f<4>;\n" + TRICKY + "ret;\n}\n")
    assert _check(parse(text)) == TRICKY.count(";") + 1


def test_fast_paths_agree_with_the_walk_on_the_corpus():
    n = sum(_check(parse(k.ptx_text())) for k in load_manifest()[::24])
    assert n > 1000
