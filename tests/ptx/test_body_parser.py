"""The parser's fast path for function bodies (:mod:`ptxopt.ptx.body_parser`)
gives exactly what the Lark grammar gives, or gives the body up.

Differential: every text is parsed with the fast path and with Lark alone
(:data:`ptxopt.ptx.parser.FAST_BODIES`); the modules must be equal, and so must
what ``==`` leaves out (every statement's line number, the comments and
their placement, the printed text), and an error must be the same
``file:line:col: message`` on both paths.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import ptxopt.ptx.parser as P
from ptxopt.ptx.body_parser import BodyReader
from ptxopt.ptx.emit import emit
from ptxopt.ptx.ir import Block, Function

CORPUS = sorted((Path(__file__).resolve().parents[2] / "corpus").rglob("*.ptx"))


def _layout(m) -> list:
    """What module equality does not compare: each statement's type, line and
    (for comments) text and trailing flag, in order, nested blocks included."""
    out = [("header", c.text) for c in m.header_comments]

    def walk(items):
        for it in items:
            out.append((type(it).__name__, getattr(it, "line", None), getattr(it, "text", None),
                        getattr(it, "trailing", None)))
            if type(it) is Block:
                walk(it.items)
            elif type(it) is Function and it.body is not None:
                out.append(("body", it.body.line))
                walk(it.body.items)

    walk(m.items)
    return out


def _both(text: str, filename: str = "<input>"):
    results = []
    for fast in (False, True):
        P.FAST_BODIES = fast
        try:
            m = P.parse(text, filename)
            results.append(("ok", m, _layout(m), emit(m)))
        except P.ParseError as e:
            results.append(("error", str(e)))
        finally:
            P.FAST_BODIES = True
    return results


def _assert_same(text: str, filename: str = "<input>") -> str:
    lark, fast = _both(text, filename)
    assert fast[0] == lark[0], (fast, lark)
    if lark[0] == "error":
        assert fast[1] == lark[1]
        return "error"
    assert fast[1] == lark[1]
    assert fast[2] == lark[2]
    assert fast[3] == lark[3]
    return "ok"


def _fast_bodies(text: str) -> int:
    return len(BodyReader().split(text))


def _check_corpus(paths) -> None:
    used = 0
    for path in paths:
        text = path.read_text()
        assert _assert_same(text, str(path)) == "ok"
        used += _fast_bodies(text) > 0
    # not vacuous: the fast path reads nearly every corpus kernel (one inline-asm
    # body of vector_add_half2 is Lark's)
    assert used >= len(paths) - 1


@pytest.mark.slow
def test_whole_corpus_identical():
    assert len(CORPUS) > 300
    _check_corpus(CORPUS)


def test_corpus_sample_identical():
    # a fast-tier slice: every 16th kernel, all compilers and generated families among them
    _check_corpus(CORPUS[::16])


# --------------------------------------------------------------------------
# generated statements: the tricky corners of each terminal
# --------------------------------------------------------------------------

OPERANDS = [
    "%r1", "%r2", "%rd4", "%tid.x", "%r1.x.y", "%p1", "p", "_", "$L__BB0_1", "foo", "foo.bar", "a::b",
    "4", "0", "09", "010", "0x1F", "0x1FU", "0x1fu", "0b101", "1e5", "1.5", "1.", "1.5.3", "0f3F800000",
    "0f3F80000", "0f3F8000001", "0d3FF0000000000000", "123U", "15e", "-4", "-0f3F800000", "-09", "- 4", "-x",
    "[%rd1]", "[%rd1+4]", "[%rd1+-4]", "[ %rd1 + 0 ]", "[%rd1-4]", "[%rd1+0]", "[%rd1-0]", "[foo]", "[foo+8]",
    "[0x100]", "[%rd1+4+4]", "[%rd1+1.5]", "[%rd1, {%f1, %f2}]", "[%rd1+08]", "[%rd1 +- 4]", "[]", "[%rd1",
    "{%r1, %r2}", "{ %r1, %r2, %r3, %r4 }", "{}", "{ }", "{%r1, _}", "{%r1, 4}", "{%r1, {%r2}}", "{%r1}|%p",
    "!%p1", "!p", "! %p1", "!4", "%p|%q", "p|q", "%p|", "(a, b)", "(retval0)", "()", "(1, a)", "(a, 1)",
    "(a, -1)", "(%r1, foo+4)", "foo+4", "foo+-4", "foo-0x10", "foo[2]", "foo[2][3]", "foo[1.5]", "foo+",
    "(1+2)*3", "1<<4", "~0x0F", "", " ", "\u00e9", "%r\u00e9", "a\xa0b", "%r1 %r2", "//x", "/x", '"s"', ";",
]
OPCODES = ["mov.u32", "ld.global.v4.f32", "st.global.f32", "bra.uni", "ret", "call.uni", "setp.lt.s32",
           "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "foo$bar", "a.b::c", "_x", "9add", ".reg",
           "mov .u32", "cvt.rn.f32.s32"]
GUARDS = ["", "", "", "@%p1 ", "@!%p1 ", "@ ! %p1 ", "@p ", "@%p1\t", "@%p1", "@!%p1.x ", "@"]
STATEMENTS = [
    ".reg .b32 %r<4>;", ".reg .pred p;", ".reg .pred %p<3>, %q;", ".shared .align 4 .b8 smem[1024];",
    ".local .align 8 .b8 d[];", ".local .b8 d[4][2];", ".reg .b32 %r<09>;", '.pragma "nounroll";',
    '.pragma "a//b";', '.pragma "a  b";', '.pragma\t"a\tb" ;', '.pragma "a", "b";', '.pragma "a\\"b";', ".reg .b32 a = 1;", ".loc 1 2 3", ".loc 1 2 3 // c", ".loc 1 2 3 /x", ".loc\t1 2 3",
    '.file 1 "a.cu"', ".func", ".entry k", ".reg.b32 %r1;", ".reg .b32 %r1 .x;", ".reg .b32 %r <4>;",
    ".location 1;", ".align 4 .reg .b32 %r1;", "4 .reg;", ".reg;", "L1:", "$L__BB0_1:", "a.b:", "L1 :",
    "L1: ret;", "{", "}", "{ ret; }", "// only a comment", "ret; // trailing", "ret; } // x", "/* c */ ret;",
    "ret;;", "ret", "\t", "", "bar.sync 0;", "@%p1 bra $L__BB0_1;", "mov.u32 %r1, %r2; mov.u32 %r3, %r4;",
]


def _statement(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(STATEMENTS)
    ops = ", ".join(rng.choice(OPERANDS) for _ in range(rng.randrange(0, 4)))
    sep = rng.choice([" ", "\t", "  ", "", " "])
    comment = rng.choice(["", "", "", " // c", "\t//x ", "//"])
    return f"{rng.choice(GUARDS)}{rng.choice(OPCODES)}{sep if ops else ''}{ops}{rng.choice([';', ';', ' ;', ''])}{comment}"


def _kernel(rng: random.Random) -> str:
    body = [("\t" + _statement(rng)) for _ in range(rng.randrange(1, 7))]
    if rng.random() < 0.3:
        k = rng.randrange(len(body) + 1)
        body[k:k] = ["\t{ // callseq", "\t.reg .b32 %r9;", "\tmov.u32 %r9, 1;", "\t}"]
    head = rng.choice(["{", "{ // body", "{\t"])
    tail = rng.choice(["}", "} // end", "}\n.visible .entry k2()\n{\n\tret;\n}"])
    return (".version 8.8\n.target sm_89\n.address_size 64\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n"
            + head + "\n" + "\n".join(body) + "\n" + tail + "\n")


def test_generated_statements_identical_or_same_error():
    rng = random.Random(32)
    outcomes = {"ok": 0, "error": 0}
    fast_used = 0
    for _ in range(400):
        text = _kernel(rng)
        outcome = _assert_same(text, "gen.ptx")
        outcomes[outcome] += 1
        if outcome == "ok":
            fast_used += _fast_bodies(text) > 0
    # both outcomes, and the fast path taken for many accepted kernels: the test can fail
    assert outcomes["ok"] > 20 and outcomes["error"] > 40, outcomes
    assert fast_used > 15, fast_used


def test_fast_path_is_taken_and_gives_up():
    ok = ".version 8.8\n.target sm_89\n.entry k()\n{\n\tmov.u32 %r1, %r2;\n\tret;\n}\n"
    assert _fast_bodies(ok) == 1
    odd = ".version 8.8\n.target sm_89\n.entry k()\n{\n\tmov.u32 %r1, (1+2)*3;\n\tret;\n}\n"
    assert _fast_bodies(odd) == 0  # a constant expression: Lark's
    assert _assert_same(odd) == "ok"


def test_error_in_a_body_keeps_lark_message(tmp_path):
    text = ".version 8.8\n.target sm_89\n.entry k()\n{\n\tadd.s32 %r1, %r2 %r3;\n}\n"
    lark, fast = _both(text, "bad.ptx")
    assert fast == lark == ("error", "bad.ptx:5:19: error: expected one of ',', ';', '|', found '%r3'")


def _one(line: str) -> str:
    return (".version 8.8\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<4>;\n"
            f"\t{line}\n\tret;\n}}\n")


@pytest.mark.parametrize("line", STATEMENTS + [f"mov.u32 %r1, {o};" for o in OPERANDS]
                         + [f"{g}{op} %r1;" for g in GUARDS for op in OPCODES[:4]])
def test_each_corner_alone(line):
    # every statement and operand of the generator, alone in an otherwise valid kernel
    _assert_same(_one(line), "one.ptx")
