"""IdentityMemo answers for the very object it was asked about, never for an
equal one, and never for a new object that reuses a dead one's id."""

from ptxopt.ptx.identity_memo import IdentityMemo
from ptxopt.ptx.ir import Instruction, Reg


def test_remembers_by_identity_not_equality():
    memo = IdentityMemo()
    calls = []

    def text(ins):
        calls.append(ins)
        return f"{ins.opcode}#{len(calls)}"

    a = Instruction("add", ("s32",), (Reg("%r1"), Reg("%r2"), Reg("%r3")))
    b = Instruction("add", ("s32",), (Reg("%r1"), Reg("%r2"), Reg("%r3")))
    assert a == b and a is not b
    assert memo.get(a, text) == "add#1" and memo.get(a, text) == "add#1"
    assert memo.get(b, text) == "add#2"  # equal, but another object: asked again
    assert len(calls) == 2


def test_entries_keep_their_objects_alive_and_a_full_memo_starts_afresh():
    memo = IdentityMemo(max_entries=3)
    for i in range(3):
        memo.get(Instruction("mov", (), (Reg(f"%r{i}"),)), lambda ins: ins.operands[0].name)
    assert len(memo) == 3  # the temporaries live on inside the memo, so no id can repeat
    memo.get(Instruction("mov", (), (Reg("%r9"),)), lambda ins: ins.operands[0].name)
    assert len(memo) == 1
    memo.clear()
    assert len(memo) == 0


def test_a_cold_session_empties_every_identity_memo():
    from ptxopt import emit, parse
    from ptxopt.evaluate import EvaluationSession

    mine = IdentityMemo()
    ins = Instruction("mov", (), (Reg("%r1"),))
    mine.get(ins, lambda i: "x")
    emit(parse(".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"))
    import sys

    printed = sys.modules["ptxopt.ptx.emit"]._TEXT
    assert len(mine) == 1 and len(printed) > 0
    EvaluationSession.cold()
    assert len(mine) == 0 and len(printed) == 0


def test_a_cold_session_empties_every_registered_memo():
    """The memos a cold start forgets: each front-end memo, filled by a real
    parse, analysis and pass, is empty afterwards."""
    from ptxopt.analysis.manager import default_manager
    from ptxopt.passes.cache_hints import set_cache_op
    from ptxopt.passes.readonly_path import is_nc_candidate, nc_form
    from ptxopt.ptx.parser import parse
    from ptxopt.evaluate import EvaluationSession
    from ptxopt.support.bounded_memo import registered

    m = parse(".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
              "\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<2>;\n\tld.param.u64 %rd1, [p];\n"
              "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.f32 %f1, [%rd2];\n\tst.global.f32 [%rd2], %f1;\n"
              "\tret;\n}\n")
    fn = m.functions[0]
    am = default_manager()
    cfg = am.cfg(fn)
    am.dag(cfg.instructions)
    am.depgraph(cfg.instructions)
    loads = [i for i in cfg.instructions if is_nc_candidate(i)]
    nc_form(loads[0])
    set_cache_op(loads[0], "cg", ("ca", "cg", "cs", "lu", "cv"))
    from ptxopt.analysis.rough_latency import latencies
    latencies(cfg.instructions)

    def size(memo):
        info = getattr(memo, "cache_info", None)
        return info().currsize if info else len(memo)

    memos = registered("front_end")
    assert {"analysis.manager", "ptx.operand_facts._FORMS",
            "analysis.rough_latency._BY_FORM", "passes.cache_hints._with_cache_op",
            "passes.readonly_path._nc_modifiers"} <= set(memos)
    filled = {n for n, memo in memos.items() if size(memo)}
    assert {"analysis.manager", "passes.readonly_path._nc_modifiers"} <= filled
    EvaluationSession.cold()
    assert {n: size(memo) for n, memo in memos.items() if size(memo)} == {}
