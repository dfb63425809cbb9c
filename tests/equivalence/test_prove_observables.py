"""Every observable of :data:`ptxopt.equivalence.prove.observables.OBSERVABLES` is compared.

For each row of the table there is a pair that differs only in that
observable: the prover must not say ``proved``, and its reason must come
from that row. A row without a pair fails ``test_every_observable_has_a_pair``,
so a new observable arrives with its test. Then the two classes of
false ``proved`` this table and the fault rule close: ``.func`` exits (``.reg`` and ``.param``
return values, several exits, a call whose result is used) and scalar
alignment (a new access inside an original one, misaligned for its width).
"""

from __future__ import annotations

import pytest
from test_prove import HEAD, kernel, pair

from ptxopt.equivalence.prove import prove
from ptxopt.equivalence.prove.observables import OBSERVABLES, STORE_SPACES, store_space

LOAD2 = "\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4+4];\n"
BRANCH = LOAD2 + "\tsetp.lt.u32 %p1, %r1, %r2;\n"


def func_module(callee: str, ret: str = ".reg .b32 %rv", params: str = ".param .b64 tbl",
                use: str = "\tst.global.u32 [%rd3], %r3;", call: str | None = None) -> str:
    """A kernel that calls ``pick`` on its input pointer and stores the result."""
    load = "\tld.param.u64 %t1, [tbl];\n" if params.startswith(".param") else "\tmov.b64 %t1, %tbl;\n"
    if call is None:
        call = ("\t{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd4;\n\tcall (%r3), pick, (p0);\n\t}\n"
                if params.startswith(".param") else "\tcall (%r3), pick, (%rd4);\n")
    return (f"{HEAD}.func ({ret}) pick({params})\n{{\n\t.reg .pred %q<2>;\n\t.reg .b32 %a<4>;\n"
            f"\t.reg .b64 %t<2>;\n{load}{callee}\n}}\n"
            ".visible .entry k(.param .u64 out, .param .u64 in)\n{\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<8>;\n"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u64 %rd2, [in];\n\tcvta.to.global.u64 %rd3, %rd1;\n"
            f"\tcvta.to.global.u64 %rd4, %rd2;\n{call}{use}\n\tret;\n}}\n")


PICK = "\tld.global.v2.u32 {%a1, %a2}, [%t1];\n"


def pick_pair(a: str, b: str, **kw) -> tuple[str, str]:
    return func_module(PICK + a, **kw), func_module(PICK + b, **kw)


# row name -> (pair, a word the reason must contain)
ROW_PAIRS = {
    "control": (pair(BRANCH + "\t@%p1 bra $L1;\n\tst.global.u32 [%rd3], %r1;\n$L1:",
                     BRANCH + "\t@!%p1 bra $L1;\n\tst.global.u32 [%rd3], %r1;\n$L1:"), "terminator"),
    "warp collectives": (pair(LOAD2 + "\tshfl.sync.bfly.b32 %r4, %r1, 1, 31, -1;",
                              LOAD2 + "\tshfl.sync.bfly.b32 %r4, %r1, 2, 31, -1;"), "collective"),
    "ordering events": (pair(LOAD2 + "\tbar.sync 0;", LOAD2 + "\tbar.sync 1;"), "ordering"),
    "memory.global": (pair(LOAD2 + "\tst.global.u32 [%rd3], %r1;", LOAD2 + "\tst.global.u32 [%rd3], %r2;"),
                      "global stores"),
    "memory.shared": (pair(LOAD2 + "\tst.shared.u32 [s], %r1;", LOAD2 + "\tst.shared.u32 [s], %r2;",
                           decls=".shared .align 4 .b8 s[16];\n"), "shared stores"),
    "memory.local": (pair(LOAD2 + "\tst.local.u32 [l], %r1;", LOAD2 + "\tst.local.u32 [l], %r2;",
                          regs="\t.local .align 4 .b8 l[16];\n"), "local stores"),
    "memory.param": (pick_pair("\tst.param.b32 [rv], %a1;\n\tret;", "\tst.param.b32 [rv], %a2;\n\tret;",
                               ret=".param .b32 rv"), "param stores"),
    "memory.generic": (pair(LOAD2 + "\tst.u32 [%rd1], %r1;", LOAD2 + "\tst.u32 [%rd1], %r2;"), "generic stores"),
    "return values": (pick_pair("\tmov.b32 %rv, %a1;\n\tret;", "\tmov.b32 %rv, %a2;\n\tret;"), "return register"),
    "live-out registers": (pair(BRANCH + "\tadd.u32 %r4, %r1, 1;\n\t@%p1 bra $L1;\n\tadd.u32 %r4, %r4, 1;\n"
                                "$L1:\n\tst.global.u32 [%rd3], %r4;",
                                BRANCH + "\tadd.u32 %r4, %r2, 1;\n\t@%p1 bra $L1;\n\tadd.u32 %r4, %r4, 1;\n"
                                "$L1:\n\tst.global.u32 [%rd3], %r4;"), "live-out"),
    "faults": (pair("\tld.global.u64 %rd5, [%rd4];\n\tst.global.u64 [%rd3], %rd5;",
                    "\tld.global.u64 %rd5, [%rd4];\n\tst.global.u64 [%rd3], %rd5;\n"
                    "\tld.global.u32 %r1, [%rd4+2];"), "aligned"),
}
# The whole-memory row backs up the per-space rows (every store key names one
# of STORE_SPACES), so no pair can reach it alone.
CATCH_ALL = {"memory"}


def test_every_observable_has_a_pair():
    names = [o.name for o in OBSERVABLES]
    assert len(names) == len(set(names))
    assert set(names) - CATCH_ALL == set(ROW_PAIRS)
    assert {f"memory.{s}" for s in STORE_SPACES} <= set(names)


@pytest.mark.parametrize("row", sorted(ROW_PAIRS))
def test_each_observable_is_compared(row):
    (a, b), word = ROW_PAIRS[row]
    assert prove(a, a).verdict == "proved", row  # the pair's kernels are in the prover's reach
    r = prove(a, b)
    assert r.verdict != "proved", f"{row}: {r.reason}"
    assert word in r.reason, f"{row}: {r.reason}"


def test_store_space_of_keys():
    assert store_space("st.shared::cta.u32") == "shared"
    assert store_space("st.global.v2.f32") == "global"
    assert store_space("st.u32") == "generic"
    assert store_space("st.param.b32") == "param"


# -- class 1: function exits --------------------------------------------------------------------------

FUNC_EXITS = {
    # pick() returning tbl[0] vs tbl[1] in a .reg return value must never be proved
    "reg_return": pick_pair("\tmov.b32 %rv, %a1;\n\tret;", "\tmov.b32 %rv, %a2;\n\tret;"),
    "param_return": pick_pair("\tst.param.b32 [rv], %a1;\n\tret;", "\tst.param.b32 [rv], %a2;\n\tret;",
                              ret=".param .b32 rv"),
    # a .reg parameter (passed in a register) rather than a .param one
    "reg_param_reg_return": pick_pair("\tmov.b32 %rv, %a1;\n\tret;", "\tmov.b32 %rv, %a2;\n\tret;",
                                      params=".reg .b64 %tbl"),
    # two exits: the early, guarded one returns the other element
    "guarded_early_ret": pick_pair(
        "\tsetp.ne.u32 %q1, %a1, %a2;\n\tmov.b32 %rv, %a1;\n\t@%q1 ret;\n\tmov.b32 %rv, %a2;\n\tret;",
        "\tsetp.ne.u32 %q1, %a1, %a2;\n\tmov.b32 %rv, %a2;\n\t@%q1 ret;\n\tmov.b32 %rv, %a2;\n\tret;"),
    "branch_to_second_ret": pick_pair(
        "\tsetp.eq.u32 %q1, %a1, 0;\n\t@%q1 bra $R;\n\tmov.b32 %rv, %a1;\n\tret;\n$R:\n\tmov.b32 %rv, %a2;\n\tret;",
        "\tsetp.eq.u32 %q1, %a1, 0;\n\t@%q1 bra $R;\n\tmov.b32 %rv, %a1;\n\tret;\n$R:\n\tmov.b32 %rv, %a1;\n\tret;"),
    # the return register is written a block before the ret (liveness does not see ret read it)
    "ret_in_the_next_block": pick_pair("\tmov.b32 %rv, %a1;\n\tbra.uni $R;\n$R:\n\tret;",
                                       "\tmov.b32 %rv, %a2;\n\tbra.uni $R;\n$R:\n\tret;"),
    "ret_after_a_label": pick_pair("\tmov.b32 %rv, %a1;\n$R:\n\tret;", "\tmov.b32 %rv, %a2;\n$R:\n\tret;"),
    # no ret at all: falling off the end of the body returns too
    "falls_off_the_end": pick_pair("\tmov.b32 %rv, %a1;", "\tmov.b32 %rv, %a2;"),
    # the call's result feeds an address, not a store value
    "result_used_as_index": pick_pair(
        "\tmov.b32 %rv, %a1;\n\tret;", "\tmov.b32 %rv, %a2;\n\tret;",
        use="\tmul.wide.u32 %rd5, %r3, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tst.global.u32 [%rd6], 1;"),
}

FUNC_LEGAL = {
    # the two loads of the vector swapped into scalars of the same bytes: same return value
    "split_vector_in_callee": (
        func_module(PICK + "\tmov.b32 %rv, %a2;\n\tret;"),
        func_module("\tld.global.u32 %a1, [%t1];\n\tld.global.u32 %a2, [%t1+4];\n\tmov.b32 %rv, %a2;\n\tret;")),
    "reg_param_reorder": (
        func_module(PICK + "\tadd.u32 %a3, %a1, 1;\n\tmov.b32 %rv, %a2;\n\tret;", params=".reg .b64 %tbl"),
        func_module(PICK + "\tmov.b32 %rv, %a2;\n\tadd.u32 %a3, %a1, 1;\n\tret;", params=".reg .b64 %tbl")),
}


@pytest.mark.parametrize("name", sorted(FUNC_EXITS))
def test_function_exit_difference_is_not_proved(name):
    a, b = FUNC_EXITS[name]
    assert prove(a, a).verdict == "proved", name
    for x, y in ((a, b), (b, a)):
        r = prove(x, y)
        assert r.verdict != "proved", f"{name}: {r.reason}"
        assert "pick" in r.reason and ("return" in r.reason or "param stores" in r.reason
                                       or "live-out register %rv" in r.reason), r.reason


@pytest.mark.parametrize("name", sorted(FUNC_LEGAL))
def test_function_equivalence_still_proved(name):
    a, b = FUNC_LEGAL[name]
    r = prove(a, b)
    assert r.verdict == "proved", f"{name}: {r.reason}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reg_return", "param_return", "guarded_early_ret", "falls_off_the_end"])
def test_function_exit_pairs_really_differ(name):
    from ptxopt.equivalence.interpret import Geometry, verify

    a, b = FUNC_EXITS[name]
    res = verify(a, b, "k", trials=3, geometry=Geometry(grid=(1, 1, 1), block=(1, 1, 1)))
    assert res.status != "equal", name


# -- class 4: alignment in the fault model --------------------------------------------------------------

WIDE = "\tld.global.u64 %rd5, [%rd4];\n\tst.global.u64 [%rd3], %rd5;\n"
ALIGN_TEMPTING = {
    # inside the original 8-byte access, so covered, but misaligned for 4 bytes
    "u32_at_plus2": (WIDE, WIDE + "\tld.global.u32 %r1, [%rd4+2];"),
    "u16_at_plus1": (WIDE, WIDE + "\tld.global.u16 %rs1, [%rd4+1];"),
    "v2_u16_at_plus2": (WIDE, WIDE + "\tld.global.v2.u16 {%rs1, %rs2}, [%rd4+2];"),
    # inside one 8-byte lane of an original 16-byte vector load, half-way into a word
    "u32_inside_v2_u64_lane": ("\tld.global.v2.u64 {%rd5, %rd6}, [%rd4];\n\tst.global.u64 [%rd3], %rd6;",
                               "\tld.global.v2.u64 {%rd5, %rd6}, [%rd4];\n\tst.global.u64 [%rd3], %rd6;\n"
                               "\tld.global.u32 %r1, [%rd4+2];"),
    # two byte loads merged into a 2-byte vector: covered, but bytes say nothing of 2-byte alignment
    "u64_from_two_u8": ("\tld.global.u8 %rs1, [%rd4];\n\tld.global.u8 %rs2, [%rd4+1];\n"
                        "\tst.global.u8 [%rd3], %rs1;\n\tst.global.u8 [%rd3+1], %rs2;",
                        "\tld.global.v2.u8 {%rs1, %rs2}, [%rd4];\n"
                        "\tst.global.u8 [%rd3], %rs1;\n\tst.global.u8 [%rd3+1], %rs2;"),
}
ALIGN_LEGAL = {
    "u32_at_plus4": (WIDE, WIDE + "\tld.global.u32 %r1, [%rd4+4];"),
    "v2_u16_at_plus4": (WIDE, WIDE + "\tld.global.v2.u16 {%rs1, %rs2}, [%rd4+4];"),
    "u8_anywhere": (WIDE, WIDE + "\tld.global.u8 %rs1, [%rd4+3];"),
    "split_v2": ("\tld.global.v2.u32 {%r1, %r2}, [%rd4];\n\tst.global.u32 [%rd3], %r2;",
                 "\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4+4];\n\tst.global.u32 [%rd3], %r2;"),
}


@pytest.mark.parametrize("name", sorted(ALIGN_TEMPTING))
def test_misaligned_new_access_is_not_proved(name):
    a, b = ALIGN_TEMPTING[name]
    r = prove(kernel(a), kernel(b))
    assert r.verdict != "proved", f"{name}: {r.reason}"
    assert "aligned" in r.reason, r.reason


@pytest.mark.parametrize("name", sorted(ALIGN_LEGAL))
def test_aligned_new_access_is_proved(name):
    a, b = ALIGN_LEGAL[name]
    r = prove(kernel(a), kernel(b))
    assert r.verdict == "proved", f"{name}: {r.reason}"


def test_alignment_from_the_analysis():
    # two u32 loads merged into a .v2 (what vec_ld does): aligned only when the parameter says .align 8
    two = "\tld.global.u32 %r1, [%rd4];\n\tld.global.u32 %r2, [%rd4+4];\n"
    merged = "\tld.global.v2.u32 {%r1, %r2}, [%rd4];\n"
    store = "\tst.global.u32 [%rd3], %r2;"
    for align, want in ((16, "proved"), (8, "proved"), (4, "inconclusive"), (0, "inconclusive")):
        ptr = f".ptr .global .align {align} " if align else ""
        params = f".param .u64 {ptr}out, .param .u64 {ptr}in"
        r = prove(kernel(two + store, params=params), kernel(merged + store, params=params))
        assert r.verdict == want, (align, r.reason)
