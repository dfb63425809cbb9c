"""prefetch_L1 / prefetch_L2: one prefetch per 128-byte line of global loads.

Line grouping, placement (after the base's definition, at the block or scope
start, never above an ordering point), guards, refusals, idempotence, the
gemm tiles' counts by hand, and the whole corpus through ptxas.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pytest

from ptxopt import emit, parse
from ptxopt.kernels.corpus import load_manifest
from ptxopt.passes.pipeline import make_pass
from ptxopt.toolchain import compile_ptx


def kernel(body: str, pre: str = "") -> str:
    return (".version 8.8\n.target sm_89\n.address_size 64\n" + pre +
            ".visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{\n"
            "\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<12>;\n\t.reg .b64 %rd<8>;\n"
            + body + "}\n")


HEAD = "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"


def apply(name: str, text: str):
    return make_pass(name).apply(parse(text))


def lines(m) -> list[str]:
    out = emit(m).split("\n")
    out = out[next(i for i, ln in enumerate(out) if ".entry k" in ln):]
    body = out[out.index("{") + 1:out.index("}")]
    return [" ".join(ln.split()) for ln in body if ln.strip() and not ln.strip().startswith(".reg")]


def prefetches(m) -> list[str]:
    return [ln for ln in lines(m) if "prefetch" in ln]


def test_one_prefetch_per_line_at_its_lowest_offset():
    loads = "".join(f"\tld.global.f32 %f{i + 1}, [%rd2{'+' + str(o) if o else ''}];\n"
                    for i, o in enumerate([4, 0, 124, 132, 128, 256, -4]))
    m, report = apply("prefetch_L1", kernel(HEAD + loads + "\tret;\n"))
    # lines: 0 <- {4, 0, 124}; 1 <- {132, 128}; 2 <- {256}; -1 <- {-4}
    assert lines(m)[:6] == [
        "ld.param.u64 %rd1, [k_param_0];", "cvta.to.global.u64 %rd2, %rd1;",
        "prefetch.global.L1 [%rd2];", "prefetch.global.L1 [%rd2+128];",
        "prefetch.global.L1 [%rd2+256];", "prefetch.global.L1 [%rd2+-4];"]
    assert [s.what for s in report.changed] == [
        "prefetch.global.L1 [%rd2]: 3 loads, offsets 0..124",
        "prefetch.global.L1 [%rd2+128]: 2 loads, offsets 128..132",
        "prefetch.global.L1 [%rd2+256]: 1 load, offsets 256..256",
        "prefetch.global.L1 [%rd2+-4]: 1 load, offsets -4..-4"]


def test_l2_level_and_vector_loads():
    text = kernel(HEAD + "\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2+16];\n\tret;\n")
    m, _ = apply("prefetch_L2", text)
    assert prefetches(m) == ["prefetch.global.L2 [%rd2+16];"]


def test_redefined_base_is_a_new_line_placed_after_the_redefinition():
    m, _ = apply("prefetch_L1", kernel(
        HEAD + "\tld.global.f32 %f1, [%rd2];\n\tadd.s64 %rd2, %rd2, 4;\n"
        "\tmov.f32 %f3, 0f3F800000;\n\tld.global.f32 %f2, [%rd2];\n\tret;\n"))
    got = lines(m)
    assert got[2] == "prefetch.global.L1 [%rd2];"
    assert got[4:7] == ["add.s64 %rd2, %rd2, 4;", "prefetch.global.L1 [%rd2];", "mov.f32 %f3, 0f3F800000;"]


def test_guarded_load_gets_a_guarded_prefetch_after_the_guard():
    m, _ = apply("prefetch_L1", kernel(
        HEAD + "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 4;\n"
        "\t@%p1 ld.global.f32 %f1, [%rd2];\n\t@!%p1 ld.global.f32 %f2, [%rd2+4];\n\tret;\n"))
    got = lines(m)
    assert got[3:6] == ["setp.lt.u32 %p1, %r1, 4;", "@%p1 prefetch.global.L1 [%rd2];",
                        "@!%p1 prefetch.global.L1 [%rd2+4];"]


def test_base_from_another_block_goes_to_the_block_start_after_labels():
    m, _ = apply("prefetch_L1", kernel(
        HEAD + "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_end;\n"
        "$L_load:\n\t// load block\n\tmov.f32 %f2, 0f3F800000;\n\tld.global.f32 %f1, [%rd2+8];\n"
        "$L_end:\n\tret;\n"))
    got = lines(m)
    i = got.index("$L_load:")
    assert got[i + 1] == "prefetch.global.L1 [%rd2+8];"
    assert got[:3] == ["ld.param.u64 %rd1, [k_param_0];", "cvta.to.global.u64 %rd2, %rd1;",
                       "mov.u32 %r1, %tid.x;"]


def test_symbol_base_goes_to_the_block_start():
    m, _ = apply("prefetch_L2", kernel(
        "\tmov.f32 %f2, 0f3F800000;\n\tld.global.f32 %f1, [g+8];\n\tret;\n",
        pre=".global .align 4 .f32 g[64];\n"))
    assert lines(m)[:2] == ["prefetch.global.L2 [g+8];", "mov.f32 %f2, 0f3F800000;"]


@pytest.mark.parametrize("point", ["bar.sync 0;", "membar.gl;", "atom.global.add.u32 %r1, [%rd3], 1;",
                                   "mov.u32 %r2, %clock;"])
def test_not_hoisted_above_an_ordering_point(point):
    m, _ = apply("prefetch_L1", kernel(HEAD + "\tcvta.to.global.u64 %rd3, %rd1;\n\t" + point +
                                        "\n\tld.global.f32 %f1, [%rd2];\n\tret;\n"))
    got = lines(m)
    assert got[got.index(" ".join(point.split())) + 1] == "prefetch.global.L1 [%rd2];"


def test_refusals_and_non_candidates():
    m, report = apply("prefetch_L1", kernel(
        HEAD + "\t.shared .align 4 .b8 s[16];\n\tld.shared.f32 %f1, [s];\n\tld.f32 %f2, [%rd1];\n"
        "\tld.volatile.global.f32 %f3, [%rd2];\n\tld.relaxed.gpu.global.f32 %f4, [%rd2+4];\n\tret;\n"))
    assert not report.changed and not prefetches(m)
    assert [s.what for s in report.refused] == [
        "ld.f32: not a .global load (generic address)",
        "ld.volatile.global.f32: an ordered (.volatile/.relaxed/.acquire) load is not prefetched",
        "ld.relaxed.gpu.global.f32: an ordered (.volatile/.relaxed/.acquire) load is not prefetched"]


def test_nested_scope_placement_and_call_sequence_refusal():
    text = kernel(
        HEAD + "\t{\n\t.reg .f32 %t;\n\tmov.f32 %f5, 0f3F800000;\n\tld.global.f32 %t, [%rd2+32];\n"
        "\tadd.f32 %f1, %t, %f5;\n\t}\n"
        "\t{\n\t.param .b32 r;\n\tld.global.f32 %f2, [%rd2+64];\n\tcall (r), f, ();\n\t}\n\tret;\n",
        pre=".func (.param .b32 r) f()\n{\n\tst.param.b32 [r], 0;\n\tret;\n}\n")
    m, report = apply("prefetch_L1", text)
    got = lines(m)
    # inside the first scope: after its declarations, not before the scope
    assert got[2:4] == ["{", "prefetch.global.L1 [%rd2+32];"]
    assert got.count("prefetch.global.L1 [%rd2+32];") == 1 and len(prefetches(m)) == 1
    assert [s.what for s in report.refused] == [
        "ld.global.f32: inside a { } call sequence: nothing is inserted among its parameter passing"]
    compile_ptx(emit(m), "sm_89")


@pytest.mark.parametrize("first, second, changes", [
    ("prefetch_L1", "prefetch_L1", False),
    ("prefetch_L2", "prefetch_L2", False),
    ("prefetch_L1", "prefetch_L2", False),  # an L1 prefetch fills L2 too
    ("prefetch_L2", "prefetch_L1", True),
])
def test_idempotent_and_existing_prefetches(first, second, changes):
    text = kernel(HEAD + "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 4;\n"
                  "\t@%p1 ld.global.f32 %f1, [%rd2];\n\tld.global.f32 %f2, [%rd2+200];\n\tret;\n")
    m1, r1 = apply(first, text)
    assert len(r1.changed) == 2
    m2, r2 = make_pass(second).apply(m1)
    assert bool(r2.changed) == changes
    if not changes:
        assert emit(m2) == emit(m1)


# -- the corpus --------------------------------------------------------------------

KERNELS = load_manifest()


@lru_cache(maxsize=None)
def _module(kid: str):
    return parse(next(k for k in KERNELS if k.id == kid).ptx_text())


@pytest.mark.parametrize("kid, lines_per_matrix", [
    # A and B are m*k and k*n f32 matrices behind one base register each (offsets
    # 0, 4, ...); C is only stored. 4x4x4: 16 floats = 64 bytes = line 0 only, so
    # one prefetch per matrix, 2 in all. 8x8x8: 64 floats = 256 bytes = lines 0, 1.
    # 16x16x16: 256 floats = 1024 bytes = 8 lines. 2x2x2: 16 bytes = 1 line.
    ("gemm_tile_2x2x2", 1), ("gemm_tile_4x4x4", 1), ("gemm_tile_8x8x8", 2), ("gemm_tile_16x16x16", 8),
])
def test_gemm_tile_counts(kid, lines_per_matrix):
    out, report = make_pass("prefetch_L1").apply(_module(kid))
    assert len(report.changed) == 2 * lines_per_matrix and not report.refused
    got = [str(i.operands[0]) for i in out.entries[0].instructions() if i.opcode == "prefetch"]
    assert got == [f"[{r}{'+' + str(128 * k) if k else ''}]"
                   for r in ("%rd4", "%rd5") for k in range(lines_per_matrix)]


def test_gemm_tile_4x4x4_placement():
    out, _ = make_pass("prefetch_L2").apply(_module("gemm_tile_4x4x4"))
    got = [" ".join(ln.split()) for ln in emit(out).split("\n")]
    i = got.index("cvta.to.global.u64 %rd4, %rd1;")
    assert got[i:i + 4] == ["cvta.to.global.u64 %rd4, %rd1;", "prefetch.global.L2 [%rd4];",
                            "cvta.to.global.u64 %rd5, %rd2;", "prefetch.global.L2 [%rd5];"]


@pytest.mark.parametrize("spec", KERNELS, ids=[k.id for k in KERNELS])
def test_corpus(spec):
    """Each pass adds one prefetch per reported site (the result re-parses, a
    second run adds nothing, ptxas accepts it) or refuses with reasons."""
    m = _module(spec.id)
    before = sum(1 for f in m.functions for i in f.instructions() if i.opcode == "prefetch")
    to_compile = []
    for name in ("prefetch_L1", "prefetch_L2"):
        out, report = make_pass(name).apply(m)
        text = emit(out)
        assert all(s.what for s in report.refused), name
        if not report.changed:
            assert report.refused, f"{name}: neither changed nor refused: no global ld at all?"
            assert text == emit(m), name
            continue
        if spec.ptx_text().count(";") < 2000:  # (the printer's round trip is tested elsewhere)
            assert parse(text) == out, name
        after = sum(1 for f in out.functions for i in f.instructions() if i.opcode == "prefetch")
        assert after - before == len(report.changed), name
        _, again = make_pass(name).apply(out)
        assert not again.changed, (name, [str(s) for s in again.changed])
        to_compile.append(text)
    with ThreadPoolExecutor(2) as pool:  # ptxas runs as a subprocess
        list(pool.map(lambda text: compile_ptx(text, "sm_89"), to_compile))
