"""Undeclared registers (``ptxopt.ptx.declared``): the check agrees with ptxas
on each scoping case, and the prover never proves a module that names one."""

from __future__ import annotations

import pytest

from ptxopt.ptx.declared import undeclared_register
from ptxopt.ptx.parser import parse
from ptxopt.toolchain import PtxasError, compile_ptx

_HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"
_DECLS = ".reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"


def _kernel(body: str, decls: str = _DECLS) -> str:
    return (_HEAD + ".visible .entry t(.param .u64 p)\n{\n" + decls + "ld.param.u64 %rd1, [p];\n" + body
            + "ret;\n}\n")


#: name -> (kernel, the register the check names, or None where ptxas accepts it)
CASES = {
    "declared": (_kernel("mov.u32 %r1, 1;\nst.global.u32 [%rd1], %r1;\n"), None),
    "one past the count": (_kernel("mov.u32 %r4, 1;\nst.global.u32 [%rd1], %r4;\n"), "%r4"),
    "used above its declaration": (_kernel("mov.u32 %r9, 1;\n.reg .b32 %r9;\nst.global.u32 [%rd1], %r9;\n"), "%r9"),
    "an inner block's register used after it": (
        _kernel("{\n.reg .b32 %q;\nmov.u32 %q, 1;\n}\nst.global.u32 [%rd1], %q;\n"), "%q"),
    "an outer register used in an inner block": (_kernel("{\nmov.u32 %r1, 1;\nst.global.u32 [%rd1], %r1;\n}\n"), None),
    "a vector register's component": (
        _kernel("mov.u32 %r1, %vv.x;\nst.global.u32 [%rd1], %r1;\n", _DECLS + ".reg .v2 .b32 %vv;\n"), None),
    "a special register and the sink": (
        _kernel("mov.u32 %r1, %tid.x;\natom.global.add.u32 _, [%rd1], %r1;\n"), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_check_names_what_ptxas_rejects(name):
    text, expected = CASES[name]
    module = parse(text)
    hit = undeclared_register(module.functions[0], module)
    assert (hit[0] if hit else None) == expected
    if expected is None:
        compile_ptx(text, "sm_89")
    else:
        with pytest.raises(PtxasError):
            compile_ptx(text, "sm_89")


def test_a_func_register_parameter_is_declared():
    text = _HEAD + (".func (.reg .b32 %out) f(.reg .b32 %in)\n{\nadd.u32 %out, %in, 1;\nret;\n}\n")
    module = parse(text)
    assert undeclared_register(module.functions[0], module) is None
    compile_ptx(text, "sm_89")


@pytest.mark.parametrize("which", ["candidate", "original"])
def test_the_prover_never_proves_a_module_with_an_undeclared_register(which):
    """The candidate writes a dead ``%r4`` (``%r<4>`` declares %r0..%r3): the
    same computation otherwise, so a prover that took %r4 for one more
    register proves the pair (the code before this check did); ptxas rejects it."""
    from ptxopt.equivalence.prove import clear_memo, prove

    good = _kernel("mov.u32 %r1, 1;\nst.global.u32 [%rd1], %r1;\n")
    bad = _kernel("mov.u32 %r4, 7;\nmov.u32 %r1, 1;\nst.global.u32 [%rd1], %r1;\n")
    with pytest.raises(PtxasError):
        compile_ptx(bad, "sm_89")
    clear_memo()
    r = prove(good, bad) if which == "candidate" else prove(bad, good)
    assert str(r.verdict) == "inconclusive", r.reason
    assert r.reason.startswith(f"not valid PTX: the {which}'s t uses register %r4"), r.reason
    clear_memo()
    assert str(prove(good, good).verdict) == "proved"
