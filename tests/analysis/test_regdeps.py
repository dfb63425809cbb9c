"""The register walk both dependency structures share (ptxopt.analysis.regdeps),
checked by hand on the cases that tempt a scheduler: guarded definitions
(which may not happen), redefinitions, uses between definitions, the carry
flag's implicit register, and an instruction reading what it writes. The
DAG and the DepGraph are compared with each other in test_depgraph.py; since
they now share this walk, its own answers are pinned here."""

from ptxopt import parse
from ptxopt.analysis.cfg import instr_defs_uses
from ptxopt.analysis.regdeps import RAW, WAR, WAW, RegisterWalk
from ptxopt.ptx.opcodes import CARRY_FLAG


def _edges(body: str) -> list[set]:
    m = parse(".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
              ".reg .pred %p<4>;\n.reg .b32 %r<16>;\n" + body + "\n}\n")
    walk = RegisterWalk()
    out = []
    for i, ins in enumerate(m.entries[0].instructions()):
        defs, uses = instr_defs_uses(ins)
        out.append(set(walk.step(i, defs, uses, ins.guard is not None)))
    return out


def test_a_guarded_definition_does_not_hide_the_one_before():
    e = _edges("mov.u32 %r1, 1;\n@%p1 mov.u32 %r1, 2;\nadd.u32 %r2, %r1, %r1;\nret;")
    assert (0, WAW, "%r1") in e[1]
    # the add may read either definition
    assert {(0, RAW, "%r1"), (1, RAW, "%r1")} <= e[2]


def test_an_unguarded_redefinition_does_hide_it():
    e = _edges("mov.u32 %r1, 1;\nmov.u32 %r1, 2;\nadd.u32 %r2, %r1, 3;\nret;")
    assert (1, RAW, "%r1") in e[2] and (0, RAW, "%r1") not in e[2]


def test_a_redefinition_waits_for_every_use_since_the_last():
    e = _edges("mov.u32 %r1, 1;\nadd.u32 %r2, %r1, 1;\nadd.u32 %r3, %r1, 2;\nmov.u32 %r1, 5;\nret;")
    assert {(1, WAR, "%r1"), (2, WAR, "%r1"), (0, WAW, "%r1")} <= e[3]


def test_reading_what_it_writes_is_no_self_edge():
    e = _edges("mov.u32 %r1, 1;\nadd.u32 %r1, %r1, 1;\nret;")
    assert all(u != 1 for u, _, _ in e[1])
    assert {(0, RAW, "%r1"), (0, WAW, "%r1")} <= e[1]


def test_the_carry_flag_chains_add_cc_to_addc():
    e = _edges("add.cc.u32 %r1, %r2, %r3;\nmov.u32 %r9, 7;\naddc.u32 %r4, %r5, %r6;\n"
               "add.cc.u32 %r7, %r2, %r3;\nret;")
    assert (0, RAW, CARRY_FLAG) in e[2]  # addc reads the carry add.cc wrote
    assert not any(r == CARRY_FLAG for _, _, r in e[1])
    assert (2, WAR, CARRY_FLAG) in e[3] and (0, WAW, CARRY_FLAG) in e[3]  # the next add.cc waits for it


def test_a_guard_is_a_use():
    e = _edges("setp.eq.u32 %p1, %r1, 0;\n@%p1 mov.u32 %r2, 1;\nsetp.eq.u32 %p1, %r1, 1;\nret;")
    assert (0, RAW, "%p1") in e[1] and (1, WAR, "%p1") in e[2]


def test_step_nodes_is_step_without_the_kinds_on_corpus_blocks():
    """The DepGraph walks with step_nodes, the DAG with step: the same
    predecessors in the same order of first occurrence, block by block (a sample of the corpus,
    guarded definitions and the carry flag included)."""
    from ptxopt.analysis.cfg import build_cfg
    from ptxopt.kernels.corpus import load_manifest

    blocks = 0
    for k in load_manifest()[::16]:
        for fn in parse(k.ptx_text()).functions:
            if fn.body is None:
                continue
            cfg = build_cfg(fn)
            for b in cfg.blocks:
                full, ids = RegisterWalk(), RegisterWalk()
                for i, iid in enumerate(b.iids):
                    defs, uses = cfg.du[iid]
                    guarded = cfg.instructions[iid].guard is not None
                    out: list[int] = []
                    ids.step_nodes(i, defs, uses, guarded, out)
                    assert list(dict.fromkeys(out)) == list(dict.fromkeys(u for u, _, _ in full.step(i, defs, uses,
                                                                                              guarded)))
                blocks += 1
    assert blocks > 50
