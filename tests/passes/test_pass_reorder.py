"""reorder_cp / reorder_il / reorder_lf / reorder_sl: per-block list schedulers.

Hand-written blocks with the expected schedule of each priority written out,
the legality walls (ordering points, may-alias stores, labels, terminators,
scopes), statement attachment, idempotence, and the whole corpus (every
block's new order respects its DAG, ptxas accepts every changed kernel).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pytest

from ptxopt import emit, parse
from ptxopt.analysis import block_dags, build_cfg, topological_orders_respect
from ptxopt.kernels.corpus import load_manifest
from ptxopt.passes.pipeline import make_pass
from ptxopt.toolchain import compile_ptx

from corpus_tiers import corpus_params

PASSES = ["reorder_cp", "reorder_il", "reorder_lf", "reorder_sl"]


def kernel(body: str, params: str = ".param .u64 k_param_0, .param .u64 k_param_1", pre: str = "") -> str:
    return (".version 8.8\n.target sm_89\n.address_size 64\n" + pre +
            f".visible .entry k({params})\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n"
            "\t.reg .f32 %f<12>;\n\t.reg .b64 %rd<8>;\n" + body + "}\n")


def apply(name: str, text: str):
    return make_pass(name).apply(parse(text))


def lines(m) -> list[str]:
    """The entry body as printed, one stripped line each, declarations dropped."""
    out = emit(m).split("\n")
    out = out[next(i for i, ln in enumerate(out) if ".entry k" in ln):]
    body = out[out.index("{") + 1:out.index("}")]
    return [" ".join(ln.split()) for ln in body if ln.strip() and not ln.strip().startswith(".reg")]


# Eleven instructions, one block. Dependencies: 0->1->{5,7,9}; 2->3->4->6;
# 5->6->7; 8->9; the load [%rd2] and the stores [%rd2+4], [%rd2+8] are
# disjoint (same base, different bytes); everything -> ret.
S1 = [
    "ld.param.u64 %rd1, [k_param_0];",   # 0
    "cvta.to.global.u64 %rd2, %rd1;",    # 1
    "mov.f32 %f1, 0f3F800000;",          # 2
    "add.f32 %f2, %f1, %f1;",            # 3
    "mul.f32 %f3, %f2, %f2;",            # 4
    "ld.global.f32 %f4, [%rd2];",        # 5
    "add.f32 %f5, %f4, %f3;",            # 6
    "st.global.f32 [%rd2+4], %f5;",      # 7
    "mov.f32 %f6, 0f40000000;",          # 8
    "st.global.f32 [%rd2+8], %f6;",      # 9
    "ret;",                              # 10
]

# Loads, constants, adds and stores that are all independent across kinds.
S2 = [
    "ld.param.u64 %rd1, [k_param_0];",   # 0 mem
    "cvta.to.global.u64 %rd2, %rd1;",    # 1
    "ld.global.f32 %f1, [%rd2];",        # 2 mem
    "ld.global.f32 %f2, [%rd2+4];",      # 3 mem
    "mov.f32 %f3, 0f3F800000;",          # 4
    "mov.f32 %f4, 0f40000000;",          # 5
    "add.f32 %f5, %f1, %f3;",            # 6
    "add.f32 %f6, %f2, %f4;",            # 7
    "st.global.f32 [%rd2+8], %f5;",      # 8 mem
    "st.global.f32 [%rd2+12], %f6;",     # 9 mem
    "ret;",                              # 10
]


def body(ins: list[str]) -> str:
    return "".join(f"\t{i}\n" for i in ins)


def norm(ins: list[str]) -> list[str]:
    return [" ".join(i.split()) for i in ins]


@pytest.mark.parametrize("name, block, expected", [
    # heights (latency-weighted): ld.param 428, cvta 420, ld.global 416, then the
    # add chain 28/24/20, then 16 (add %f5 and mov %f6 tie: original order), stores 12
    ("reorder_cp", S1, [0, 1, 5, 2, 3, 4, 6, 8, 7, 9, 10]),
    # the global load as early as its address allows: right after the cvta
    ("reorder_lf", S1, [0, 1, 5, 2, 3, 4, 6, 7, 8, 9, 10]),
    # bottom-up: ret, then the stores take the last slots; mov %f6 goes above st [%rd2+4]
    ("reorder_sl", S1, [0, 1, 2, 3, 4, 5, 6, 8, 7, 9, 10]),
    # memory, arithmetic, memory, ... while both kinds are ready
    ("reorder_il", S2, [0, 1, 2, 4, 3, 5, 6, 8, 7, 9, 10]),
    # nothing to alternate with at the start of S1 beyond what is already there
    ("reorder_il", S1, [0, 1, 5, 2, 3, 4, 6, 7, 8, 9, 10]),
])
def test_expected_schedule(name, block, expected):
    m, report = apply(name, kernel(body(block)))
    assert lines(m) == norm([block[i] for i in expected])
    moved = sum(1 for k, v in enumerate(expected) if k != v)
    assert [s.what for s in report.changed] == [f"block #0: {moved} of {len(block)} instructions moved"]
    assert not report.refused


@pytest.mark.parametrize("name", PASSES)
def test_schedule_equal_to_the_original_is_no_change(name):
    block = ["mov.f32 %f1, 0f3F800000;", "add.f32 %f2, %f1, %f1;", "ret;"]
    m, report = apply(name, kernel(body(block)))
    assert not report.changed and not report.refused
    assert lines(m) == norm(block)


# -- legality walls -------------------------------------------------------------

ORDERING_POINTS = ["bar.sync 0;", "atom.global.add.u32 %r1, [%rd3], 1;", "call f;",
                   "membar.gl;", "mov.u32 %r2, %clock;", "ld.volatile.global.f32 %f9, [%rd3];"]


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("point", ORDERING_POINTS)
def test_nothing_crosses_an_ordering_point(name, point):
    # every pass would like to move something across the point: the load and
    # the store up or down, the arithmetic around them
    block = ["ld.param.u64 %rd1, [k_param_0];", "cvta.to.global.u64 %rd3, %rd1;",
             "mov.f32 %f1, 0f3F800000;", "add.f32 %f2, %f1, %f1;", "st.global.f32 [%rd3+64], %f2;",
             point,
             "mov.f32 %f3, 0f40000000;", "ld.global.f32 %f4, [%rd3+4];", "add.f32 %f5, %f4, %f3;",
             "st.global.f32 [%rd3+8], %f5;", "ret;"]
    m, _ = apply(name, kernel(body(block), pre=".func f()\n{\n\tret;\n}\n"))
    got = lines(m)
    at = got.index(" ".join(point.split()))
    assert at == 5
    assert sorted(got[:5]) == sorted(norm(block[:5]))
    assert got[-1] == "ret;"


@pytest.mark.parametrize("name", PASSES)
def test_load_after_may_alias_store_stays_after(name):
    # %rd3 and %rd4 come from different parameters that may point to the same
    # buffer: the load through %rd4 must not pass the store through %rd3
    block = ["ld.param.u64 %rd1, [k_param_0];", "ld.param.u64 %rd2, [k_param_1];",
             "cvta.to.global.u64 %rd3, %rd1;", "cvta.to.global.u64 %rd4, %rd2;",
             "mov.f32 %f1, 0f3F800000;", "st.global.f32 [%rd3], %f1;",
             "mov.f32 %f7, 0f40000000;", "ld.global.f32 %f2, [%rd4];",
             "add.f32 %f3, %f2, %f7;", "st.global.f32 [%rd4+4], %f3;", "ret;"]
    m, _ = apply(name, kernel(body(block)))
    got = lines(m)
    assert got.index("st.global.f32 [%rd3], %f1;") < got.index("ld.global.f32 %f2, [%rd4];")


def test_noalias_parameters_let_the_load_pass_the_store():
    """Positive control for the test above: with .noalias the load may move."""
    block = ["ld.param.u64 %rd1, [k_param_0];", "ld.param.u64 %rd2, [k_param_1];",
             "cvta.to.global.u64 %rd3, %rd1;", "cvta.to.global.u64 %rd4, %rd2;",
             "mov.f32 %f1, 0f3F800000;", "st.global.f32 [%rd3], %f1;",
             "ld.global.f32 %f2, [%rd4];", "st.global.f32 [%rd4+4], %f2;", "ret;"]
    params = ".param .u64 .ptr .global .noalias k_param_0, .param .u64 .ptr .global .noalias k_param_1"
    m, _ = apply("reorder_lf", kernel(body(block), params))
    got = lines(m)
    assert got.index("ld.global.f32 %f2, [%rd4];") < got.index("st.global.f32 [%rd3], %f1;")


MULTI = """\
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra $L_done;
$L_body:
	mov.f32 %f1, 0f3F800000;
	add.f32 %f2, %f1, %f1;
	ld.global.f32 %f3, [%rd2];
	add.f32 %f4, %f3, %f2;
	st.global.f32 [%rd2+4], %f4;
$L_done:
	mov.f32 %f5, 0f40000000;
	ld.global.f32 %f6, [%rd2+8];
	add.f32 %f7, %f6, %f5;
	st.global.f32 [%rd2+12], %f7;
	ret;
"""


@pytest.mark.parametrize("name", PASSES)
def test_labels_and_terminators_stay(name):
    m, _ = apply(name, kernel(MULTI))
    got = lines(m)
    want = lines(parse(kernel(MULTI)))
    for label in ("$L_body:", "$L_done:"):
        assert got.index(label) == want.index(label)
    assert got[4] == "@%p1 bra $L_done;" and got[-1] == "ret;"
    # each block keeps its own instructions
    cut = [0, 5, got.index("$L_done:"), len(got)]
    for a, b in zip(cut, cut[1:]):
        assert sorted(got[a:b]) == sorted(want[a:b])


def test_loads_first_moves_the_load_within_each_block():
    m, report = apply("reorder_lf", kernel(MULTI))
    got = lines(m)
    assert got[6:11] == ["ld.global.f32 %f3, [%rd2];", "mov.f32 %f1, 0f3F800000;",
                         "add.f32 %f2, %f1, %f1;", "add.f32 %f4, %f3, %f2;",
                         "st.global.f32 [%rd2+4], %f4;"]
    assert [s.what for s in report.changed] == ["block $L_body: 3 of 5 instructions moved",
                                                "block $L_done: 2 of 5 instructions moved"]


# -- statements between instructions -------------------------------------------------


def test_loc_and_comments_move_with_their_instruction():
    text = kernel(
        "\t.loc 1 10 0\n"
        "\tld.param.u64 %rd1, [k_param_0];\n"
        "\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\t// the constant\n"
        "\t.loc 1 11 0\n"
        "\tmov.f32 %f1, 0f3F800000;\n"
        "\t.loc 1 12 0\n"
        "\tld.global.f32 %f2, [%rd2]; // the load\n"
        "\tadd.f32 %f3, %f2, %f1;\n"
        "\tst.global.f32 [%rd2+4], %f3;\n"
        "\tret;\n", pre=".file 1 \"k.cu\"\n")
    m, report = apply("reorder_lf", text)
    assert report.changed
    got = lines(m)
    i = got.index(".loc 1 12 0")
    assert got[i + 1].startswith("ld.global.f32 %f2, [%rd2];") and got[i + 1].endswith("// the load")
    j = got.index("// the constant")
    assert got[j + 1:j + 3] == [".loc 1 11 0", "mov.f32 %f1, 0f3F800000;"]
    assert i < j  # the load, with its .loc, went above the constant and its lines
    assert got[0] == ".loc 1 10 0"


def test_declarations_stay_in_place_and_split_the_block():
    text = kernel(
        "\tmov.f32 %f1, 0f3F800000;\n"
        "\tadd.f32 %f2, %f1, %f1;\n"
        "\t.reg .f32 %g<2>;\n"
        "\tld.param.u64 %rd1, [k_param_0];\n"
        "\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\tmov.f32 %g1, 0f40000000;\n"
        "\tld.global.f32 %f3, [%rd2];\n"
        "\tst.global.f32 [%rd2+4], %f3;\n"
        "\tret;\n")
    m, report = apply("reorder_lf", text)
    got = lines(m)
    assert got[:2] == ["mov.f32 %f1, 0f3F800000;", "add.f32 %f2, %f1, %f1;"]
    assert "mov.f32 %g1, 0f40000000;" in got[3:]
    assert [s.what for s in report.refused] == [
        "block #0: non-instruction statements split it: they stay in place; "
        "scheduled only within each of its 2 runs"]
    assert got.index("ld.global.f32 %f3, [%rd2];") < got.index("mov.f32 %g1, 0f40000000;")


def test_nested_scope_is_not_crossed():
    text = kernel(
        "\tld.param.u64 %rd1, [k_param_0];\n"
        "\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\tmov.f32 %f1, 0f3F800000;\n"
        "\t{\n\t.reg .f32 %t;\n\tmov.f32 %t, 0f40000000;\n\tadd.f32 %f2, %t, %f1;\n\t}\n"
        "\tmov.f32 %f5, 0f40400000;\n"
        "\tld.global.f32 %f3, [%rd2];\n"
        "\tadd.f32 %f4, %f3, %f2;\n"
        "\tst.global.f32 [%rd2+4], %f4;\n"
        "\tret;\n")
    m, report = apply("reorder_lf", text)
    got = lines(m)
    assert got[3:7] == ["{", "mov.f32 %t, 0f40000000;", "add.f32 %f2, %t, %f1;", "}"]  # .reg dropped
    assert got[7:9] == ["ld.global.f32 %f3, [%rd2];", "mov.f32 %f5, 0f40400000;"]
    assert [s.what for s in report.refused] == [
        "block #0: a nested { } scope splits it: nothing moves into or out of the scope; "
        "scheduled only within each of its 3 runs"]


# -- idempotence -------------------------------------------------------------------


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("block", [S1, S2], ids=["S1", "S2"])
def test_idempotent(name, block):
    m1, r1 = apply(name, kernel(body(block)))
    m2, r2 = make_pass(name).apply(m1)
    assert not r2.changed
    assert emit(m2) == emit(m1)


# -- the corpus --------------------------------------------------------------------

KERNELS = load_manifest()


@lru_cache(maxsize=None)
def _module(kid: str):
    return parse(next(k for k in KERNELS if k.id == kid).ptx_text())


@lru_cache(maxsize=None)
def _dags(kid: str):
    """CFG and block DAGs of each function of the original kernel."""
    return [(build_cfg(f), block_dags(build_cfg(f))) if f.body is not None else None
            for f in _module(kid).functions]


def _respects(kid: str, after) -> bool:
    """Every block of ``after`` is a reordering of the same block of the
    original kernel that respects its DAG (instructions are shared objects,
    so identity maps them)."""
    for fa, analysed in zip(after.functions, _dags(kid)):
        if analysed is None:
            continue
        cb, dags = analysed
        ca = build_cfg(fa)
        assert len(ca.blocks) == len(cb.blocks)
        for ba, bb, dag in zip(ca.blocks, cb.blocks, dags):
            pos = {id(i): k for k, i in enumerate(bb.instructions)}
            order = [pos.get(id(i), -1) for i in ba.instructions]
            if not topological_orders_respect(dag, order):
                return False
    return True


@pytest.mark.parametrize("spec", corpus_params(KERNELS))
def test_corpus(spec):
    """Each pass changes the kernel (the result re-parses, every block's new
    order respects its DAG, a second run changes nothing, ptxas accepts it)
    or leaves it untouched: already in that order, or refused with reasons."""
    m = _module(spec.id)
    to_compile = []
    for name in PASSES:  # how long each takes: benchmarks/reports/pass_matrix.py (measured, not asserted here)
        out, report = make_pass(name).apply(m)
        text = emit(out)
        if spec.ptx_text().count(";") < 2000:  # (the printer's round trip is tested elsewhere)
            assert parse(text) == out, name
        assert all(s.what for s in report.refused), name
        if not report.changed:
            assert text == emit(m), name
            continue
        assert _respects(spec.id, out), name
        _, again = make_pass(name).apply(out)
        assert not again.changed, (name, [str(s) for s in again.changed])
        to_compile.append(text)
    with ThreadPoolExecutor(2) as pool:  # ptxas runs as a subprocess
        list(pool.map(lambda text: compile_ptx(text, "sm_89"), to_compile))
