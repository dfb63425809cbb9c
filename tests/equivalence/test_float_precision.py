"""Float precision is part of what a kernel computes, and every read-only
load form is an assumption.

A plugin pass that turns ``rcp.rn.f32`` into ``rcp.approx.f32`` in a softmax
row was ``equal (6 launches)`` under ``ptxopt run --verify-each`` and applied
by ``ptxopt.optimize``: the interpreter computed ``rcp.approx`` as the
correctly rounded ``1/x``. Now approximate forms carry a modelled error keyed
by the form and the inputs (:func:`ptxopt.interp.fp.model_error`) and a change
of a float instruction's precision form is capped
(:func:`ptxopt.equivalence.assumptions.precision_change`). And ``ld.global`` ->
``ldu.global`` after a store that may alias was ``proved``: every read-only
load form is one row of :data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`. Each test here
fails on the code before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from cli_helpers import run_cli as run

from ptxopt.ptx import opcodes
from ptxopt import parse
from ptxopt.equivalence.assumptions import CHANGES_PRECISION, INEXACT, precision_change, unproven_nc_loads
from ptxopt.equivalence.interpret import Geometry, verify
from ptxopt.equivalence.prove import prove
from ptxopt.equivalence.verdict import TRUSTED, Verdict
from ptxopt.interp import fp
from ptxopt.ptx.ir import Instruction, instruction_slots
from ptxopt.passes import FunctionPass, register, unregister

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "corpus" / "cuda" / "softmax_row.ptx"


@dataclass(frozen=True)
class FastRcp(FunctionPass):
    """The user's plugin: ``rcp.rn.f32`` -> ``rcp.approx.f32`` (a precision change)."""

    kind: ClassVar[str] = "fast_rcp"
    family: ClassVar[str] = "test"

    def run_function(self, fn, report, module) -> None:
        for items, i, ins in instruction_slots(fn.body):
            if ins.opcode == "rcp" and "rn" in ins.modifiers:
                mods = tuple("approx" if m == "rn" else m for m in ins.modifiers)
                items[i] = Instruction("rcp", mods, ins.operands, guard=ins.guard, guard_neg=ins.guard_neg,
                                       line=ins.line)
                report.change(fn.name, ins.line, "rcp.rn -> rcp.approx")


@pytest.fixture
def fast_rcp():
    register(FastRcp)
    yield
    unregister("fast_rcp")


@pytest.mark.slow
def test_run_verify_each_refuses_a_precision_change_in_softmax(fast_rcp):
    """The user's report: ``ptxopt run -p fast_rcp --verify-each`` on a softmax row
    said ``equal (6 launches)`` and exit 0."""
    r = run("run", "-p", "fast_rcp", "--verify-each", SOFTMAX)
    assert r.exit_code != 0, r.stderr
    assert "rcp.approx.f32" in r.stderr and ("precision" in r.stderr or "approximate" in r.stderr), r.stderr
    assert "equal (" not in r.stderr


@pytest.mark.slow
def test_optimize_does_not_apply_a_precision_change(fast_rcp):
    from ptxopt.api import optimize

    res = optimize(SOFTMAX.read_text(), "fast_rcp", estimate=False)
    assert "rcp.approx" not in res.ptx and "rcp.rn.f32" in res.ptx
    assert res.verdict not in TRUSTED


def test_run_verify_each_refuses_a_precision_change(fast_rcp, tmp_path):
    """The same plugin on a one-warp normalisation: not verified (exit 4, as any
    check that cannot decide), the reason names the op."""
    src = tmp_path / "k.ptx"
    src.write_text(KERNEL.replace("OP", "rcp.rn.f32 %f2, %f1;"))
    r = run("run", "-p", "fast_rcp", "--verify-each", "--grid", "1", "--block", "32", src)
    assert r.exit_code == 4, r.stderr
    assert "inconclusive: after 'fast_rcp'" in r.stderr and "rcp.approx.f32" in r.stderr, r.stderr
    assert "approximate float results" in r.stderr and "verified:" not in r.stderr


def test_the_interpreter_models_approximate_bits():
    """The same approximate form on the same inputs agrees with itself, differs
    from the correctly rounded form on some inputs, and the stand-in is exact."""
    x = np.random.default_rng(0).uniform(0.5, 100, 256).astype(np.float32)
    key = fp.form_key(("rcp", ("f32",), ("approx",)))
    a, b = fp.approx_f32("rcp", x, key=key), fp.approx_f32("rcp", x, key=key)
    rn = fp.div_f32(np.ones(1, np.float32), x)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    ulps = np.abs(a.view(np.int32).astype(np.int64) - rn.view(np.int32))
    assert ulps.max() == 1 and 0 < (ulps == 1).mean() < 1  # within the stated 1 ulp, not always 0
    other = fp.approx_f32("rcp", x, key=fp.form_key(("rcp", ("f32",), ("approx", "ftz"))))
    assert not np.array_equal(a, other)  # another form: another unknown function
    with fp.exact_approximations():
        assert np.array_equal(fp.approx_f32("rcp", x, key=key), rn)


KERNEL = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out, .param .u64 in)
{
	.reg .f32 %f<8>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [in];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd4, %rd5;
	add.s64 %rd7, %rd3, %rd5;
	ld.global.f32 %f1, [%rd6];
	OP
	st.global.f32 [%rd7], %f2;
	ret;
}
"""
GEO = Geometry(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("before, after", [
    ("rcp.rn.f32 %f2, %f1;", "rcp.approx.f32 %f2, %f1;"),
    ("rcp.approx.f32 %f2, %f1;", "rcp.approx.ftz.f32 %f2, %f1;"),
    ("div.rn.f32 %f2, %f1, 0f40400000;", "div.full.f32 %f2, %f1, 0f40400000;"),
    ("sqrt.rn.f32 %f2, %f1;", "sqrt.approx.f32 %f2, %f1;"),
    ("add.rn.f32 %f2, %f1, 0f3f800000;", "add.f32 %f2, %f1, 0f3f800000;"),  # ptxas may contract it
    ("add.f32 %f2, %f1, 0f3f800000;", "add.ftz.f32 %f2, %f1, 0f3f800000;"),
])
def test_a_precision_change_is_never_trusted(before, after):
    a, b = KERNEL.replace("OP", before), KERNEL.replace("OP", after)
    assert precision_change(parse(a), parse(b)) is not None
    res = verify(a, b, "k", geometry=GEO)
    assert res.status in ("inconclusive", "mismatch"), (res.status, res.error)  # a flush the edge inputs show
    if res.status == "inconclusive":
        assert res.error.startswith((CHANGES_PRECISION, INEXACT)) and after.split()[0] in res.error
    assert verify(a, b, "k", geometry=GEO, trials=1).status != "equal"  # random inputs alone: no subnormals
    assert prove(a, b, entry="k").verdict != Verdict.PROVED


def test_the_same_approximate_form_stays_comparable():
    """An original that uses ``rcp.approx`` and a candidate that keeps it (here:
    moved past an unrelated instruction) are still ``equal``; a candidate that
    feeds it other inputs whose exact results coincide is not."""
    op = "rcp.approx.f32 %f2, %f1;"
    a = KERNEL.replace("OP", op)
    b = KERNEL.replace("\tld.global.f32 %f1, [%rd6];\n\tOP", "\tld.global.f32 %f1, [%rd6];\n\tmov.f32 %f5, 0f3f800000;\n\t"
                       + op)
    assert precision_change(parse(a), parse(b)) is None
    assert verify(a, b, "k", geometry=GEO).status == "equal"
    # 1/x vs 2 * (1/(2x)): equal with a correctly rounded rcp, not known on hardware
    c = KERNEL.replace("OP", "mul.rn.f32 %f3, %f1, 0f40000000;\n\trcp.approx.f32 %f4, %f3;\n\t"
                             "mul.rn.f32 %f2, %f4, 0f40000000;")
    with fp.exact_approximations():
        from ptxopt.equivalence.interpret import _verify_uncapped

        assert _verify_uncapped(a, c, "k", geometry=GEO).status == "equal"  # the old stand-in: fooled
    res = verify(a, c, "k", geometry=GEO)
    assert res.status == "inconclusive" and res.error.startswith(INEXACT) and "rcp.approx.f32" in res.error


def test_an_exact_difference_stays_a_mismatch():
    """Rounding modes are documented bit for bit: a changed one that the launches
    show is a ``mismatch`` (the precision cap applies to ``equal`` only)."""
    a = KERNEL.replace("OP", "div.rn.f32 %f2, %f1, 0f40400000;")
    b = KERNEL.replace("OP", "div.rz.f32 %f2, %f1, 0f40400000;")
    assert verify(a, b, "k", geometry=GEO).status == "mismatch"


# -- read-only loads ------------------------------------------------------------------------------------------

LDU = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out, .param .u64 in)
{
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [in];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	ld.global.f32 %f1, [%rd4+4];
	st.global.f32 [%rd3], %f1;
	ld.global.f32 %f2, [%rd4];
	st.global.f32 [%rd3+8], %f2;
	ret;
}
"""


@pytest.mark.parametrize("form", ["ldu.global.f32", "ld.global.nc.f32", "ld.global.nc.ca.f32",
                                  "ld.global.nc.L1::evict_last.f32", "ldu.global.v2.f32"])
def test_every_read_only_load_form_after_an_aliasing_store_is_capped(form):
    """``out`` may alias ``in``: the store may reach the load's bytes."""
    a = LDU
    if "v2" in form:
        a = a.replace("\tld.global.f32 %f2, [%rd4];\n", "\tld.global.v2.f32 {%f2, %f3}, [%rd4];\n")
        b = a.replace("ld.global.v2.f32 {%f2", f"{form} {{%f2")
    else:
        b = a.replace("ld.global.f32 %f2", f"{form} %f2")
    assert opcodes.is_read_only_load(next(i for i in parse(b).entries[0].instructions()
                                          if i.full_opcode.startswith(form.split(".")[0]) and "%f2" in str(i)))
    assert unproven_nc_loads(parse(a), parse(b)) is not None
    assert prove(a, b, entry="k").verdict != Verdict.PROVED
    assert prove(a, b, entry="k", cap=False).verdict != Verdict.PROVED  # the SMT's read-only memory too
    res = verify(a, b, "k", geometry=Geometry(block=(1, 1, 1)))
    assert res.status != "equal"


def test_the_read_only_load_table():
    def form(text: str) -> bool:
        op, *mods = text.split(".")
        return opcodes.is_read_only_load(Instruction(op, tuple(mods), ()))

    assert [form(f) for f in ("ld.global.nc.f32", "ldu.global.f32", "ld.global.nc.v4.u32", "tex.2d.v4.f32.f32")] \
        == [True] * 4
    assert [form(f) for f in ("ld.global.f32", "ld.global.ca.f32", "ld.shared.f32", "st.global.f32")] == [False] * 4
