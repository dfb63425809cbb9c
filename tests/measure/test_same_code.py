"""Two cubins with the same machine code (the Triton hook's estimate
is skipped for them, to save an nvdisasm run): what counts as "the same", the EIATTR fact it uses, and
optimize() running no nvdisasm for such a result."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ptxopt
from ptxopt.measure.same_code import same_code
from ptxopt.toolchain import compile_ptx, disassemble, find_nvdisasm
from ptxopt.toolchain.process import run_tool

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
RELU = (CORPUS / "triton/relu_scale.ptx").read_text()
SOFTMAX = (CORPUS / "triton/softmax_row.ptx").read_text()
assert ".reqntid 64\n" in RELU and "\tret;" in RELU


def _cubin(ptx: str) -> bytes:
    # Triton's ptxas flags: line tables name PTX lines, so any change to the text changes the file
    return compile_ptx(ptx, "sm_89", extra_args=["-lineinfo"], memo=False).cubin


def _lineinfo_compile(ptx, arch):
    return compile_ptx(ptx, arch, extra_args=["-lineinfo"], memo=False)


BUDGET = RELU.replace(".reqntid 64\n", ".reqntid 64\n.maxnreg 128\n", 1)


def test_a_register_budget_above_the_kernels_use_is_the_same_code():
    a, b = _cubin(RELU), _cubin(BUDGET)
    assert a != b  # the files differ: debug line tables, the PTX copy, the MAXREG_COUNT attribute
    assert same_code(a, b) and same_code(b, a)
    # what the estimate would read is indeed the same: nvdisasm's listings agree
    la, lb = disassemble(a), disassemble(b)
    assert (la.instructions, la.labels, la.arch) == (lb.instructions, lb.labels, lb.arch)


@pytest.mark.parametrize("change", [
    ("\tret;", "\tmembar.gl;\n\tret;"),  # another instruction
    (".reqntid 64\n", ".reqntid 32\n"),  # another launch attribute (REQNTID), same instructions
])
def test_other_code_or_attributes_are_not(change):
    a, b = _cubin(RELU), _cubin(RELU.replace(*change, 1))
    assert not same_code(a, b)


def test_what_is_not_a_cubin_is_not_the_same():
    a = _cubin(RELU)
    assert not same_code(a, b"not an ELF file")
    assert not same_code(a, a[: len(a) // 2])  # truncated: its section table is gone
    assert same_code(a, a)


def test_maxreg_count_is_what_nvdisasm_calls_it():
    """The one .nv.info fact same_code uses (NVINFO_MAXREG_COUNT), checked
    against nvdisasm's own names for the section's attributes."""
    import tempfile

    from ptxopt.measure.disasm import NVINFO_MAXREG_COUNT

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "k.cubin").write_bytes(_cubin(BUDGET))
        out = run_tool([find_nvdisasm().path, "k.cubin"], timeout=60, cwd=tmp).output
    attrs = re.findall(r"nvinfo : (EIATTR_\w+)\s*\n\s*\.align\s+\d+\s*\n(?:\.L_\w+:\s*\n)?\s*/\*\w+\*/\s*"
                       r"\.byte\s+0x[0-9a-f]+, (0x[0-9a-f]+)", out)
    assert ("EIATTR_MAXREG_COUNT", f"0x{NVINFO_MAXREG_COUNT:02x}") in attrs
    assert len({code for name, code in attrs if name == "EIATTR_MAXREG_COUNT"}) == 1


def test_optimize_runs_no_nvdisasm_for_a_result_with_the_inputs_code(monkeypatch):
    """With the caller's ptxas (the Triton hook), a rewrite whose cubin holds
    the input's code is used without an estimate; one whose code differs is
    still estimated (nvdisasm must not run for the one that is the same)."""
    from ptxopt.measure import disasm
    from ptxopt.api import ACCEPTED
    from ptxopt.evaluate.stages import SAME_CODE
    from ptxopt.measure.sim import clear_memo

    clear_memo()
    runs = []
    real = disasm.disassemble_many
    monkeypatch.setattr(disasm, "disassemble_many", lambda cubins, **kw: runs.append(len(cubins)) or real(cubins, **kw))
    res = ptxopt.optimize(RELU, "maxnreg_128", compile=_lineinfo_compile)
    assert res.changed and ".maxnreg 128" in res.ptx and res.verdict in ACCEPTED
    assert runs == [] and res.estimate.note == SAME_CODE and not res.estimate.slower
    assert (res.estimate.before, res.estimate.after) == (None, None) and "estimate_wait" not in res.seconds
    res = ptxopt.optimize(SOFTMAX, "vec_ld,vec_st,reorder_cp,maxnreg_128", compile=_lineinfo_compile,
                          min_improvement=0)  # the estimate's path is checked here, not the gain
    assert res.changed and runs == [2] and res.estimate.before and res.estimate.after
