"""Regression tests for ISA facts that are easy to get wrong: the carry flag
as implicit state, destinations of opcodes that only sometimes have one,
``.extern .shared`` arrays that alias, and scoped declarations that shadow
module-level ones. Each test fails if its fact is ignored."""

from pathlib import Path

import pytest

from ptxopt import emit, parse
from ptxopt.analysis import block_dag, build_cfg, register_pressure
from ptxopt.analysis.alias import Access, may_alias, overlapping_symbols
from ptxopt.analysis.alignment import variable_alignments
from ptxopt.ptx.opcodes import CARRY_FLAG
from ptxopt.ptx.operand_facts import defs_uses
from ptxopt.passes.passmanager import PassManager

DATA = Path(__file__).parents[1] / "data"
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"
REORDERS = ("reorder_cp", "reorder_il", "reorder_lf", "reorder_sl")


def one(text: str):
    """The single instruction of a one-instruction kernel body."""
    m = parse(HEAD + ".visible .entry k()\n{\n\t" + text + "\n\tret;\n}\n")
    return next(m.entries[0].instructions())


@pytest.mark.parametrize("text, defs, uses", [
    # carry flag: written by .cc forms, read by addc/subc/madc
    ("add.cc.u32 %r1, %r2, %r3;", ["%r1", CARRY_FLAG], ["%r2", "%r3"]),
    ("addc.u32 %r1, %r2, %r3;", ["%r1"], ["%r2", "%r3", CARRY_FLAG]),
    ("addc.cc.u32 %r1, %r2, %r3;", ["%r1", CARRY_FLAG], ["%r2", "%r3", CARRY_FLAG]),
    ("mad.lo.cc.u32 %r1, %r2, %r3, %r4;", ["%r1", CARRY_FLAG], ["%r2", "%r3", "%r4"]),
    ("madc.hi.u32 %r1, %r2, %r3, %r4;", ["%r1"], ["%r2", "%r3", "%r4", CARRY_FLAG]),
    ("sub.cc.u32 %r1, %r2, %r3;", ["%r1", CARRY_FLAG], ["%r2", "%r3"]),
    ("subc.cc.u32 %r1, %r2, %r3;", ["%r1", CARRY_FLAG], ["%r2", "%r3", CARRY_FLAG]),
    ("add.u32 %r1, %r2, %r3;", ["%r1"], ["%r2", "%r3"]),
    # elect.sync writes a register and a predicate (it was listed as no-destination)
    ("elect.sync %r1|%p1, 0xffffffff;", ["%r1", "%p1"], []),
    # bar.red / barrier.red write their first operand; bar.sync writes nothing
    ("bar.red.popc.u32 %r1, 0, %p1;", ["%r1"], ["%p1"]),
    ("barrier.red.and.pred %p1, 1, %p2;", ["%p1"], ["%p2"]),
    ("bar.sync %r1;", [], ["%r1"]),
    ("bar.sync 0, %r2;", [], ["%r2"]),
    # wgmma.mma_async accumulates into d; wgmma.fence has no operands
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, 1, 1, 1, 0, 0;",
     ["%f1", "%f2", "%f3", "%f4"], ["%rd1", "%rd2", "%f1", "%f2", "%f3", "%f4"]),
    # tcgen05.ld writes registers; tcgen05.dealloc only reads its first operand
    ("tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r1}, [%r2];", ["%r1"], ["%r2"]),
    ("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;", [], ["%r1"]),
    # stackrestore reads its operand; stacksave writes one
    ("stackrestore.u64 %rd1;", [], ["%rd1"]),
    ("stacksave.u64 %rd1;", ["%rd1"], []),
    # an address in first position is never a destination
    ("mbarrier.init.shared.b64 [%r1], %r2;", [], ["%r1", "%r2"]),
    ("mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;", ["%p1"], ["%r1", "%r2"]),
])
def test_defs_and_uses(text, defs, uses):
    d, u = defs_uses(one(text))
    assert sorted(d) == sorted(defs)
    assert sorted(u) == sorted(uses)


def _order(text: str, opcodes_: tuple[str, ...]) -> list[str]:
    out = []
    for line in text.splitlines():
        word = line.strip().split("\t")[0].split(" ")[0]
        if word.split(".")[0] in opcodes_:
            out.append(word)
    return out


def test_carry_chain_dag_edges():
    m = parse((DATA / "carry_chain.ptx").read_text())
    cfg = build_cfg(m.entries[0])
    dag = block_dag(cfg, 0, module=m)
    names = [f"{i.opcode}{'.cc' if 'cc' in i.modifiers else ''}" for i in cfg.blocks[0].instructions]
    add_cc, addc, sub_cc, subc = (names.index(x) for x in ("add.cc", "addc", "sub.cc", "subc"))
    assert dag.has_edge(add_cc, addc) and CARRY_FLAG in dag.edges[add_cc, addc]["regs"]
    # the second carry writer may not move above the first one's reader (war on the flag)
    assert dag.has_edge(addc, sub_cc)
    assert dag.has_edge(sub_cc, subc)


@pytest.mark.parametrize("pipeline", REORDERS)
def test_reorder_keeps_carry_pairs_together(pipeline):
    """reorder_il must not put sub.cc above add.cc, where subc would read add.cc's carry."""
    m = parse((DATA / "carry_chain.ptx").read_text())
    out = emit(PassManager(pipeline).run(m).module)
    seq = _order(out, ("add", "addc", "sub", "subc"))
    assert seq == ["add.cc.u32", "addc.u32", "sub.cc.u32", "subc.u32"]


def test_register_pressure_ignores_the_carry_flag():
    m = parse((DATA / "carry_chain.ptx").read_text())
    p = register_pressure(build_cfg(m.entries[0]))
    assert p.max_live > 0 and p.by_class["b32"] <= 8


def test_extern_shared_arrays_overlap():
    m = parse((DATA / "extern_shared_alias.ptx").read_text())
    fn = m.entries[0]
    assert overlapping_symbols(fn, m) == {"sa", "sb"}
    assert overlapping_symbols(fn) == {"sb"}          # without the module: only fn's own
    a = Access(0, True, "shared", ("sym", "sa"), 0, 4)
    b = Access(1, False, "shared", ("sym", "sb"), 0, 4)
    assert may_alias(a, b, overlap=frozenset({"sa", "sb"}))
    assert not may_alias(a, b)                        # ordinary distinct variables
    same = Access(2, False, "shared", ("sym", "sa"), 8, 4)
    assert not may_alias(a, same, overlap=frozenset({"sa", "sb"}))  # same base, disjoint bytes


def test_extern_shared_store_orders_later_loads():
    m = parse((DATA / "extern_shared_alias.ptx").read_text())
    cfg = build_cfg(m.entries[0])
    dag = block_dag(cfg, 0, module=m)
    ins = cfg.blocks[0].instructions
    st = next(k for k, i in enumerate(ins) if i.opcode == "st" and "shared" in i.modifiers)
    loads = [k for k, i in enumerate(ins) if i.opcode == "ld" and "shared" in i.modifiers]
    assert loads and all(dag.has_edge(st, k) for k in loads)


@pytest.mark.parametrize("pipeline", REORDERS)
def test_reorder_keeps_extern_shared_store_before_loads(pipeline):
    """reorder_il/lf must not hoist ld [sb] above st [sa]: both are the dynamic
    shared-memory base."""
    m = parse((DATA / "extern_shared_alias.ptx").read_text())
    out = emit(PassManager(pipeline).run(m).module)
    seq = [w for w in _order(out, ("ld", "st")) if "shared" in w]
    assert seq == ["st.shared.f32", "ld.shared.f32", "ld.shared.f32"]


def test_shadowing_declaration_gives_the_smaller_alignment():
    m = parse(HEAD + ".shared .align 16 .b8 buf[64];\n.visible .entry k()\n{\n"
              "\t{\n\t.shared .align 4 .b8 buf[68];\n\tret;\n\t}\n}\n")
    facts = variable_alignments(m, m.entries[0])
    assert facts["buf"][0] == 4


@pytest.mark.parametrize("text, expected", [
    ("mov.u32 %r1, %clock;", "order"),
    ("cvt.u64.u32 %rd1, %clock;", "order"),        # any reader of a clock, not only mov
    ("add.u32 %r1, %r2, 1;", "pure"),
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2, [%r3];", "order"),
    ("st.global.u32 [%rd1], %r2;", "store"),
    ("ld.relaxed.gpu.global.u32 %r1, [%rd1];", "order"),
    ("elect.sync %r1|%p1, 0xffffffff;", "collective"),
])
def test_roles(text, expected):
    from ptxopt.ptx.operand_facts import role

    assert role(one(text)) == expected


# ---------------------------------------------------------------------------
# The entry performance-tuning directives (ptxopt.ptx.opcodes.ENTRY_TUNING_DIRECTIVES)

from ptxopt.ptx.opcodes import ENTRY_TUNING_DIRECTIVES, EXCLUSIVE_TUNING_DIRECTIVES  # noqa: E402
from ptxopt.toolchain import PtxasError, compile_ptx  # noqa: E402


def _entry_with(directives: str, version: str = "8.0") -> str:
    return f".version {version}\n.target sm_89\n.address_size 64\n.visible .entry k() {directives}\n{{\n\tret;\n}}\n"


@pytest.mark.parametrize("name", sorted(ENTRY_TUNING_DIRECTIVES))
def test_tuning_directive_versions_are_what_ptxas_requires(name):
    """ptxas names the exact version a directive needs when the module's is
    older (1.2 is older than all of them)."""
    (major, minor), _ = ENTRY_TUNING_DIRECTIVES[name]
    older = "1.2"
    with pytest.raises(PtxasError, match=rf"'\.{name}( directive)?' requires PTX ISA \.version {major}\.{minor} "):
        compile_ptx(_entry_with(f".{name} 2", older).replace(".address_size 64\n", ""), "sm_89")


def test_maxntid_and_reqntid_exclude_each_other():
    assert EXCLUSIVE_TUNING_DIRECTIVES == {"maxntid", "reqntid"}
    with pytest.raises(PtxasError, match=r"\.maxntid and \.reqntid cannot both be specified"):
        compile_ptx(_entry_with(".maxntid 64 .reqntid 64"), "sm_89")


@pytest.mark.parametrize("directives,warning", [
    (".minnctapersm 2", ".minnctapersm is ignored when neither .maxntid nor .reqntid is specified"),
    (".maxntid 1024 .minnctapersm 2", "Value of threads per SM for entry k is out of range. .minnctapersm will be ignored"),
    (".maxntid 32 .minnctapersm 25", "Value of minnctapersm for entry k is out of range. minnctapersm will be ignored"),
])
def test_ptxas_ignores_a_minnctapersm_it_cannot_use(directives, warning):
    """Without a block bound, over the SM's threads (48 warps on sm_89), over
    its blocks (24): ptxas warns and ignores the directive (what launch_bounds
    refuses statically)."""
    res = compile_ptx(_entry_with(directives), "sm_89")
    assert any(warning in d.message for d in res.warnings), res.warnings


def test_ld_global_nc_forms_are_the_manuals():
    """PTX ISA ld.global.nc: ``ld.global{.cop}.nc{...}{.vec}.type`` with .cop in
    {.ca, .cg, .cs}, .type in {.b8..b128, .u8..u64, .s8..s64, .f32, .f64}; weak
    only (no .volatile/.relaxed/.acquire/.mmio forms), no .unified."""
    from ptxopt.ptx import opcodes

    assert opcodes.NC_LOAD_CACHE_OPS == ("ca", "cg", "cs")
    assert opcodes.NC_LOAD_TYPES == {"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64",
                                     "s8", "s16", "s32", "s64", "f32", "f64"}
    assert "unified" in opcodes.NC_LOAD_EXCLUDED_MODS


@pytest.mark.parametrize("sreg, uniform", [
    ("%ctaid.x", True), ("%nctaid.y", True), ("%ntid.x", True), ("%tid.x", False), ("%laneid", False),
    ("%warpid", False), ("%clock", False), ("%lanemask_lt", False), ("%smid", False)])
def test_block_uniform_special_registers(sreg, uniform):
    from ptxopt.ptx import opcodes

    assert opcodes.is_block_uniform_sreg(sreg) is uniform


def _float_kernel(line: str) -> str:
    return (HEAD + ".visible .entry k(.param .u64 p)\n{\n\t.reg .f32 %f<4>;\n\t.reg .b32 %r<4>;\n"
            "\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
            f"\tld.global.f32 %f1, [%rd2];\n\t{line}\n\tst.global.f32 [%rd2+4], %f2;\n\tret;\n}}\n")


@pytest.mark.parametrize("form", ["ld.global.nc.f32", "ldu.global.f32", "ld.global.ca.nc.f32", "ldu.global.v2.f32"])
def test_read_only_load_rows_are_forms_ptxas_accepts(form):
    """Each row of ``READ_ONLY_LOADS`` names a load ptxas takes, and the
    table says it is on the read-only path."""
    from ptxopt.ptx import opcodes
    from ptxopt.toolchain import compile_ptx

    dest = "{%f2, %f3}" if ".v2" in form else "%f2"
    text = _float_kernel(f"{form} {dest}, [%rd2+8];")
    compile_ptx(text, "sm_90a")
    ins = next(i for i in parse(text).entries[0].instructions() if i.full_opcode == form)
    assert opcodes.is_read_only_load(ins) and ins.opcode in opcodes.READ_ONLY_LOADS


@pytest.mark.parametrize("op, mod", sorted(__import__("ptxopt.ptx.opcodes", fromlist=["x"]).APPROXIMATE_FLOAT_OPS))
def test_approximate_rows_are_forms_ptxas_accepts(op, mod):
    """Each approximate row is an f32 form ptxas takes, and the precision facts
    call it approximate and give it a form distinct from the exact ones."""
    from ptxopt.ptx import opcodes
    from ptxopt.toolchain import compile_ptx

    srcs = "%f1, %f1" if op == "div" else "%f1"
    text = _float_kernel(f"{op}.{mod}.f32 %f2, {srcs};")
    compile_ptx(text, "sm_90a")
    ins = next(i for i in parse(text).entries[0].instructions() if i.opcode == op)
    assert opcodes.is_approximate(ins)
    assert opcodes.precision_form(ins) == (op, ("f32",), (mod,))


def test_a_missing_rounding_modifier_is_its_own_form():
    """``add.f32`` may be contracted into an fma by ptxas, ``add.rn.f32`` may not
    (PTX ISA add: "add{.rnd} ... with no rounding modifier ... may be optimized
    aggressively"): two forms. ``.ftz``/``.sat`` are part of the form; the order
    of modifiers is not."""
    from ptxopt.ptx import opcodes

    def form(line):
        return opcodes.precision_form(one(line))

    assert form("add.f32 %f1, %f2, %f3;") != form("add.rn.f32 %f1, %f2, %f3;")
    assert form("add.rn.ftz.f32 %f1, %f2, %f3;") == ("add", ("f32",), ("ftz", "rn"))
    assert form("cvt.rzi.s32.f32 %r1, %f1;") == ("cvt", ("s32", "f32"), ("rzi",))
    assert form("add.s32 %r1, %r2, %r3;") is None and form("mov.f32 %f1, %f2;") is None
    assert not opcodes.is_approximate(one("rcp.rn.f32 %f1, %f2;"))
