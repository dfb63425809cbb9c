"""vec_ld / vec_st through Triton-style address chains.

Triton gives each scalar load its own address register::

    add.s64 %rd5, %rd2, 4;
    @%p1 ld.global.b32 {%r2}, [%rd5+0];

The vectorizer sees ``[%rd5]`` as ``[%rd2 + 4]`` when the ``add`` is an
unguarded 64-bit add of an immediate in the same straight-line region, with
neither register written in between. Every broken chain must be refused.
"""

import re

import pytest

import ptxopt
from ptxopt import emit, parse
from ptxopt.equivalence.launch import Launch
from ptxopt.passes.pipeline import Pipeline
from ptxopt.toolchain import compile_ptx
from ptxopt.equivalence.interpret import Geometry


def kernel(body: str, align: int | None = 16) -> str:
    decl = f".param .u64 .ptr .global .align {align} k_param_{{i}}" if align else ".param .u64 k_param_{i}"
    params = ",\n\t".join(decl.format(i=i) for i in range(2))
    lines = "\n".join("\t" + ln for ln in body.strip().splitlines())
    return f"""\
.version 8.8
.target sm_89
.address_size 64

.visible .entry k(
\t{params}
)
{{
\t.reg .pred %p<4>;
\t.reg .b32 %r<40>;
\t.reg .b64 %rd<20>;
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd3, [k_param_1];
\tcvta.to.global.u64 %rd2, %rd1;
\tcvta.to.global.u64 %rd4, %rd3;
\tmov.u32 %r30, %tid.x;
\tsetp.lt.u32 %p1, %r30, 16;
\tsetp.lt.u32 %p2, %r30, 8;
\tmul.wide.u32 %rd10, %r30, 16;
\tadd.s64 %rd2, %rd2, %rd10;
\tadd.s64 %rd4, %rd4, %rd10;
{lines}
\tret;
}}
"""


CHAIN = """
add.s64 %rd5, %rd2, 4;
add.s64 %rd6, %rd2, 8;
add.s64 %rd7, %rd2, 12;
{g}ld.global.b32 %r1, [%rd2+0];
{g}ld.global.b32 %r2, [%rd5+0];
{g}ld.global.b32 %r3, [%rd6+0];
{g}ld.global.b32 %r4, [%rd7+0];
{middle}
add.s32 %r5, %r1, 1;
st.global.b32 [%rd4+0], %r5;
st.global.b32 [%rd4+4], %r2;
st.global.b32 [%rd4+8], %r3;
st.global.b32 [%rd4+12], %r4;
"""


def triton_loads(middle: str = "", guard: str = "@%p1 ") -> str:
    return CHAIN.format(g=guard, middle=middle)


def run(pipeline: str, ptx: str):
    m = parse(ptx)
    rep = None
    for p in Pipeline.parse(pipeline, allow_conflicts=True):
        m, rep = p.apply(m)
    return emit(m), rep


def reasons(rep) -> str:
    return "\n".join(s.what for s in rep.refused)


def vector_lines(text: str) -> list[str]:
    return [" ".join(ln.split()).replace("+0]", "]").replace("+-", "-") for ln in text.splitlines() if ".v2." in ln or ".v4." in ln]


def equal(ptx: str, pipeline: str):
    """Optimize with ptxas and the interpreter (and, separately, the prover);
    the rewrite must be used."""
    contract = Launch((1, 1, 1), (16, 1, 1), origin="contract", source="16 threads, 1 KiB buffers",
                      buffer_bytes=1024, entry="k")
    # what is checked is legality, not speed: min_improvement=0 uses a rewrite the model rates even
    res = ptxopt.optimize(ptx, pipeline, contract=contract, prove=False, min_improvement=0)
    assert res.changed, res.reason
    assert res.verdict == "equal", (res.verdict, res.verdict_note)
    proved = ptxopt.optimize(ptx, pipeline, contract=contract, min_improvement=0)
    assert proved.ptx == res.ptx and proved.verdict in ("proved", "equal"), (proved.verdict, proved.verdict_note)
    return res


def test_chain_of_constant_adds_is_one_base():
    ptx = kernel(triton_loads())
    out, rep = run("vec_ld", ptx)
    assert vector_lines(out) == ["@%p1 ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];"]
    assert len(rep.changed) == 1 and not rep.refused
    compile_ptx(out, "sm_89")
    equal(ptx, "vec_ld")


def test_chain_through_several_adds_and_sub():
    ptx = kernel("""
add.s64 %rd5, %rd2, 16;
sub.s64 %rd6, %rd5, 12;
add.s64 %rd7, 4, %rd6;
ld.global.b32 %r1, [%rd2+0];
ld.global.b32 %r2, [%rd6+0];
ld.global.b32 %r3, [%rd7+0];
ld.global.b32 %r4, [%rd5+-4];
st.global.b32 [%rd4+0], %r1;
st.global.b32 [%rd4+4], %r2;
st.global.b32 [%rd4+8], %r3;
st.global.b32 [%rd4+12], %r4;
""")
    out, rep = run("vec_ld", ptx)
    assert vector_lines(out) == ["ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];"]
    equal(ptx, "vec_ld")


def test_reverse_order_addresses_the_group_from_the_first_load():
    # the first load in program order is the highest address: the merged load
    # goes there, so it must be addressed from that load's own register
    ptx = kernel("""
add.s64 %rd7, %rd2, 12;
ld.global.b32 %r4, [%rd7+0];
add.s64 %rd6, %rd2, 8;
ld.global.b32 %r3, [%rd6+0];
add.s64 %rd5, %rd2, 4;
ld.global.b32 %r2, [%rd5+0];
ld.global.b32 %r1, [%rd2+0];
st.global.b32 [%rd4+0], %r1;
st.global.b32 [%rd4+4], %r2;
st.global.b32 [%rd4+8], %r3;
st.global.b32 [%rd4+12], %r4;
""")
    out, rep = run("vec_ld", ptx)
    assert vector_lines(out) == ["ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd7-12];"]
    compile_ptx(out, "sm_89")
    equal(ptx, "vec_ld")


def test_stores_through_a_chain_use_the_last_stores_register():
    ptx = kernel("""
ld.global.b32 %r1, [%rd2+0];
add.s32 %r2, %r1, 1;
add.s32 %r3, %r1, 2;
st.global.b32 [%rd4+0], %r1;
add.s64 %rd5, %rd4, 4;
st.global.b32 [%rd5+0], %r2;
add.s64 %rd4, %rd4, 8;
st.global.b32 [%rd4+0], %r3;
st.global.b32 [%rd4+4], %r3;
""")
    out, rep = run("vec_st", ptx)
    # each pair is addressed from its last store's register; %rd4 is redefined
    # (old %rd4 + 8) in between, so old %rd4 is no longer available there.
    # (Alignment is one fact per register over all its definitions: 8 bytes
    # for %rd4 here, hence .v2 pairs, not one .v4.)
    assert vector_lines(out) == ["st.global.v2.b32 [%rd5-4], {%r1, %r2};",
                                 "st.global.v2.b32 [%rd4], {%r3, %r3};"]
    compile_ptx(out, "sm_89")
    equal(ptx, "vec_st")


def test_unaligned_chain_needs_assume_align():
    ptx = kernel(triton_loads(), align=None)
    out, rep = run("vec_ld", ptx)
    assert not rep.changed
    assert re.search(r"alignment of \[%rd2\] not proven: \.v4\.b32 needs 16 bytes", reasons(rep))
    out, rep = run("vec_ld{assume_align=16}", ptx)
    assert vector_lines(out) == ["@%p1 ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];"]


# ---------------------------------------------------------------------------
# adversarial: every broken chain is refused
# ---------------------------------------------------------------------------

# (body before the loads, the groups that stay legal: registers hanging off one value)
BROKEN = {
    # the base is redefined between two links: only %rd6/%rd7 share a value (new %rd2)
    "base redefined": ("""
add.s64 %rd5, %rd2, 4;
ld.param.u64 %rd2, [k_param_1];
cvta.to.global.u64 %rd2, %rd2;
add.s64 %rd6, %rd2, 8;
add.s64 %rd7, %rd2, 12;
""", [{"%r3", "%r4"}]),
    # two different bases: two pairs at most
    "different bases": ("""
add.s64 %rd5, %rd2, 4;
add.s64 %rd6, %rd4, 8;
add.s64 %rd7, %rd4, 12;
""", [{"%r1", "%r2"}, {"%r3", "%r4"}]),
    # the links are guarded: %rd5.. may keep older values
    "guarded link": ("""
@%p2 add.s64 %rd5, %rd2, 4;
@%p2 add.s64 %rd6, %rd2, 8;
@%p2 add.s64 %rd7, %rd2, 12;
""", []),
    # a 32-bit add is not followed
    "32-bit add": ("""
cvt.u32.u64 %r20, %rd2;
add.s32 %r21, %r20, 4;
cvt.u64.u32 %rd5, %r21;
add.s64 %rd6, %rd2, %rd10;
add.s64 %rd7, %rd2, %rd10;
""", []),
    # the address registers are redefined after their links
    "link overwritten": ("""
add.s64 %rd5, %rd2, 4;
add.s64 %rd6, %rd2, 8;
add.s64 %rd7, %rd2, 12;
add.s64 %rd5, %rd4, 4;
add.s64 %rd6, %rd4, 8;
add.s64 %rd7, %rd4, 12;
""", [{"%r3", "%r4"}]),
}


def groups(text: str) -> list[set[str]]:
    return [set(re.findall(r"%r\d+", ln.split("{")[1].split("}")[0])) for ln in vector_lines(text)
            if ln.split()[0].endswith("ld.global.v2.b32") or ".v4." in ln]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_chains_are_refused(case):
    prefix, legal = BROKEN[case]
    body = prefix + "\n".join(CHAIN.strip().splitlines()[3:]).format(g="", middle="")
    out, rep = run("vec_ld{assume_align=16}", kernel(body))
    got = groups(out)
    assert all(g in legal for g in got), (case, got)
    compile_ptx(out, "sm_89")


def test_a_link_before_a_label_is_not_trusted_after_it():
    body = """
add.s64 %rd5, %rd2, 4;
add.s64 %rd6, %rd2, 8;
add.s64 %rd7, %rd2, 12;
$L_next:
""" + "\n".join(CHAIN.strip().splitlines()[3:]).format(g="", middle="")
    out, rep = run("vec_ld", kernel(body))
    assert not rep.changed


def test_different_guards_are_refused():
    body = CHAIN.format(g="", middle="").replace("ld.global.b32 %r2", "@%p2 ld.global.b32 %r2")
    out, rep = run("vec_ld", kernel(body))
    assert "different guards on [%rd5] and [%rd2]" in reasons(rep) or \
           "different guards" in reasons(rep)
    assert not any("%r2" in ln for ln in vector_lines(out))


def test_a_store_that_may_alias_in_between_is_refused():
    body = CHAIN.format(g="", middle="").replace(
        "ld.global.b32 %r3", "st.global.b32 [%rd4+0], %r1;\nld.global.b32 %r3")
    out, rep = run("vec_ld", kernel(body))
    assert re.search(r"st\.global\.b32 at line \d+ may alias \[%rd6\]", reasons(rep))
    # the pairs on either side of the store may merge, nothing across it
    assert not any("%r2" in ln and "%r3" in ln for ln in vector_lines(out))


def test_a_store_through_the_same_chain_to_other_bytes_does_not_alias():
    body = CHAIN.format(g="", middle="").replace(
        "ld.global.b32 %r3", "add.s64 %rd8, %rd2, 64;\nst.global.b32 [%rd8+0], %r1;\nld.global.b32 %r3")
    ptx = kernel(body)
    out, rep = run("vec_ld", ptx)
    assert vector_lines(out) == ["ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];"]
    equal(ptx, "vec_ld")
    # ... but a store to bytes of the group does (through another chain register)
    bad = kernel(body.replace("%rd2, 64", "%rd2, 12"))
    out, rep = run("vec_ld", bad)
    assert "may alias" in reasons(rep)
    # %r4 (bytes 12..15, written by the store) may not move above it; {%r3, %r4} is after it
    assert all(g in ({"%r1", "%r2"}, {"%r3", "%r4"}) for g in groups(out))


def test_triton_braces_around_scalars():
    # Triton writes `ld.global.b32 { %r1 }, [ %rd5 + 0 ]` for a scalar access
    body = CHAIN.format(g="@%p1 ", middle="")
    body = re.sub(r"ld\.global\.b32 (%r\d+), \[(%rd\d+)\+0\]", r"ld.global.b32 { \1 }, [ \2 + 0 ]", body)
    body = re.sub(r"st\.global\.b32 \[%rd4\+(\d+)\], (%r\d+)", r"st.global.b32 [ %rd4 + \1 ], { \2 }", body)
    assert "{ %r2 }" in body and "{ %r4 }" in body
    ptx = kernel(body)
    out, rep = run("vec_ld,vec_st", ptx)
    assert "@%p1 ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];" in vector_lines(out)
    compile_ptx(out, "sm_89")
    equal(ptx, "vec_ld")


def test_census_says_why_nothing_merged():
    from ptxopt.passes.vectorize import census

    body = CHAIN.format(g="", middle="").replace("ld.global.b32 %r2", "@%p2 ld.global.b32 %r2")
    m = parse(kernel(body.replace("ld.global.b32 %r4, [%rd7+0]", "ld.global.v2.b32 {%r4, %r5}, [%rd7+0]")))
    assert census(m, store=False) == ("nothing to merge among 4 ld.global: 1 already .v2, "
                                      "3 scalar without a same-guard, same-base partner at an adjacent "
                                      "aligned offset")
    assert census(parse(kernel("")), store=True) == "no st.global in the kernel"


# ---------------------------------------------------------------------------
# differential: random Triton-style chains, every rewrite checked by ptxas and
# the interpreter
# ---------------------------------------------------------------------------

def random_chain_kernel(rng) -> str:
    """Two per-thread 128-byte windows (%rd2 in buffer 0, %rd4 in buffer 1),
    chain registers %rd5..%rd9 at tracked offsets, loads/stores through them
    under random guards, base redefinitions and labels; the end dumps every
    %r to buffer 1 bytes 64..127 through a register nothing else writes."""
    off = {"%rd2": 0, "%rd4": 0}  # offset of each address register inside its window
    win = {"%rd2": 0, "%rd4": 1}
    lines = ["mul.wide.u32 %rd11, %r30, 128;", "add.s64 %rd12, %rd4, %rd11;",
             "add.s64 %rd2, %rd2, %rd11;", "add.s64 %rd4, %rd4, %rd11;"]
    lines += [f"add.u32 %r{i}, %r30, {i};" for i in range(1, 13)]
    for _ in range(rng.randint(6, 22)):
        k = rng.random()
        regs = sorted(off)
        if k < 0.3:  # a link
            dst = rng.choice(["%rd5", "%rd6", "%rd7", "%rd8", "%rd9"])
            src = rng.choice(regs)
            new = rng.randrange(0, 15) * 4
            lines.append(f"add.s64 {dst}, {src}, {new - off[src]};")
            off[dst], win[dst] = new, win[src]
        elif k < 0.36:  # the base moves by a constant
            b = rng.choice(["%rd2", "%rd4"])
            new = rng.randrange(0, 8) * 4
            lines.append(f"add.s64 {b}, {b}, {new - off[b]};")
            off[b] = new
        elif k < 0.4:
            lines.append(f"$L{len(lines)}:")
        elif k < 0.75:  # a load (possibly from a link)
            r = rng.choice(regs)
            o = rng.randrange(0, (60 - off[r]) // 4 + 1) * 4
            g = rng.choice(["", "", "@%p1 ", "@%p2 "])
            lines.append(f"{g}ld.global.b32 %r{rng.randint(1, 12)}, [{r}+{o}];")
        else:  # a store into buffer 1's first 64 bytes, or buffer 0
            r = rng.choice(regs)
            o = rng.randrange(0, (60 - off[r]) // 4 + 1) * 4
            g = rng.choice(["", "", "@%p1 ", "@%p2 "])
            lines.append(f"{g}st.global.b32 [{r}+{o}], %r{rng.randint(1, 12)};")
    lines += [f"st.global.b32 [%rd12+{64 + 4 * (i - 1)}], %r{i};" for i in range(1, 13)]
    lines += [f"st.global.b32 [%rd12+{112 + 4 * i}], %r{i + 1};" for i in range(4)]
    body = "\n".join(lines)
    return kernel(body).replace("\tmul.wide.u32 %rd10, %r30, 16;\n\tadd.s64 %rd2, %rd2, %rd10;\n"
                                "\tadd.s64 %rd4, %rd4, %rd10;\n", "")


def _check_random(seed: int) -> int:
    import random

    from ptxopt.equivalence.interpret import verify

    rng = random.Random(seed)
    ptx = random_chain_kernel(rng)
    merged = 0
    for pipe in ("vec_ld", "vec_st", "vec_ld,vec_st"):
        out, rep = run(pipe, ptx)
        if out == emit(parse(ptx)):
            continue
        merged += sum("%rd12" not in ln for ln in vector_lines(out))  # the final dump merges anyway
        compile_ptx(out, "sm_89")
        r = verify(parse(ptx), parse(out), "k", geometry=Geometry(grid=(1, 1, 1), block=(16, 1, 1),
                                                                  buffer_bytes=2048))
        assert r.status == "equal", (seed, pipe, r.status, r.error, r.mismatch, out)
    return merged


def test_random_chains_quick():
    _check_random(0)
    _check_random(1)


@pytest.mark.slow
def test_random_chains():
    merged = sum(_check_random(s) for s in range(6, 120))
    assert merged > 20


def test_constant_step_recognises_only_links():
    from ptxopt.analysis.alias import constant_step
    from ptxopt.ptx.ir import Instruction

    def step(line):
        body = [i for i in parse(kernel(line)).entries[0].body.items if type(i) is Instruction]
        assert body[-1].opcode == "ret"
        return constant_step(body[-2])  # the line, just before ret

    d, b, c = step("add.s64 %rd5, %rd2, 12;")
    assert (d, b, c) == ("%rd5", "%rd2", 12)
    assert step("add.u64 %rd5, 8, %rd2;")[2] == 8
    assert step("sub.s64 %rd5, %rd2, 4;")[2] == -4
    for no in ("add.s64 %rd5, %rd2, %rd3;", "add.s32 %r5, %r2, 4;", "@%p1 add.s64 %rd5, %rd2, 4;",
               "add.cc.u64 %rd5, %rd2, 4;", "sub.s64 %rd5, 4, %rd2;", "mul.lo.s64 %rd5, %rd2, 4;"):
        assert step(no) is None, no
