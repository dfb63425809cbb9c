"""``prints_same`` (:mod:`ptxopt.ptx.print_compare`): whatever it decides is what
comparing the printed texts decides, on real pass outputs and on the cases it
must leave undecided; the action mask built on it is the mask built by printing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.ir import Block, Comment, Instruction, Label, Reg
from ptxopt.ptx.parser import parse
from ptxopt.passes import pass_names
from ptxopt.passes.base import IllegalPass
from ptxopt.passes.pipeline import make_pass
from ptxopt.ptx.print_compare import prints_same

#: a tile kernel, a CUDA kernel with nested call scopes and comments, a Triton kernel with .loc lines
KERNELS = ["gemm_tile_2x2x4", "cuda_softmax_row", "triton_layernorm_row"]


def _truth(a, b) -> bool:
    return emit(a) == emit(b)


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_pass_output_is_decided_as_printing_decides(kernel):
    m = parse(get(kernel).ptx_text())
    bases = [m, make_pass("cache_cg").apply(m)[0]]
    decided = {True: 0, False: 0}
    for base in bases:
        for name in pass_names():
            try:
                out = make_pass(name).apply(base)[0]
            except IllegalPass:
                continue
            verdict = prints_same(base, out)
            assert verdict is None or verdict == _truth(base, out), name
            if verdict is not None:
                decided[verdict] += 1
    # not vacuous: both answers are given, from the statements alone
    assert decided[True] and decided[False]


def _module(text_body: str):
    return parse(".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n" + text_body + "\n}\n")


BODY = ".reg .b32 %r<4>;\n\tmov.u32 %r1, 1; // one\n\tadd.u32 %r2, %r1, 1;\n$L:\n\tret;"


def _items(m):
    return m.functions[0].body.items


def test_copies_and_equal_rebuilt_statements_print_the_same():
    m = _module(BODY)
    c = m.copy()
    assert prints_same(m, c) is True
    items = _items(c)
    k = next(i for i, s in enumerate(items) if type(s) is Instruction and s.opcode == "add")
    items[k] = replace(items[k])  # a new object, the same line
    assert items[k] is not _items(m)[k]
    assert prints_same(m, c) is True and _truth(m, c)


def test_a_changed_line_differs():
    m = _module(BODY)
    c = m.copy()
    items = _items(c)
    k = next(i for i, s in enumerate(items) if type(s) is Instruction and s.opcode == "add")
    items[k] = replace(items[k], operands=(Reg("%r3"),) + items[k].operands[1:])
    assert prints_same(m, c) is False and not _truth(m, c)


def test_a_change_before_a_trailing_comment_is_left_to_printing():
    # the comment joins the changed line: the walk does not decide, printing does
    m = _module(BODY)
    c = m.copy()
    items = _items(c)
    k = next(i for i, s in enumerate(items) if type(s) is Instruction and s.opcode == "mov")
    assert type(items[k + 1]) is Comment and items[k + 1].trailing
    items[k] = replace(items[k], modifiers=("u16",))
    assert prints_same(m, c) is None


def test_statements_added_at_the_end_are_left_to_printing():
    m = _module(BODY)
    c = m.copy()
    _items(c).append(Label("$extra"))
    assert prints_same(m, c) is None and not _truth(m, c)


def test_a_new_directive_differs_from_the_body_start():
    m = parse(get("gemm_tile_2x2x4").ptx_text())
    out = make_pass("maxnreg_64").apply(m)[0]
    assert prints_same(m, out) is False and not _truth(m, out)


def test_nested_scopes_are_walked():
    m = _module("{\n\t.reg .b32 %q;\n\tmov.u32 %q, 2;\n}\n\tret;")
    c = m.copy()
    inner = next(s for s in _items(c) if type(s) is Block)
    assert prints_same(m, c) is True
    k = next(i for i, s in enumerate(inner.items) if type(s) is Instruction)
    inner.items[k] = replace(inner.items[k], modifiers=("u16",))
    assert prints_same(m, c) is False and not _truth(m, c)
