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


def test_clear_front_end_empties_every_identity_memo():
    from ptxopt import emit, parse
    from ptxopt.search.memos import clear_front_end

    mine = IdentityMemo()
    ins = Instruction("mov", (), (Reg("%r1"),))
    mine.get(ins, lambda i: "x")
    emit(parse(".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"))
    import sys

    printed = sys.modules["ptxopt.ptx.emit"]._TEXT
    assert len(mine) == 1 and len(printed) > 0
    clear_front_end()
    assert len(mine) == 0 and len(printed) == 0
