"""The translation validator (:mod:`ptxopt.equivalence.prove`): hand-written pairs.

Each ``TEMPTING`` pair differs in a way that a careless normalisation would
hide (float reassociation, widths, shift amounts, carry, aliasing, guards,
scoped names, uninitialised registers...): the prover must not say
``proved``. Each is also checked with the interpreter where it can tell them
apart, so the pair really differs. ``LEGAL`` pairs are real equivalences the
prover is expected to establish (so the suite notices a prover that proves
nothing). ``tests/equivalence/test_prove_corpus.py`` has the corpus, mutant and random
kernel sweeps.
"""

from __future__ import annotations

import json

import pytest

from ptxopt.equivalence.prove import prove

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


def kernel(body: str, regs: str = "", params: str = ".param .u64 out, .param .u64 in", decls: str = "",
           name: str = "k") -> str:
    return (f"{HEAD}{decls}\n.visible .entry {name}({params})\n{{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b16 %rs<8>;\n\t.reg .b32 %r<32>;\n\t.reg .f32 %f<16>;\n"
            f"\t.reg .b64 %rd<16>;\n{regs}"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u64 %rd2, [in];\n"
            "\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n"
            f"{body}\n\tret;\n}}\n")


def pair(a: str, b: str, **kw) -> tuple[str, str]:
    return kernel(a, **kw), kernel(b, **kw)


LOAD3F = ("\tld.global.f32 %f1, [%rd4];\n\tld.global.f32 %f2, [%rd4+4];\n\tld.global.f32 %f3, [%rd4+8];\n")
LOAD3 = ("\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4+4];\n\tld.global.u32 %r3, [%rd4+8];\n")

TEMPTING = {
    # (a+b)+c vs a+(b+c) in f32: not the same rounding
    "f32_reassociate": pair(
        LOAD3F + "\tadd.rn.f32 %f4, %f1, %f2;\n\tadd.rn.f32 %f5, %f4, %f3;\n\tst.global.f32 [%rd3], %f5;",
        LOAD3F + "\tadd.rn.f32 %f4, %f2, %f3;\n\tadd.rn.f32 %f5, %f1, %f4;\n\tst.global.f32 [%rd3], %f5;"),
    # a+b vs b+a in f32 is commutative in IEEE, but the prover treats no operator as commutative;
    # a*b+c vs fma(a,b,c): one rounding vs two
    "f32_mul_add_vs_fma": pair(
        LOAD3F + "\tmul.rn.f32 %f4, %f1, %f2;\n\tadd.rn.f32 %f5, %f4, %f3;\n\tst.global.f32 [%rd3], %f5;",
        LOAD3F + "\tfma.rn.f32 %f5, %f1, %f2, %f3;\n\tst.global.f32 [%rd3], %f5;"),
    "ftz_dropped": pair(
        LOAD3F + "\tadd.rn.ftz.f32 %f5, %f1, %f2;\n\tst.global.f32 [%rd3], %f5;",
        LOAD3F + "\tadd.rn.f32 %f5, %f1, %f2;\n\tst.global.f32 [%rd3], %f5;"),
    "rounding_changed": pair(
        LOAD3F + "\tadd.rn.f32 %f5, %f1, %f2;\n\tst.global.f32 [%rd3], %f5;",
        LOAD3F + "\tadd.rz.f32 %f5, %f1, %f2;\n\tst.global.f32 [%rd3], %f5;"),
    # 32-bit add (wraps at 2^32) vs 64-bit add of the zero-extended values
    "add_u32_vs_u64": pair(
        LOAD3 + "\tadd.u32 %r4, %r1, %r2;\n\tcvt.u64.u32 %rd5, %r4;\n\tst.global.u64 [%rd3], %rd5;",
        LOAD3 + "\tcvt.u64.u32 %rd6, %r1;\n\tcvt.u64.u32 %rd7, %r2;\n\tadd.u64 %rd5, %rd6, %rd7;\n"
                "\tst.global.u64 [%rd3], %rd5;"),
    "signed_vs_unsigned_shr": pair(
        LOAD3 + "\tshr.s32 %r4, %r1, 3;\n\tst.global.u32 [%rd3], %r4;",
        LOAD3 + "\tshr.u32 %r4, %r1, 3;\n\tst.global.u32 [%rd3], %r4;"),
    "signed_vs_unsigned_compare": pair(
        LOAD3 + "\tsetp.lt.s32 %p1, %r1, %r2;\n\tselp.u32 %r4, 1, 0, %p1;\n\tst.global.u32 [%rd3], %r4;",
        LOAD3 + "\tsetp.lo.u32 %p1, %r1, %r2;\n\tselp.u32 %r4, 1, 0, %p1;\n\tst.global.u32 [%rd3], %r4;"),
    # shl by 32 is 0 in PTX (amounts are clamped), not x << (32 mod 32) = x
    "shift_by_32": pair(
        LOAD3 + "\tshl.b32 %r4, %r1, 32;\n\tst.global.u32 [%rd3], %r4;",
        LOAD3 + "\tshl.b32 %r4, %r1, 0;\n\tst.global.u32 [%rd3], %r4;"),
    "shift_const_by_32_folded": pair(
        "\tmov.u32 %r1, 1;\n\tshl.b32 %r4, %r1, 32;\n\tst.global.u32 [%rd3], %r4;",
        "\tst.global.u32 [%rd3], 1;"),
    "truncation_width": pair(
        LOAD3 + "\tcvt.u16.u32 %rs1, %r1;\n\tcvt.u32.u16 %r4, %rs1;\n\tst.global.u32 [%rd3], %r4;",
        LOAD3 + "\tst.global.u32 [%rd3], %r1;"),
    "store_width": pair(
        LOAD3 + "\tst.global.u16 [%rd3], %r1;",
        LOAD3 + "\tst.global.u32 [%rd3], %r1;"),
    # out and in may be the same buffer: the two stores may hit the same bytes
    "swap_stores_may_alias": pair(
        LOAD3 + "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd4], %r2;",
        LOAD3 + "\tst.global.u32 [%rd4], %r2;\n\tst.global.u32 [%rd3], %r1;"),
    "load_above_aliasing_store": pair(
        "\tld.global.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3], %r1;\n\tld.global.u32 %r2, [%rd4];\n"
        "\tst.global.u32 [%rd3+4], %r2;",
        "\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4];\n\tst.global.u32 [%rd3], %r1;\n"
        "\tst.global.u32 [%rd3+4], %r2;"),
    # a[] and b[] are both unsized .extern .shared: the same bytes
    "load_across_extern_shared_alias": pair(
        "\tld.global.u32 %r1, [%rd4];\n\tst.shared.u32 [a], %r1;\n\tld.shared.u32 %r2, [b];\n"
        "\tst.global.u32 [%rd3], %r2;",
        "\tld.global.u32 %r1, [%rd4];\n\tld.shared.u32 %r2, [b];\n\tst.shared.u32 [a], %r1;\n"
        "\tst.global.u32 [%rd3], %r2;",
        decls=".extern .shared .align 16 .b8 a[];\n.extern .shared .align 16 .b8 b[];\n"),
    "load_across_barrier": pair(
        "\tld.global.u32 %r1, [%rd4];\n\tst.shared.u32 [s], %r1;\n\tbar.sync 0;\n\tld.shared.u32 %r2, [s+4];\n"
        "\tst.global.u32 [%rd3], %r2;",
        "\tld.global.u32 %r1, [%rd4];\n\tst.shared.u32 [s], %r1;\n\tld.shared.u32 %r2, [s+4];\n\tbar.sync 0;\n"
        "\tst.global.u32 [%rd3], %r2;",
        decls=".shared .align 16 .b8 s[64];\n"),
    # another add.cc between add.cc and its addc: addc reads the wrong carry
    "addc_moved_off_its_add_cc": pair(
        LOAD3 + "\tadd.cc.u32 %r4, %r1, %r2;\n\taddc.u32 %r5, %r3, 0;\n\tadd.cc.u32 %r6, %r2, %r3;\n"
                "\taddc.u32 %r7, %r1, 0;\n\tst.global.u32 [%rd3], %r5;\n\tst.global.u32 [%rd3+4], %r7;",
        LOAD3 + "\tadd.cc.u32 %r4, %r1, %r2;\n\tadd.cc.u32 %r6, %r2, %r3;\n\taddc.u32 %r5, %r3, 0;\n"
                "\taddc.u32 %r7, %r1, 0;\n\tst.global.u32 [%rd3], %r5;\n\tst.global.u32 [%rd3+4], %r7;"),
    "add_cc_dropped": pair(
        LOAD3 + "\tadd.cc.u32 %r4, %r1, %r2;\n\taddc.u32 %r5, %r3, 0;\n\tst.global.u32 [%rd3], %r5;",
        LOAD3 + "\tadd.u32 %r4, %r1, %r2;\n\taddc.u32 %r5, %r3, 0;\n\tst.global.u32 [%rd3], %r5;"),
    "guard_negated": pair(
        LOAD3 + "\tsetp.lt.u32 %p1, %r1, %r2;\n\t@%p1 st.global.u32 [%rd3], %r3;",
        LOAD3 + "\tsetp.lt.u32 %p1, %r1, %r2;\n\t@!%p1 st.global.u32 [%rd3], %r3;"),
    "guard_dropped_on_register_write": pair(
        LOAD3 + "\tsetp.lt.u32 %p1, %r1, %r2;\n\tmov.u32 %r4, %r3;\n\t@%p1 add.u32 %r4, %r1, 1;\n"
                "\tst.global.u32 [%rd3], %r4;",
        LOAD3 + "\tsetp.lt.u32 %p1, %r1, %r2;\n\tmov.u32 %r4, %r3;\n\tadd.u32 %r4, %r1, 1;\n"
                "\tst.global.u32 [%rd3], %r4;"),
    "vector_lanes_swapped": pair(
        LOAD3 + "\tst.global.v2.u32 [%rd3], {%r1, %r2};",
        LOAD3 + "\tst.global.v2.u32 [%rd3], {%r2, %r1};"),
    "vector_load_lanes_swapped": pair(
        "\tld.global.v2.u32 {%r1, %r2}, [%rd4];\n\tsub.u32 %r3, %r1, %r2;\n\tst.global.u32 [%rd3], %r3;",
        "\tld.global.v2.u32 {%r2, %r1}, [%rd4];\n\tsub.u32 %r3, %r1, %r2;\n\tst.global.u32 [%rd3], %r3;"),
    "nc_load_of_written_buffer": pair(
        "\tst.global.u32 [%rd4], 7;\n\tld.global.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3], %r1;",
        "\tst.global.u32 [%rd4], 7;\n\tld.global.nc.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3], %r1;"),
    "volatile_loads_merged": pair(
        "\tld.volatile.global.u32 %r1, [%rd4];\n\tld.volatile.global.u32 %r2, [%rd4];\n"
        "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;",
        "\tld.volatile.global.u32 %r1, [%rd4];\n\tmov.u32 %r2, %r1;\n"
        "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;"),
    "atomic_reordered_with_load": pair(
        "\tatom.global.add.u32 %r1, [%rd3], 1;\n\tld.global.u32 %r2, [%rd4];\n\tst.global.u32 [%rd3+4], %r2;",
        "\tld.global.u32 %r2, [%rd4];\n\tatom.global.add.u32 %r1, [%rd3], 1;\n\tst.global.u32 [%rd3+4], %r2;"),
    "fence_moved": pair(
        "\tst.global.u32 [%rd3], 1;\n\tmembar.gl;\n\tst.global.u32 [%rd3+4], 2;",
        "\tst.global.u32 [%rd3], 1;\n\tst.global.u32 [%rd3+4], 2;\n\tmembar.gl;"),
    "clock_read_moved": pair(
        "\tmov.u32 %r1, %clock;\n\tld.global.u32 %r2, [%rd4];\n\tst.global.u32 [%rd3], %r2;\n"
        "\tst.global.u32 [%rd3+4], %r1;",
        "\tld.global.u32 %r2, [%rd4];\n\tmov.u32 %r1, %clock;\n\tst.global.u32 [%rd3], %r2;\n"
        "\tst.global.u32 [%rd3+4], %r1;"),
    # %warpid may change between two reads (preemption): one read is not two
    "warpid_read_twice": pair(
        "\tmov.u32 %r1, %warpid;\n\tmov.u32 %r2, %r1;\n\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;",
        "\tmov.u32 %r1, %warpid;\n\tmov.u32 %r2, %warpid;\n\tst.global.u32 [%rd3], %r1;\n"
        "\tst.global.u32 [%rd3+4], %r2;"),
    # the carry flag is not preserved across a call
    "addc_across_call": (
        HEAD + ".func f()\n{\n\tret;\n}\n" + kernel(
            LOAD3 + "\tadd.cc.u32 %r4, %r1, %r2;\n\taddc.u32 %r5, %r3, 0;\n\tcall f, ();\n"
                    "\tst.global.u32 [%rd3], %r5;").replace(HEAD, ""),
        HEAD + ".func f()\n{\n\tret;\n}\n" + kernel(
            LOAD3 + "\tadd.cc.u32 %r4, %r1, %r2;\n\tcall f, ();\n\taddc.u32 %r5, %r3, 0;\n"
                    "\tst.global.u32 [%rd3], %r5;").replace(HEAD, "")),
    # the inner s is another variable than the module-level s
    "scoped_variable_shadows_module_one": (
        kernel("\tst.shared.u32 [s], 1;\n\t{\n\t.shared .align 4 .b8 s[8];\n\tst.shared.u32 [s], 2;\n\t}\n"
               "\tld.shared.u32 %r1, [s];\n\tst.global.u32 [%rd3], %r1;", decls=".shared .align 4 .b8 s[8];\n"),
        kernel("\tst.shared.u32 [s], 1;\n\t{\n\t.shared .align 4 .b8 s[8];\n\t}\n\tst.shared.u32 [s], 2;\n"
               "\tld.shared.u32 %r1, [s];\n\tst.global.u32 [%rd3], %r1;", decls=".shared .align 4 .b8 s[8];\n")),
    # %r9 is never written: its value is undefined, and ptxas may give the two
    # kernels different garbage (another physical register), so an otherwise
    # legal reorder is not a proof
    "uninitialised_register": pair(
        "\tld.global.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3+4], %r1;\n\tst.global.u32 [%rd3], %r9;",
        "\tld.global.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3], %r9;\n\tst.global.u32 [%rd3+4], %r1;"),
    # [p + 2^63 - 2] (8 bytes) and [p - 2^63] (4 bytes) overlap modulo 2^64
    "wraparound_offsets": pair(
        "\tst.global.u64 [%rd3+9223372036854775806], %rd1;\n\tst.global.u32 [%rd3+-9223372036854775808], 5;",
        "\tst.global.u32 [%rd3+-9223372036854775808], 5;\n\tst.global.u64 [%rd3+9223372036854775806], %rd1;"),
    # a 32-bit shared address: [%r1] and [%r1+2^32] are the same bytes modulo 2^32
    "wraparound_32bit_base": pair(
        "\tmov.u32 %r1, s;\n\tst.shared.u32 [%r1], 1;\n\tst.shared.u32 [%r1+4294967296], 2;",
        "\tmov.u32 %r1, s;\n\tst.shared.u32 [%r1+4294967296], 2;\n\tst.shared.u32 [%r1], 1;",
        decls=".shared .align 4 .b8 s[64];\n"),
    # ld.lu on local memory may discard the line: a later read is undefined
    "last_use_added": pair(
        "\tst.local.u32 [%rd5], 3;\n\tld.local.u32 %r1, [%rd5];\n\tld.local.u32 %r2, [%rd5];\n"
        "\tadd.u32 %r3, %r1, %r2;\n\tst.global.u32 [%rd3], %r3;",
        "\tst.local.u32 [%rd5], 3;\n\tld.local.lu.u32 %r1, [%rd5];\n\tld.local.u32 %r2, [%rd5];\n"
        "\tadd.u32 %r3, %r1, %r2;\n\tst.global.u32 [%rd3], %r3;",
        regs="\t.local .align 4 .b8 buf[8];\n"),
    "branch_condition_changed": pair(
        LOAD3 + "\tsetp.lt.u32 %p1, %r1, %r2;\n\t@%p1 bra $L1;\n\tst.global.u32 [%rd3], %r3;\n$L1:",
        LOAD3 + "\tsetp.le.u32 %p1, %r1, %r2;\n\t@%p1 bra $L1;\n\tst.global.u32 [%rd3], %r3;\n$L1:"),
    "store_dropped": pair(
        LOAD3 + "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;",
        LOAD3 + "\tst.global.u32 [%rd3], %r1;"),
    "misaligned_vector": pair(
        "\tld.global.u32 %r1, [%rd4+4];\n\tld.global.u32 %r2, [%rd4+8];\n\tst.global.u32 [%rd3], %r1;\n"
        "\tst.global.u32 [%rd3+4], %r2;",
        "\tld.global.v2.u32 {%r1, %r2}, [%rd4+4];\n\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;"),
    "new_load_may_fault": pair(
        LOAD3 + "\tst.global.u32 [%rd3], %r1;",
        LOAD3 + "\tld.global.u32 %r5, [%rd4+64];\n\tst.global.u32 [%rd3], %r1;"),
    "loop_carried_value": pair(
        "\tmov.u32 %r1, 0;\n\tmov.u32 %r2, 0;\n$L1:\n\tadd.u32 %r1, %r1, 2;\n\tadd.u32 %r2, %r2, 1;\n"
        "\tsetp.lt.u32 %p1, %r2, 4;\n\t@%p1 bra $L1;\n\tst.global.u32 [%rd3], %r1;",
        "\tmov.u32 %r1, 0;\n\tmov.u32 %r2, 0;\n$L1:\n\tadd.u32 %r1, %r1, 3;\n\tadd.u32 %r2, %r2, 1;\n"
        "\tsetp.lt.u32 %p1, %r2, 4;\n\t@%p1 bra $L1;\n\tst.global.u32 [%rd3], %r1;"),
}

# Fix the local buffer's address register for the .lu pair (both sides alike).
TEMPTING["last_use_added"] = tuple(t.replace("\tld.param.u64 %rd1, [out];", "\tmov.u64 %rd5, buf;\n"
                                                "\tld.param.u64 %rd1, [out];") for t in TEMPTING["last_use_added"])

LEGAL = {
    "independent_stores_swapped": pair(
        LOAD3 + "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;",
        LOAD3 + "\tst.global.u32 [%rd3+4], %r2;\n\tst.global.u32 [%rd3], %r1;"),
    "loads_reordered": pair(
        LOAD3 + "\tadd.u32 %r4, %r1, %r3;\n\tst.global.u32 [%rd3], %r4;",
        "\tld.global.u32 %r3, [%rd4+8];\n\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4+4];\n"
        "\tadd.u32 %r4, %r1, %r3;\n\tst.global.u32 [%rd3], %r4;"),
    "vector_store_split": pair(
        LOAD3 + "\tst.global.v2.u32 [%rd3], {%r1, %r2};",
        LOAD3 + "\tst.global.u32 [%rd3], %r1;\n\tst.global.u32 [%rd3+4], %r2;"),
    "cache_hint_added": pair(
        LOAD3 + "\tst.global.u32 [%rd3], %r1;",
        LOAD3.replace("ld.global.u32 %r1", "ld.global.cg.u32 %r1") + "\tst.global.cs.u32 [%rd3], %r1;"),
    # Triton writes a scalar load's destination braced: ld.global.b32 { %r1 }, [a]
    "braced_scalar_load_reordered": pair(
        "\tld.global.b32 { %r1 }, [%rd4];\n\tld.global.b32 { %r2 }, [%rd4+4];\n\tst.global.b32 [%rd3], %r2;\n"
        "\tst.global.b32 [%rd3+4], %r1;",
        "\tld.global.b32 %r2, [%rd4+4];\n\tld.global.b32 %r1, [%rd4];\n\tst.global.b32 [%rd3], %r2;\n"
        "\tst.global.b32 [%rd3+4], %r1;"),
    "shift_const_folds": pair(
        "\tmov.u32 %r1, 1;\n\tshl.b32 %r4, 1, 33;\n\tst.global.u32 [%rd3], %r4;",
        "\tmov.u32 %r1, 1;\n\tand.b32 %r4, 1, 0;\n\tst.global.u32 [%rd3], %r4;"),
}


# Reversed, these are refinements (the candidate drops a fault the original may
# hit): a proof is allowed that way round.
ONE_WAY = frozenset({"misaligned_vector", "new_load_may_fault"})


@pytest.mark.parametrize("name", sorted(TEMPTING))
def test_tempting_pair_is_not_proved(name):
    a, b = TEMPTING[name]
    r = prove(a, b)
    assert r.verdict != "proved", f"{name}: proved: {r.reason}"
    assert r.reason, name
    if name in ONE_WAY:
        return
    # and the prover is not fooled by the order of the pair either
    r2 = prove(b, a)
    assert r2.verdict != "proved", f"{name} (reversed): proved: {r2.reason}"


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_pair_is_proved(name):
    a, b = LEGAL[name]
    r = prove(a, b)
    assert r.verdict == "proved", f"{name}: {r.reason}"
    assert prove(a, a).verdict == "proved"


def test_identity_is_proved_and_result_serialises():
    a, _ = TEMPTING["f32_reassociate"]
    r = prove(a, a)
    assert r.verdict == "proved" and r.seconds >= 0
    d = r.to_json()
    assert json.loads(json.dumps(d))["verdict"] == "proved"


def test_interface_differences():
    a, _ = TEMPTING["f32_reassociate"]
    assert prove(a, a.replace(".entry k(", ".entry k2(")).verdict == "differ"
    assert prove(a, a.replace(".param .u64 in", ".param .u64 in2").replace("[in]", "[in2]")).verdict == "differ"
    r = prove(a, "not ptx at all")
    assert r.verdict == "inconclusive" and "parse" in r.reason


def test_32_bit_addressing_is_not_modelled():
    a, b = pair("\tst.global.u32 [%rd3], 1;\n\tst.global.u32 [%rd3+4], 2;",
                "\tst.global.u32 [%rd3+4], 2;\n\tst.global.u32 [%rd3], 1;")
    assert prove(a, b).verdict == "proved"  # 64-bit: disjoint
    a32, b32 = (t.replace(".address_size 64", ".address_size 32") for t in (a, b))
    r = prove(a32, b32)
    assert r.verdict == "inconclusive" and "64-bit" in r.reason
    r = prove(*(t.replace(".address_size 64\n", "") for t in (a, b)))
    assert r.verdict == "inconclusive"


def test_reasons_name_the_problem():
    r = prove(*TEMPTING["uninitialised_register"])
    assert "uninitialised" in r.reason
    r = prove(*TEMPTING["scoped_variable_shadows_module_one"])
    assert "shadows" in r.reason
    r = prove(*TEMPTING["misaligned_vector"])
    assert "aligned" in r.reason


# Pairs the interpreter can tell apart on its default launch: the prover's
# refusal is not just caution, they really differ.
DIFFERENT_IN_INTERPRETER = ("add_u32_vs_u64", "shift_by_32", "addc_moved_off_its_add_cc",
                            "guard_negated", "vector_lanes_swapped", "signed_vs_unsigned_shr", "store_dropped",
                            "truncation_width", "loop_carried_value")


@pytest.mark.slow
@pytest.mark.parametrize("name", DIFFERENT_IN_INTERPRETER)
def test_tempting_pairs_really_differ(name):
    from ptxopt.equivalence.interpret import Geometry, verify

    a, b = TEMPTING[name]
    res = verify(a, b, "k", trials=3, geometry=Geometry(grid=(1, 1, 1), block=(32, 1, 1)))
    assert res.status != "equal", name
