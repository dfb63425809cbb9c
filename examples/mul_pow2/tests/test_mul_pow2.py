"""The example pass's own tests: a golden file and the check that it is exact.

Run from this folder (``pytest tests``) after ``pip install -e .`` -- the
entry point then provides the pass -- or without installing: the fixture
registers it at run time. ptxopt's own suite runs these too
(``tests/test_plugin_passes.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package, when it is not installed

from ptxopt import optimize  # noqa: E402
from ptxopt.cli import cli  # noqa: E402
from ptxopt.ir import Imm, Instruction, Reg  # noqa: E402
from ptxopt.passes import pass_names, register, unregister  # noqa: E402
from ptxopt_mul_pow2 import MulPow2  # noqa: E402


@pytest.fixture
def mul_pow2():
    """The pass by name: from its entry point when installed, else registered here."""
    installed = "mul_pow2" in pass_names()
    if not installed:
        register(MulPow2)
    yield
    if not installed:
        unregister("mul_pow2")


def test_golden(mul_pow2, tmp_path):
    """``ptxopt run -p mul_pow2`` prints exactly the reviewed output."""
    r = CliRunner().invoke(cli, ["run", "-p", "mul_pow2", str(HERE / "scale.ptx")])
    assert r.exit_code == 0, r.output
    assert r.stdout == (HERE / "scale.expected.ptx").read_text()


def test_rewrites_only_powers_of_two(mul_pow2):
    """Two of the three ``mul.lo`` rewrite (by 4 and by 8), the one by 12 stays;
    ``mul.wide`` (a different operation) is never touched."""
    res = optimize((HERE / "scale.ptx").read_text(), "mul_pow2", estimate=False)
    assert res.changed and res.sites_changed == 2
    assert "shl.b32 \t%r3, %r2, 2;" in res.ptx and "shl.b64 \t%rd5, %rd3, 3;" in res.ptx
    assert "mul.lo.s32 \t%r4, %r2, 12;" in res.ptx and "mul.wide.s32 \t%rd3, %r2, 4;" in res.ptx
    assert str(res.verdict) in ("equal", "proved")  # the interpreter ran both and compared every output


@pytest.mark.parametrize("typ, imm, want", [
    ("s32", "1", None),            # 2^0: nothing to gain
    ("s32", "0x10", ("b32", "4")),
    ("u64", "1073741824", ("b64", "30")),
    ("s32", "-8", None),           # negative: not 2^k
    ("s32", "0f41000000", None),   # a float literal
    ("s16", "32768", ("b16", "15")),
    ("u16", "65536", None),        # 2^16 is no 16-bit shift
])
def test_rewrite_table(typ, imm, want):
    ins = Instruction("mul", ("lo", typ), (Reg("%r1"), Reg("%r2"), Imm(imm)), guard="%p1")
    new = MulPow2.rewrite(ins)
    if want is None:
        assert new is None
    else:
        assert (new.opcode, new.modifiers, str(new.operands[2]), new.guard) == ("shl", (want[0],), want[1], "%p1")
