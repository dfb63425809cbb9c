"""Unit tests of the front end, one PTX construct at a time.

Every test states the exact IR a snippet parses to (field by field), the exact
text ``emit`` prints for it, and that the printed text parses back to the same
IR (``parse(emit(m)) == m``) and prints identically again. Bugs are kept
visible as ``xfail(strict=True)`` tests at the end of the file.
"""

from __future__ import annotations

import re

import pytest

from ptxopt.ptx.emit import emit, format_instruction
from ptxopt.ptx.ir import (
    Addr, Block, Comment, Decl, DeclItem, Function, Imm, Instruction, Label, Loc, Module,
    Neg, Pair, ParenList, PerfDirective, Raw, Reg, Sym, Vec,
)
from ptxopt.ptx.parser import ParseError, parse

HEADER = ".version 8.5\n.target sm_90\n.address_size 64\n"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def round_trip(m: Module) -> str:
    """Assert the round-trip contract for ``m``; return the printed text."""
    text = emit(m)
    again = parse(text)
    assert again == m, f"parse(emit(m)) != m for:\n{text}"
    assert emit(again) == text, "printing is not idempotent"
    return text


def parse_body(stmts: str) -> tuple[Module, list]:
    """Parse ``stmts`` as the body of ``.entry k()``; return module and body items."""
    m = parse(HEADER + ".entry k()\n{\n" + stmts + "\n}\n")
    (fn,) = m.items
    assert type(fn) is Function and fn.body is not None
    return m, fn.body.items


def body_lines(text: str) -> list[str]:
    """The printed lines strictly inside the (only) function's outer braces."""
    lines = text.split("\n")
    start = lines.index("{")
    end = len(lines) - 1 - lines[::-1].index("}")
    return lines[start + 1:end]


def one_instruction(src: str) -> tuple[Instruction, str]:
    """Parse one instruction; return it and its printed line (round trip checked)."""
    m, items = parse_body(src)
    assert len(items) == 1, items
    (ins,) = items
    assert type(ins) is Instruction
    text = round_trip(m)
    (line,) = body_lines(text)
    return ins, line


# --------------------------------------------------------------------------
# operands
# --------------------------------------------------------------------------

OPERANDS = [
    # registers and special registers
    ("%r1", Reg("%r1"), "%r1"),
    ("%tid.x", Reg("%tid.x"), "%tid.x"),
    ("%ctaid.y", Reg("%ctaid.y"), "%ctaid.y"),
    ("%clock64", Reg("%clock64"), "%clock64"),
    ("%envreg3", Reg("%envreg3"), "%envreg3"),
    ("%r$x_1", Reg("%r$x_1"), "%r$x_1"),
    # integer immediates
    ("42", Imm("42"), "42"),
    ("0", Imm("0"), "0"),
    ("0x1F", Imm("0x1F"), "0x1F"),
    ("0X1f", Imm("0X1f"), "0X1f"),
    ("017", Imm("017"), "017"),
    ("0b101", Imm("0b101"), "0b101"),
    ("0B11", Imm("0B11"), "0B11"),
    ("-5", Imm("-5"), "-5"),
    ("- 5", Imm("-5"), "-5"),
    ("-0x10", Imm("-0x10"), "-0x10"),
    ("5U", Imm("5U"), "5U"),
    ("0xFFU", Imm("0xFFU"), "0xFFU"),
    ("0b1U", Imm("0b1U"), "0b1U"),
    # float immediates
    ("0f3F800000", Imm("0f3F800000"), "0f3F800000"),
    ("0F3F800000", Imm("0F3F800000"), "0F3F800000"),
    ("0d3FF0000000000000", Imm("0d3FF0000000000000"), "0d3FF0000000000000"),
    ("1.5", Imm("1.5"), "1.5"),
    ("1.", Imm("1."), "1."),
    ("1.5e3", Imm("1.5e3"), "1.5e3"),
    ("2.5E-2", Imm("2.5E-2"), "2.5E-2"),
    ("1e3", Imm("1e3"), "1e3"),
    ("-1.5", Imm("-1.5"), "-1.5"),
    # symbols
    ("sym", Sym("sym"), "sym"),
    ("$L__BB0_1", Sym("$L__BB0_1"), "$L__BB0_1"),
    ("_", Sym("_"), "_"),
    ("sym+4", Sym("sym", 4), "sym+4"),
    ("sym + 4", Sym("sym", 4), "sym+4"),
    ("sym+-4", Sym("sym", -4), "sym+-4"),
    ("sym+0x10", Sym("sym", 16), "sym+16"),
    ("sym+0", Sym("sym", 0), "sym"),
    # addresses
    ("[%rd1]", Addr(Reg("%rd1")), "[%rd1]"),
    ("[%rd1+16]", Addr(Reg("%rd1"), 16), "[%rd1+16]"),
    ("[ %rd1 + 16 ]", Addr(Reg("%rd1"), 16), "[%rd1+16]"),
    ("[%rd1+-4]", Addr(Reg("%rd1"), -4), "[%rd1+-4]"),
    ("[%rd1-4]", Addr(Reg("%rd1"), -4), "[%rd1+-4]"),
    ("[%rd1+0x10]", Addr(Reg("%rd1"), 16), "[%rd1+16]"),
    ("[sym]", Addr(Sym("sym")), "[sym]"),
    ("[sym+8]", Addr(Sym("sym"), 8), "[sym+8]"),
    ("[1024]", Addr(Imm("1024")), "[1024]"),
    ("[0x400+4]", Addr(Imm("0x400"), 4), "[0x400+4]"),
    ("[tex0, {%f5, %f6}]", Addr(Sym("tex0"), 0, (Vec((Reg("%f5"), Reg("%f6"))),)),
     "[tex0, {%f5, %f6}]"),
    # vectors
    ("{%f1, %f2}", Vec((Reg("%f1"), Reg("%f2"))), "{%f1, %f2}"),
    ("{%f1}", Vec((Reg("%f1"),)), "{%f1}"),
    ("{_, %f2}", Vec((Sym("_"), Reg("%f2"))), "{_, %f2}"),
    ("{%f1,%f2,%f3,%f4}", Vec(tuple(Reg(f"%f{i}") for i in range(1, 5))),
     "{%f1, %f2, %f3, %f4}"),
    ("{%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}", Vec(tuple(Reg(f"%r{i}") for i in range(1, 9))),
     "{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}"),
    ("{}", Vec(()), "{}"),
    # predicates
    ("!%p1", Neg(Reg("%p1")), "!%p1"),
    ("! %p1", Neg(Reg("%p1")), "!%p1"),
    ("%p1|%p2", Pair(Reg("%p1"), Reg("%p2")), "%p1|%p2"),
    ("%p1 | %p2", Pair(Reg("%p1"), Reg("%p2")), "%p1|%p2"),
    # parenthesised lists
    ("(a, b)", ParenList((Sym("a"), Sym("b"))), "(a, b)"),
    ("()", ParenList(()), "()"),
]


@pytest.mark.parametrize("src, expected, printed", OPERANDS, ids=[o[0] for o in OPERANDS])
def test_operand(src, expected, printed):
    ins, line = one_instruction(f"frob.b32 %r0, {src};")
    assert ins == Instruction("frob", ("b32",), (Reg("%r0"), expected))
    assert line == f"\tfrob.b32 \t%r0, {printed};"


# ``[%SP+0]`` and ``[%SP]`` compile differently in ptxas debug mode, so the IR
# may keep an explicit ``+0`` (Addr.plus_zero); without that field both are one.
HAS_PLUS_ZERO = "plus_zero" in Addr.__dataclass_fields__


@pytest.mark.parametrize("src", ["[%rd1+0]", "[%rd1+-0]", "[%rd1-0]", "[%rd1+0x0]"])
def test_address_with_zero_offset(src):
    ins, line = one_instruction(f"ld.u32 %r0, {src};")
    if HAS_PLUS_ZERO:
        assert ins.operands[1] == Addr(Reg("%rd1"), 0, (), True)
        assert line == "\tld.u32 \t%r0, [%rd1+0];"
    else:
        assert ins.operands[1] == Addr(Reg("%rd1"), 0)
        assert line == "\tld.u32 \t%r0, [%rd1];"
    plain, _ = one_instruction("ld.u32 %r0, [%rd1];")
    assert plain.operands[1] == Addr(Reg("%rd1"))
    assert (plain == ins) is not HAS_PLUS_ZERO


@pytest.mark.parametrize("text, value", [
    ("42", 42), ("0x1F", 31), ("0X1f", 31), ("017", 15), ("0b101", 5), ("-5", -5),
    ("-0x10", -16), ("5U", 5), ("0xFFU", 255), ("0", 0),
    ("0f3F800000", 1.0), ("0fBF800000", -1.0), ("0d3FF0000000000000", 1.0),
    ("0d4000000000000000", 2.0), ("1.5", 1.5), ("1.5e3", 1500.0), ("1e3", 1000.0), ("-1.5", -1.5),
])
def test_immediate_value(text, value):
    ins, _ = one_instruction(f"mov.b32 %r0, {text};")
    imm = ins.operands[1]
    assert imm == Imm(text)
    assert imm.value() == value
    assert type(imm.value()) is type(value)
    assert imm.is_float == isinstance(value, float)


def test_special_registers_and_guards_in_context():
    m, items = parse_body(
        "mov.u32 %r1, %tid.x;\n"
        "mov.u64 %rd1, %clock64;\n"
        "@%p1 bra $L__BB0_1;\n"
        "@!%p2 bra.uni $L__BB0_1;\n"
        "@%p3 ret;\n"
        "$L__BB0_1:\n"
        "exit;"
    )
    assert items == [
        Instruction("mov", ("u32",), (Reg("%r1"), Reg("%tid.x"))),
        Instruction("mov", ("u64",), (Reg("%rd1"), Reg("%clock64"))),
        Instruction("bra", (), (Sym("$L__BB0_1"),), "%p1", False),
        Instruction("bra", ("uni",), (Sym("$L__BB0_1"),), "%p2", True),
        Instruction("ret", (), (), "%p3", False),
        Label("$L__BB0_1"),
        Instruction("exit"),
    ]
    assert body_lines(round_trip(m)) == [
        "\tmov.u32 \t%r1, %tid.x;",
        "\tmov.u64 \t%rd1, %clock64;",
        "\t@%p1 bra \t$L__BB0_1;",
        "\t@!%p2 bra.uni \t$L__BB0_1;",
        "\t@%p3 ret;",
        "$L__BB0_1:",
        "\texit;",
    ]


def test_guard_is_not_an_operand():
    ins, line = one_instruction("@!%p7 st.global.u32 [%rd1], %r1;")
    assert ins.guard == "%p7" and ins.guard_neg is True
    assert ins.operands == (Addr(Reg("%rd1")), Reg("%r1"))
    assert line == "\t@!%p7 st.global.u32 \t[%rd1], %r1;"
    plain, line = one_instruction("@%p7 st.global.u32 [%rd1], %r1;")
    assert plain.guard == "%p7" and plain.guard_neg is False
    assert plain != ins  # the negation is part of the IR
    assert line == "\t@%p7 st.global.u32 \t[%rd1], %r1;"


@pytest.mark.parametrize("src, expected, printed", [
    ("ld.global.v2.f32 {%f1, %f2}, [%rd1+8];",
     Instruction("ld", ("global", "v2", "f32"), (Vec((Reg("%f1"), Reg("%f2"))), Addr(Reg("%rd1"), 8))),
     "\tld.global.v2.f32 \t{%f1, %f2}, [%rd1+8];"),
    ("ld.global.nc.v4.f32 {%f2, %f3, %f4, %f5}, [%rd9];",
     Instruction("ld", ("global", "nc", "v4", "f32"),
                 (Vec(tuple(Reg(f"%f{i}") for i in range(2, 6))), Addr(Reg("%rd9")))),
     "\tld.global.nc.v4.f32 \t{%f2, %f3, %f4, %f5}, [%rd9];"),
    ("st.shared.v4.u32 [smem+16], {%r1, %r2, %r3, %r4};",
     Instruction("st", ("shared", "v4", "u32"),
                 (Addr(Sym("smem"), 16), Vec(tuple(Reg(f"%r{i}") for i in range(1, 5))))),
     "\tst.shared.v4.u32 \t[smem+16], {%r1, %r2, %r3, %r4};"),
    ("ld.global.v8.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, [%rd1];",
     Instruction("ld", ("global", "v8", "f32"),
                 (Vec(tuple(Reg(f"%f{i}") for i in range(1, 9))), Addr(Reg("%rd1")))),
     "\tld.global.v8.f32 \t{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd1];"),
    ("ld.shared.v2.f32 {_, %f2}, [%r1+-8];",
     Instruction("ld", ("shared", "v2", "f32"), (Vec((Sym("_"), Reg("%f2"))), Addr(Reg("%r1"), -8))),
     "\tld.shared.v2.f32 \t{_, %f2}, [%r1+-8];"),
    ("mov.b64 %rd1, {%r1, %r2};",
     Instruction("mov", ("b64",), (Reg("%rd1"), Vec((Reg("%r1"), Reg("%r2"))))),
     "\tmov.b64 \t%rd1, {%r1, %r2};"),
    ("mov.b32 {%h1}, %r1;",
     Instruction("mov", ("b32",), (Vec((Reg("%h1"),)), Reg("%r1"))),
     "\tmov.b32 \t{%h1}, %r1;"),
    ("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];",
     Instruction("tex", ("2d", "v4", "f32", "f32"),
                 (Vec(tuple(Reg(f"%f{i}") for i in range(1, 5))),
                  Addr(Sym("tex0"), 0, (Vec((Reg("%f5"), Reg("%f6"))),)))),
     "\ttex.2d.v4.f32.f32 \t{%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];"),
    ("ld.global.u32 %r1, [1024];",
     Instruction("ld", ("global", "u32"), (Reg("%r1"), Addr(Imm("1024")))),
     "\tld.global.u32 \t%r1, [1024];"),
])
def test_vector_loads_and_stores(src, expected, printed):
    ins, line = one_instruction(src)
    assert ins == expected
    assert line == printed


def test_predicate_operands():
    ins, line = one_instruction("setp.eq.s32 %p1|%p2, %r1, %r2;")
    assert ins.operands[0] == Pair(Reg("%p1"), Reg("%p2"))
    assert line == "\tsetp.eq.s32 \t%p1|%p2, %r1, %r2;"
    ins, line = one_instruction("selp.b32 %r1, 1, 0, !%p1;")
    assert ins.operands == (Reg("%r1"), Imm("1"), Imm("0"), Neg(Reg("%p1")))
    assert line == "\tselp.b32 \t%r1, 1, 0, !%p1;"
    ins, line = one_instruction("shfl.sync.bfly.b32 %r1|%p1, %r2, 16, 31, -1;")
    assert ins.operands == (Pair(Reg("%r1"), Reg("%p1")), Reg("%r2"), Imm("16"), Imm("31"), Imm("-1"))
    assert line == "\tshfl.sync.bfly.b32 \t%r1|%p1, %r2, 16, 31, -1;"


def test_call_operands_direct():
    ins, line = one_instruction("call.uni (retval0), fn, (param0, param1);")
    assert ins == Instruction("call", ("uni",), (
        ParenList((Sym("retval0"),)), Sym("fn"), ParenList((Sym("param0"), Sym("param1")))))
    assert line == "\tcall.uni \t(retval0), fn, (param0, param1);"


def test_call_operands_indirect_with_prototype():
    ins, line = one_instruction("call (r), %rd5, (p), prototype_0;")
    assert ins == Instruction("call", (), (
        ParenList((Sym("r"),)), Reg("%rd5"), ParenList((Sym("p"),)), Sym("prototype_0")))
    assert line == "\tcall \t(r), %rd5, (p), prototype_0;"


@pytest.mark.parametrize("src, operands, printed", [
    ("call.uni fn, ();", (Sym("fn"), ParenList(())), "\tcall.uni \tfn, ();"),
    ("call.uni fn;", (Sym("fn"),), "\tcall.uni \tfn;"),
    ("call.uni (_), vprintf, (param0, param1);",
     (ParenList((Sym("_"),)), Sym("vprintf"), ParenList((Sym("param0"), Sym("param1")))),
     "\tcall.uni \t(_), vprintf, (param0, param1);"),
])
def test_call_operand_shapes(src, operands, printed):
    ins, line = one_instruction(src)
    assert ins.opcode == "call" and ins.operands == operands
    assert line == printed


def test_call_sequence_scope():
    m, items = parse_body(
        "{ // callseq 0\n"
        ".param .b64 param0;\n"
        "st.param.b64 [param0], %rd1;\n"
        ".param .b32 retval0;\n"
        "call.uni (retval0), fn, (param0);\n"
        "ld.param.b32 %r1, [retval0];\n"
        "} // callseq 0\n"
    )
    assert items == [
        Block([
            Comment("// callseq 0", trailing=False),
            Decl((".param", ".b64"), (DeclItem("param0"),)),
            Instruction("st", ("param", "b64"), (Addr(Sym("param0")), Reg("%rd1"))),
            Decl((".param", ".b32"), (DeclItem("retval0"),)),
            Instruction("call", ("uni",), (ParenList((Sym("retval0"),)), Sym("fn"),
                                           ParenList((Sym("param0"),)))),
            Instruction("ld", ("param", "b32"), (Reg("%r1"), Addr(Sym("retval0")))),
        ]),
        Comment("// callseq 0", trailing=False),
    ]
    assert body_lines(round_trip(m)) == [
        "\t{",
        "\t\t// callseq 0",
        "\t\t.param .b64 param0;",
        "\t\tst.param.b64 \t[param0], %rd1;",
        "\t\t.param .b32 retval0;",
        "\t\tcall.uni \t(retval0), fn, (param0);",
        "\t\tld.param.b32 \t%r1, [retval0];",
        "\t}",
        "\t// callseq 0",
    ]


# --------------------------------------------------------------------------
# opcodes and modifiers the grammar has never seen
# --------------------------------------------------------------------------


@pytest.mark.parametrize("src, opcode, modifiers", [
    ("frobnicate.xyz.abc.b32 %r1, %r2;", "frobnicate", ("xyz", "abc", "b32")),
    ("ld.global.L2::256B.f32 %r1, %r2;", "ld", ("global", "L2::256B", "f32")),
    ("ld.global.L1::evict_last.L2::cache_hint.f32 %r1, %r2;", "ld",
     ("global", "L1::evict_last", "L2::cache_hint", "f32")),
    ("tcgen05.mma.cta_group::1.kind::f16 %r1, %r2;", "tcgen05", ("mma", "cta_group::1", "kind::f16")),
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 %r1, %r2;", "wgmma",
     ("mma_async", "sync", "aligned", "m64n128k16", "f32", "bf16", "bf16")),
    ("tex.2d.v4.f32.f32 %r1, %r2;", "tex", ("2d", "v4", "f32", "f32")),
    ("zz$op.$m %r1, %r2;", "zz$op", ("$m",)),
])
def test_unknown_opcodes_and_modifiers_round_trip(src, opcode, modifiers):
    ins, line = one_instruction(src)
    assert ins == Instruction(opcode, modifiers, (Reg("%r1"), Reg("%r2")))
    assert ins.full_opcode == src.split()[0]
    assert line == "\t" + src.split()[0] + " \t%r1, %r2;"


def test_unknown_opcode_without_operands_and_with_memory_operand():
    ins, line = one_instruction("ld.global.L2::256B.f32 %f1, [%rd1];")
    assert ins == Instruction("ld", ("global", "L2::256B", "f32"), (Reg("%f1"), Addr(Reg("%rd1"))))
    assert line == "\tld.global.L2::256B.f32 \t%f1, [%rd1];"
    ins, line = one_instruction("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;")
    assert ins == Instruction(
        "fence", ("proxy", "async::generic", "release", "sync_restrict::shared::cta", "cluster"))
    assert line == "\tfence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;"


def test_format_instruction_matches_emit():
    ins = Instruction("add", ("s32",), (Reg("%r1"), Reg("%r2"), Imm("-3")), "%p1", True)
    assert format_instruction(ins) == "@!%p1 add.s32 \t%r1, %r2, -3;"


# --------------------------------------------------------------------------
# module header
# --------------------------------------------------------------------------


def test_header_with_several_targets():
    m = parse(".version 8.5\n.target sm_90a, debug\n.address_size 64\n")
    assert m == Module("8.5", ("sm_90a", "debug"), 64, [])
    assert m.arch == "sm_90a" and m.version_tuple == (8, 5)
    assert round_trip(m) == ".version 8.5\n.target sm_90a, debug\n.address_size 64\n"


def test_header_three_targets_without_address_size():
    m = parse(".version 7.0 .target sm_80, texmode_independent, map_f64_to_f32")
    assert m == Module("7.0", ("sm_80", "texmode_independent", "map_f64_to_f32"), None, [])
    assert round_trip(m) == ".version 7.0\n.target sm_80, texmode_independent, map_f64_to_f32\n"


def test_header_address_size_32():
    m = parse(".version 10.0\n.target sm_100a\n.address_size 32\n")
    assert (m.version, m.target, m.address_size) == ("10.0", ("sm_100a",), 32)
    assert m.version_tuple == (10, 0)
    assert round_trip(m) == ".version 10.0\n.target sm_100a\n.address_size 32\n"


# --------------------------------------------------------------------------
# module-level variables
# --------------------------------------------------------------------------

MODULE_DECLS = [
    (".global .align 4 .b8 arr[2][3] = {{1,2,3},{4,5,6}};",
     Decl((".global", ".align", "4", ".b8"), (DeclItem("arr", None, ("2", "3")),),
          (("1", "2", "3"), ("4", "5", "6"))),
     ".global .align 4 .b8 arr[2][3] = {{1, 2, 3}, {4, 5, 6}};"),
    (".global .u32 counter;",
     Decl((".global", ".u32"), (DeclItem("counter"),)),
     ".global .u32 counter;"),
    (".global .u32 a, b, c;",
     Decl((".global", ".u32"), (DeclItem("a"), DeclItem("b"), DeclItem("c"))),
     ".global .u32 a, b, c;"),
    (".const .align 8 .f64 tbl[4] = {0d3FF0000000000000, 0d4000000000000000, 1.5, -2.0};",
     Decl((".const", ".align", "8", ".f64"), (DeclItem("tbl", None, ("4",)),),
          ("0d3FF0000000000000", "0d4000000000000000", "1.5", "-2.0")),
     ".const .align 8 .f64 tbl[4] = {0d3FF0000000000000, 0d4000000000000000, 1.5, -2.0};"),
    (".global .f32 one = 0f3F800000;",
     Decl((".global", ".f32"), (DeclItem("one"),), "0f3F800000"),
     ".global .f32 one = 0f3F800000;"),
    (".global .s32 n = -5;",
     Decl((".global", ".s32"), (DeclItem("n"),), "-5"),
     ".global .s32 n = -5;"),
    (".global .u64 p = generic(x);",
     Decl((".global", ".u64"), (DeclItem("p"),), "generic(x)"),
     ".global .u64 p = generic(x);"),
    (".global .u64 q[3] = {generic(x)+4, x+-8, x + 8};",
     Decl((".global", ".u64"), (DeclItem("q", None, ("3",)),), ("generic(x)+4", "x+-8", "x+8")),
     ".global .u64 q[3] = {generic(x)+4, x+-8, x+8};"),
    (".global .u8 grid[2][2][2] = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};",
     Decl((".global", ".u8"), (DeclItem("grid", None, ("2", "2", "2")),),
          ((("1", "2"), ("3", "4")), (("5", "6"), ("7", "8")))),
     ".global .u8 grid[2][2][2] = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};"),
    (".extern .shared .align 16 .b8 dyn_smem[];",
     Decl((".extern", ".shared", ".align", "16", ".b8"), (DeclItem("dyn_smem", None, ("",)),)),
     ".extern .shared .align 16 .b8 dyn_smem[];"),
    (".visible .global .align 4 .u32 vis;",
     Decl((".visible", ".global", ".align", "4", ".u32"), (DeclItem("vis"),)),
     ".visible .global .align 4 .u32 vis;"),
    (".weak .global .u32 weak_var;",
     Decl((".weak", ".global", ".u32"), (DeclItem("weak_var"),)),
     ".weak .global .u32 weak_var;"),
    (".common .global .u32 common_var;",
     Decl((".common", ".global", ".u32"), (DeclItem("common_var"),)),
     ".common .global .u32 common_var;"),
    (".extern .global .u32 ext_var;",
     Decl((".extern", ".global", ".u32"), (DeclItem("ext_var"),)),
     ".extern .global .u32 ext_var;"),
    (".global .texref tex0;",
     Decl((".global", ".texref"), (DeclItem("tex0"),)),
     ".global .texref tex0;"),
    (".global .attribute(.managed) .align 4 .u32 managed_var;",
     Decl((".global", ".attribute(.managed)", ".align", "4", ".u32"), (DeclItem("managed_var"),)),
     ".global .attribute(.managed) .align 4 .u32 managed_var;"),
    (".global .attribute(.unified(0x1, 0x2)) .u32 u;",
     Decl((".global", ".attribute(.unified(0x1, 0x2))", ".u32"), (DeclItem("u"),)),
     ".global .attribute(.unified(0x1, 0x2)) .u32 u;"),
]


@pytest.mark.parametrize("src, expected, printed", MODULE_DECLS, ids=[d[2] for d in MODULE_DECLS])
def test_module_level_variable(src, expected, printed):
    m = parse(HEADER + src + "\n")
    assert m.items == [expected]
    assert round_trip(m) == HEADER + printed + "\n"


def test_decl_properties():
    m = parse(HEADER + ".extern .shared .align 16 .b8 dyn[];\n.global .u32 plain;\n")
    d, plain = m.items
    assert (d.space, d.dtype, d.align, d.is_ptr, d.name) == (".shared", ".b8", 16, False, "dyn")
    assert (plain.space, plain.dtype, plain.align, plain.name) == (".global", ".u32", None, "plain")


# --------------------------------------------------------------------------
# functions
# --------------------------------------------------------------------------


def test_entry_with_linkage_params_and_performance_directives():
    src = HEADER + (
        ".visible .entry kern(\n"
        "\t.param .u64 .ptr .global .align 16 kern_param_0,\n"
        "\t.param .align 16 .b8 kern_param_1[16],\n"
        "\t.param .u32 kern_param_2\n"
        ")\n"
        ".maxntid 256, 1, 1\n"
        ".minnctapersm 2\n"
        "{\n\tret;\n}\n"
    )
    m = parse(src)
    (fn,) = m.items
    assert fn == Function(
        ".entry", "kern", (".visible",),
        params=(
            Decl((".param", ".u64", ".ptr", ".global", ".align", "16"), (DeclItem("kern_param_0"),)),
            Decl((".param", ".align", "16", ".b8"), (DeclItem("kern_param_1", None, ("16",)),)),
            Decl((".param", ".u32"), (DeclItem("kern_param_2"),)),
        ),
        ret_params=None,
        directives=(PerfDirective(".maxntid", ("256", "1", "1")), PerfDirective(".minnctapersm", ("2",))),
        body=Block([Instruction("ret")]),
    )
    p0 = fn.params[0]
    assert p0.is_ptr and p0.align == 16 and p0.space == ".param" and p0.dtype == ".u64"
    assert fn.params[1].align == 16 and not fn.params[1].is_ptr
    assert fn.is_entry and m.entries == [fn] and m.function("kern") is fn
    assert fn.directive(".maxntid") == PerfDirective(".maxntid", ("256", "1", "1"))
    assert fn.directive(".maxnreg") is None
    assert round_trip(m) == src.replace(HEADER, HEADER + "\n")


@pytest.mark.parametrize("src, directives, printed", [
    (".maxnreg 64", (PerfDirective(".maxnreg", ("64",)),), [".maxnreg 64"]),
    (".maxntid 128, 2, 1", (PerfDirective(".maxntid", ("128", "2", "1")),), [".maxntid 128, 2, 1"]),
    (".maxntid 128", (PerfDirective(".maxntid", ("128",)),), [".maxntid 128"]),
    (".reqntid 32, 4", (PerfDirective(".reqntid", ("32", "4")),), [".reqntid 32, 4"]),
    (".minnctapersm 4", (PerfDirective(".minnctapersm", ("4",)),), [".minnctapersm 4"]),
    (".maxclusterrank 8", (PerfDirective(".maxclusterrank", ("8",)),), [".maxclusterrank 8"]),
    ('.pragma "nounroll";', (PerfDirective(".pragma", ('"nounroll"',)),), ['.pragma "nounroll";']),
    (".noreturn", (PerfDirective(".noreturn"),), [".noreturn"]),
    ('.maxnreg 32 .reqntid 64, 1, 1 .pragma "nounroll"; .noreturn',
     (PerfDirective(".maxnreg", ("32",)), PerfDirective(".reqntid", ("64", "1", "1")),
      PerfDirective(".pragma", ('"nounroll"',)), PerfDirective(".noreturn")),
     [".maxnreg 32", ".reqntid 64, 1, 1", '.pragma "nounroll";', ".noreturn"]),
])
def test_performance_directives(src, directives, printed):
    m = parse(HEADER + f".entry k() {src}\n{{\n\tret;\n}}\n")
    (fn,) = m.items
    assert fn.directives == directives
    assert fn.params == () and fn.body == Block([Instruction("ret")])
    text = round_trip(m)
    assert text == HEADER + "\n.entry k()\n" + "".join(p + "\n" for p in printed) + "{\n\tret;\n}\n"


def test_func_with_return_parameter():
    src = HEADER + (
        ".func  (.param .b32 func_retval0) add_one(.param .b32 add_one_param_0)\n"
        "{\n"
        "\t.reg .b32 %r<3>;\n"
        "\tld.param.b32 %r1, [add_one_param_0];\n"
        "\tadd.s32 %r2, %r1, 1;\n"
        "\tst.param.b32 [func_retval0], %r2;\n"
        "\tret;\n"
        "}\n"
    )
    m = parse(src)
    (fn,) = m.items
    assert fn.kind == ".func" and fn.name == "add_one" and fn.linkage == ()
    assert fn.ret_params == (Decl((".param", ".b32"), (DeclItem("func_retval0"),)),)
    assert fn.params == (Decl((".param", ".b32"), (DeclItem("add_one_param_0"),)),)
    assert not fn.is_entry and m.entries == []
    assert fn.body.items[0] == Decl((".reg", ".b32"), (DeclItem("%r", 3),))
    assert [i.opcode for i in fn.instructions()] == ["ld", "add", "st", "ret"]
    assert round_trip(m) == HEADER + (
        "\n.func (.param .b32 func_retval0) add_one(\n"
        "\t.param .b32 add_one_param_0\n"
        ")\n"
        "{\n"
        "\t.reg .b32 %r<3>;\n"
        "\tld.param.b32 \t%r1, [add_one_param_0];\n"
        "\tadd.s32 \t%r2, %r1, 1;\n"
        "\tst.param.b32 \t[func_retval0], %r2;\n"
        "\tret;\n"
        "}\n"
    )


def test_function_declarations_with_linkage():
    src = HEADER + (
        ".extern .func  (.param .b32 func_retval0) vprintf\n"
        "(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;\n"
        ".weak .func helper();\n"
        ".visible .entry decl_only(.param .u32 n);\n"
        ".extern .func noargs;\n"
    )
    m = parse(src)
    vp, helper, decl_only, noargs = m.items
    assert vp == Function(".func", "vprintf", (".extern",),
                          params=(Decl((".param", ".b64"), (DeclItem("vprintf_param_0"),)),
                                  Decl((".param", ".b64"), (DeclItem("vprintf_param_1"),))),
                          ret_params=(Decl((".param", ".b32"), (DeclItem("func_retval0"),)),))
    assert helper == Function(".func", "helper", (".weak",), params=())
    assert decl_only == Function(".entry", "decl_only", (".visible",),
                                 params=(Decl((".param", ".u32"), (DeclItem("n"),)),))
    assert noargs == Function(".func", "noargs", (".extern",), params=None)
    assert all(f.body is None for f in m.functions) and m.entries == []
    with pytest.raises(KeyError):
        m.function("helper")  # a declaration is not a definition
    assert round_trip(m) == HEADER + (
        "\n.extern .func (.param .b32 func_retval0) vprintf(\n"
        "\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;\n"
        "\n.weak .func helper()\n;\n"
        "\n.visible .entry decl_only(\n\t.param .u32 n\n)\n;\n"
        "\n.extern .func noargs\n;\n"
    )


def test_function_definitions_with_each_linkage():
    src = HEADER + "".join(
        f"{link} .func f_{i}() {{ ret; }}\n"
        for i, link in enumerate([".visible", ".weak", ".extern", ".visible .weak", ""])
    )
    m = parse(src)
    assert [f.linkage for f in m.functions] == [
        (".visible",), (".weak",), (".extern",), (".visible", ".weak"), ()]
    assert all(f.body == Block([Instruction("ret")]) for f in m.functions)
    assert round_trip(m).count("{\n\tret;\n}\n") == 5


def test_entry_without_parameter_list_and_empty_body():
    m = parse(HEADER + ".entry bare\n{\n}\n")
    (fn,) = m.items
    assert fn == Function(".entry", "bare", (), params=None, body=Block([]))
    assert round_trip(m) == HEADER + "\n.entry bare\n{\n}\n"


def test_params_that_are_not_plain():
    src = HEADER + (
        ".entry k(.param .align 16 .b8 k_p[16], .param .u64 .ptr .shared .align 8 k_s,"
        " .param .u32 .noalias k_n, .param .texref k_t, .param .b32 k_arr[4][2])\n{\n}\n"
    )
    m = parse(src)
    (fn,) = m.items
    assert [p.attrs for p in fn.params] == [
        (".param", ".align", "16", ".b8"),
        (".param", ".u64", ".ptr", ".shared", ".align", "8"),
        (".param", ".u32", ".noalias"),
        (".param", ".texref"),
        (".param", ".b32"),
    ]
    assert [p.items for p in fn.params] == [
        (DeclItem("k_p", None, ("16",)),), (DeclItem("k_s"),), (DeclItem("k_n"),),
        (DeclItem("k_t"),), (DeclItem("k_arr", None, ("4", "2")),)]
    assert [p.name for p in fn.params] == ["k_p", "k_s", "k_n", "k_t", "k_arr"]
    round_trip(m)


# --------------------------------------------------------------------------
# declarations inside bodies
# --------------------------------------------------------------------------

BODY_DECLS = [
    (".reg .b32 %r<100>;", Decl((".reg", ".b32"), (DeclItem("%r", 100),)), ".reg .b32 %r<100>;"),
    (".reg .pred %p<3>;", Decl((".reg", ".pred"), (DeclItem("%p", 3),)), ".reg .pred %p<3>;"),
    (".reg .b64 %rd<0x10>;", Decl((".reg", ".b64"), (DeclItem("%rd", 16),)), ".reg .b64 %rd<16>;"),
    (".reg .f32 %f1, %f2;", Decl((".reg", ".f32"), (DeclItem("%f1"), DeclItem("%f2"))),
     ".reg .f32 %f1, %f2;"),
    (".reg .v4 .f32 %v;", Decl((".reg", ".v4", ".f32"), (DeclItem("%v"),)), ".reg .v4 .f32 %v;"),
    (".reg .b32 %a<2>, %b, %c<4>;",
     Decl((".reg", ".b32"), (DeclItem("%a", 2), DeclItem("%b"), DeclItem("%c", 4))),
     ".reg .b32 %a<2>, %b, %c<4>;"),
    (".shared .align 4 .b8 smem[128];",
     Decl((".shared", ".align", "4", ".b8"), (DeclItem("smem", None, ("128",)),)),
     ".shared .align 4 .b8 smem[128];"),
    (".shared .f32 tile[16][17];",
     Decl((".shared", ".f32"), (DeclItem("tile", None, ("16", "17")),)),
     ".shared .f32 tile[16][17];"),
    (".local .align 8 .b8 __local_depot0[16];",
     Decl((".local", ".align", "8", ".b8"), (DeclItem("__local_depot0", None, ("16",)),)),
     ".local .align 8 .b8 __local_depot0[16];"),
    ('.pragma "nounroll";', Decl((".pragma",), (DeclItem('"nounroll"'),)), '.pragma "nounroll";'),
    (".param .b32 retval0;", Decl((".param", ".b32"), (DeclItem("retval0"),)), ".param .b32 retval0;"),
    (".param .align 16 .b8 param0[32];",
     Decl((".param", ".align", "16", ".b8"), (DeclItem("param0", None, ("32",)),)),
     ".param .align 16 .b8 param0[32];"),
]


@pytest.mark.parametrize("src, expected, printed", BODY_DECLS, ids=[d[2] for d in BODY_DECLS])
def test_body_declaration(src, expected, printed):
    m, items = parse_body(src)
    assert items == [expected]
    assert body_lines(round_trip(m)) == ["\t" + printed]


def test_register_declaration_names():
    d = Decl((".reg", ".b32"), (DeclItem("%r", 3), DeclItem("%x")))
    assert d.items[0].names() == ["%r0", "%r1", "%r2"]
    assert d.items[1].names() == ["%x"]
    assert d.dtype == ".b32" and d.space == ".reg"


def test_nested_scopes_and_labels():
    m, items = parse_body(
        "mov.u32 %r1, 0;\n"
        "$L__BB0_1:\n"
        "{\n"
        "  .reg .b32 %t;\n"
        "  {\n"
        "    inner: add.s32 %t, %t, 1;\n"
        "  }\n"
        "  { }\n"
        "}\n"
        "L2: L3:\n"
        "@%p1 bra $L__BB0_1;"
    )
    assert items == [
        Instruction("mov", ("u32",), (Reg("%r1"), Imm("0"))),
        Label("$L__BB0_1"),
        Block([
            Decl((".reg", ".b32"), (DeclItem("%t"),)),
            Block([Label("inner"), Instruction("add", ("s32",), (Reg("%t"), Reg("%t"), Imm("1")))]),
            Block([]),
        ]),
        Label("L2"),
        Label("L3"),
        Instruction("bra", (), (Sym("$L__BB0_1"),), "%p1"),
    ]
    text = round_trip(m)
    assert body_lines(text) == [
        "\tmov.u32 \t%r1, 0;",
        "$L__BB0_1:",
        "\t{",
        "\t\t.reg .b32 %t;",
        "\t\t{",
        "inner:",
        "\t\t\tadd.s32 \t%t, %t, 1;",
        "\t\t}",
        "\t\t{",
        "\t\t}",
        "\t}",
        "L2:",
        "L3:",
        "\t@%p1 bra \t$L__BB0_1;",
    ]
    fn = m.items[0]
    assert [i.opcode for i in fn.instructions()] == ["mov", "add", "bra"]


def test_bare_register_names_become_registers():
    """`.reg .pred p;` (inline asm style) makes `p` a register wherever it is used."""
    m, items = parse_body(
        "{\n"
        ".reg .pred p, q;\n"
        ".reg .b32 t<2>;\n"
        "setp.ne.b32 p|q, t0, 0;\n"
        "@!p mov.b32 t1, t0;\n"
        "selp.b32 t1, 1, 0, !q;\n"
        "ld.shared.b32 t0, [t1+4];\n"
        "bra done;\n"
        "}\n"
        "done:"
    )
    blk = items[0]
    assert blk.items[2:] == [
        Instruction("setp", ("ne", "b32"), (Pair(Reg("p"), Reg("q")), Reg("t0"), Imm("0"))),
        Instruction("mov", ("b32",), (Reg("t1"), Reg("t0")), "p", True),
        Instruction("selp", ("b32",), (Reg("t1"), Imm("1"), Imm("0"), Neg(Reg("q")))),
        Instruction("ld", ("shared", "b32"), (Reg("t0"), Addr(Reg("t1"), 4))),
        Instruction("bra", (), (Sym("done"),)),  # a label stays a symbol
    ]
    assert body_lines(round_trip(m))[3:6] == [
        "\t\tsetp.ne.b32 \tp|q, t0, 0;",
        "\t\t@!p mov.b32 \tt1, t0;",
        "\t\tselp.b32 \tt1, 1, 0, !q;",
    ]


def test_undeclared_bare_names_stay_symbols():
    _, items = parse_body("mov.b32 %r1, t0;")
    assert items[0].operands == (Reg("%r1"), Sym("t0"))


# --------------------------------------------------------------------------
# debug directives, sections, prototypes, branch targets
# --------------------------------------------------------------------------


def test_loc_and_file_directives():
    src = HEADER + (
        '.file 1 "/src/kernel.cu"\n'
        '.file 2 "/usr/include/math.h", 1700000000, 1234\n'
        ".entry k()\n{\n"
        "\t.loc 1 12 5\n"
        "\tret;\n"
        "\t.loc 1 5 3, function_name $L__info_string0, inlined_at 1 10 5\n"
        '\t.file 3 "inner.h"\n'
        "}\n"
    )
    m = parse(src)
    f1, f2, fn = m.items
    assert f1 == Raw('.file 1 "/src/kernel.cu"')
    assert f2 == Raw('.file 2 "/usr/include/math.h", 1700000000, 1234')
    assert fn.body.items == [
        Loc(".loc 1 12 5"),
        Instruction("ret"),
        Loc(".loc 1 5 3, function_name $L__info_string0, inlined_at 1 10 5"),
        Raw('.file 3 "inner.h"'),
    ]
    assert round_trip(m) == HEADER + (
        '.file 1 "/src/kernel.cu"\n'
        '.file 2 "/usr/include/math.h", 1700000000, 1234\n'
        "\n.entry k()\n{\n"
        "\t.loc 1 12 5\n"
        "\tret;\n"
        "\t.loc 1 5 3, function_name $L__info_string0, inlined_at 1 10 5\n"
        '\t.file 3 "inner.h"\n'
        "}\n"
    )


def test_loc_is_not_local():
    """`.local` must not be lexed as `.loc` + `al ...`."""
    _, items = parse_body(".local .b32 x;\n.location_x .b32 y;")
    assert items == [Decl((".local", ".b32"), (DeclItem("x"),)),
                     Decl((".location_x", ".b32"), (DeclItem("y"),))]


def test_debug_sections_are_kept_verbatim():
    section = (
        ".section .debug_abbrev\n"
        "{\n"
        ".b8 1\n"
        ".b8 17\n"
        "}"
    )
    src = HEADER + section + "\n.section .debug_info { .b32 5 }\n"
    m = parse(src)
    assert m.items == [Raw(section), Raw(".section .debug_info { .b32 5 }")]
    assert round_trip(m) == src


def test_callprototype_and_branchtargets():
    m, items = parse_body(
        "prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);\n"
        "ts: .branchtargets L1, L2;\n"
        "brx.idx %r1, ts;\n"
        "L1:\nL2:\nret;"
    )
    assert items == [
        Label("prototype_0"),
        Raw(".callprototype (.param .b32 _) _ (.param .b64 _);"),
        Label("ts"),
        Decl((".branchtargets",), (DeclItem("L1"), DeclItem("L2"))),
        Instruction("brx", ("idx",), (Reg("%r1"), Sym("ts"))),
        Label("L1"), Label("L2"), Instruction("ret"),
    ]
    assert body_lines(round_trip(m)) == [
        "prototype_0:",
        "\t.callprototype (.param .b32 _) _ (.param .b64 _);",
        "ts:",
        "\t.branchtargets L1, L2;",
        "\tbrx.idx \t%r1, ts;",
        "L1:", "L2:", "\tret;",
    ]


def test_pragma_inside_body():
    m, items = parse_body('.pragma "nounroll";\n$L__loop:\nbra $L__loop;')
    assert items[0] == Decl((".pragma",), (DeclItem('"nounroll"'),))
    assert body_lines(round_trip(m))[0] == '\t.pragma "nounroll";'


# --------------------------------------------------------------------------
# comments
# --------------------------------------------------------------------------


def test_comments_before_version_are_header_comments():
    src = "//\n// Generated by NVIDIA NVVM Compiler\n/* block\n   header */\n.version 8.5\n.target sm_90\n"
    m = parse(src)
    assert m.header_comments == (
        Comment("//"), Comment("// Generated by NVIDIA NVVM Compiler"), Comment("/* block\n   header */"))
    assert m.items == []
    assert round_trip(m) == src


def test_leading_trailing_and_block_comments_in_body():
    m, items = parse_body(
        "// leading\n"
        "mov.u32 %r1, 1; // trailing\n"
        "/* block comment\n   spanning lines */\n"
        "add.s32 %r1, %r1, 1; /* trailing block */ /* and another */\n"
        "L1: // on a label\n"
        "/* before */ ret;"
    )
    assert items == [
        Comment("// leading", False),
        Instruction("mov", ("u32",), (Reg("%r1"), Imm("1"))),
        Comment("// trailing", True),
        Comment("/* block comment\n   spanning lines */", False),
        Instruction("add", ("s32",), (Reg("%r1"), Reg("%r1"), Imm("1"))),
        Comment("/* trailing block */", True),
        Comment("/* and another */", True),
        Label("L1"),
        Comment("// on a label", True),
        Comment("/* before */", False),
        Instruction("ret"),
    ]
    assert body_lines(round_trip(m)) == [
        "\t// leading",
        "\tmov.u32 \t%r1, 1;\t// trailing",
        "\t/* block comment",
        "   spanning lines */",
        "\tadd.s32 \t%r1, %r1, 1;\t/* trailing block */\t/* and another */",
        "L1:\t// on a label",
        "\t/* before */",
        "\tret;",
    ]


def test_comment_inside_instruction_moves_after_it():
    m, items = parse_body("mov.u32 %r1, /* inside */ %r2;\nret;")
    assert items == [
        Instruction("mov", ("u32",), (Reg("%r1"), Reg("%r2"))),
        Comment("/* inside */", True),
        Instruction("ret"),
    ]
    assert body_lines(round_trip(m)) == ["\tmov.u32 \t%r1, %r2;\t/* inside */", "\tret;"]


def test_comments_at_module_level_and_in_nested_scopes():
    src = HEADER + (
        "// about the global\n"
        ".global .u32 g; // trailing at top level\n"
        ".entry k()\n"
        "{ // after the brace\n"
        "\t{\n"
        "\t\t// inside nested\n"
        "\t}\n"
        "\t/* empty nested: */ { /* only a comment */ }\n"
        "} // after the function\n"
        "// at the end\n"
    )
    m = parse(src)
    c1, g, c2, fn, c3, c4 = m.items
    assert (c1, g, c2) == (Comment("// about the global"), Decl((".global", ".u32"), (DeclItem("g"),)),
                           Comment("// trailing at top level", True))
    assert (c3, c4) == (Comment("// after the function", False), Comment("// at the end", False))
    assert fn.body.items == [
        Comment("// after the brace", False),
        Block([Comment("// inside nested")]),
        Comment("/* empty nested: */"),
        Block([Comment("/* only a comment */")]),
    ]
    assert round_trip(m) == HEADER + (
        "// about the global\n"
        ".global .u32 g;\t// trailing at top level\n"
        "\n.entry k()\n"
        "{\n"
        "\t// after the brace\n"
        "\t{\n"
        "\t\t// inside nested\n"
        "\t}\n"
        "\t/* empty nested: */\n"
        "\t{\n"
        "\t\t/* only a comment */\n"
        "\t}\n"
        "}\n"
        "// after the function\n"
        "// at the end\n"
    )


def test_comments_in_function_header_move_after_the_function():
    src = HEADER + (
        ".entry k( // params follow\n"
        "\t.param .u32 a, /* first */\n"
        "\t.param .u32 b\n"
        ")\n"
        "{\n\tret;\n}\n"
    )
    m = parse(src)
    fn, c1, c2 = m.items
    assert fn.params == (Decl((".param", ".u32"), (DeclItem("a"),)), Decl((".param", ".u32"), (DeclItem("b"),)))
    assert fn.body == Block([Instruction("ret")])
    assert (c1, c2) == (Comment("// params follow", False), Comment("/* first */", False))
    round_trip(m)


def test_comment_markers_inside_strings_are_not_comments():
    m = parse(HEADER + '.file 1 "a//b/*c*/.cu"\n.entry k() .pragma "x//y";\n{\n}\n')
    assert m.items[0] == Raw('.file 1 "a//b/*c*/.cu"')
    assert m.items[1].directives == (PerfDirective(".pragma", ('"x//y"',)),)
    round_trip(m)


def test_commented_out_code_is_not_parsed():
    m, items = parse_body("// ld.global.f32 %f1, [%rd1];\n/* st.global.f32 [%rd1], %f1; */\nret;")
    assert [type(i) for i in items] == [Comment, Comment, Instruction]
    assert len(list(m.items[0].instructions())) == 1


# --------------------------------------------------------------------------
# the grammar must be able to say no
# --------------------------------------------------------------------------


@pytest.mark.parametrize("stmt, line, col", [
    ("mov.u32 %r1 %r2;", 6, 13),         # missing comma
    ("mov.u32 %r1, %r2", 7, 1),          # missing semicolon: found the `}` on the next line
    ("ld.u32 %r1, [%rd1;", 6, 18),       # unclosed bracket
    ("ld.u32 %r1, [[%rd1]];", 6, 14),    # nested address
    ("mov.u32 %r1, {%r2;", 6, 18),       # unclosed vector
    (".reg .b32 %r<>;", 6, 14),          # empty count
    ("@%p1;", 6, 5),                     # guard without instruction
    ("mov.u32 %r1, 0f3F80000;", 6, 15),  # 7 hex digits after 0f: `0` then `f3F80000`
    ("L1 L2:", 6, 6),                    # `L1 L2` is an instruction; the colon is stray
    ("mov.u32 %r1, %r2,;", 6, 18),       # trailing comma
])
def test_malformed_statements_are_rejected(stmt, line, col):
    with pytest.raises(ParseError) as ei:
        parse_body(stmt)
    assert (ei.value.line, ei.value.column) == (line, col), str(ei.value)
    assert str(ei.value).startswith(f"<input>:{line}:{col}: error: ")


# --------------------------------------------------------------------------
# bugs found by these tests, now fixed (kept as regression tests)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("-0f3F800000", -1.0), ("-0d3FF0000000000000", -1.0)])
def test_negative_hex_float_immediate_value(text, value):
    ins, line = one_instruction(f"mov.f32 %f1, {text};")
    assert ins.operands[1] == Imm(text)
    assert line == f"\tmov.f32 \t%f1, {text};"
    assert ins.operands[1].value() == value


def test_block_comment_after_loc_spanning_lines():
    m, items = parse_body(".loc 1 2 3 /* a\n b */\nret;")
    assert items[-1] == Instruction("ret")
    round_trip(m)


def test_expected_tokens_are_described_in_words():
    with pytest.raises(ParseError) as ei:
        parse(HEADER + ".entry k()\n{\n\tret;\n")
    expected = re.search(r"expected (?:one of )?(.*), found", ei.value.message).group(1)
    for word in expected.split(", "):
        assert re.fullmatch(r"'.+'|an? .+|end of input|\.\.\.", word), (word, ei.value.message)


@pytest.mark.parametrize("text", ["08", "09U", "0189"])
def test_invalid_octal_immediate_is_rejected_or_has_a_value(text):
    try:
        ins, _ = one_instruction(f"add.s32 %r1, %r2, {text};")
    except ParseError:
        return  # rejecting it is fine
    imm = ins.operands[2]
    assert not imm.is_float
    assert isinstance(imm.value(), int)
