"""A small kernel and a pass made to break it the way ptxas notices: the tempting input of the
tests that check who is blamed when ptxas rejects a text (the rewrite, or the input itself)."""

from __future__ import annotations

#: one store, registers of every width declared: every pass prints it, ptxas accepts it
STORE_ONE = """\
.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out)
{
\t.reg .b16 %rs<4>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tcvta.to.global.u64 %rd1, %rd1;
\tst.global.u32 [%rd1], 1;
\tret;
}
"""

#: a vector of a 32- and a 16-bit register (what vec_ld once did to two ld.global.u16): ptxas rejects it,
#: the parser and printer take it
BAD_LOAD = "\tld.global.v2.u16 {%r1, %rs1}, [%rd1];\n"


def with_bad_load(text: str) -> str:
    """``text`` (one entry ending in ``ret``) with :data:`BAD_LOAD` before its ``ret``: an input ptxas rejects."""
    return text.replace("\tret;", BAD_LOAD + "\tret;")


def append_bad_load(module) -> None:
    """:data:`BAD_LOAD` inserted before the first entry's last statement (a pass's doing)."""
    from ptxopt.ptx.ir import Addr, Instruction, Reg, Vec

    body = module.entries[0].body
    bad = Instruction("ld", ("global", "v2", "u16"), (Vec((Reg("%r1"), Reg("%rs1"))), Addr(Reg("%rd1"))))
    body.items.insert(len(body.items) - 1, bad)


def patch_maxnreg(monkeypatch, extra) -> None:
    """``maxnreg_64`` (every ``MaxNReg``) made to also do ``extra(module)`` after its own work."""
    from ptxopt.passes.register_budget import MaxNReg

    real = MaxNReg.run

    def run(self, module):
        rep = real(self, module)
        extra(module)
        return rep

    monkeypatch.setattr(MaxNReg, "run", run)
