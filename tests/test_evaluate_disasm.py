"""Batched disassembly (ptxopt.measure.disasm) gives what one nvdisasm run per cubin gives."""

from __future__ import annotations

import os
import re

import pytest

from ptxopt.corpus import get, select
from ptxopt.measure.disasm import disassemble_many
from ptxopt.sim import simulate
from ptxopt.toolchain import NvdisasmError, compile_ptx, disassemble

# spills (SpillRefill annotations), label holes, an internal subroutine symbol,
# loops, both ELF layouts (ptxas 12.9 for .version 8.8, 13.x for Triton's 9.x)
KERNELS = ["gemm_tile_2x2x2", "gemm_tile_14x14x14", "cuda_matmul_tiled_smem", "cuda_attention_small",
           "cuda_softmax_row", "cuda_layernorm_row", "triton_softmax_row", "triton_matmul_f16"]
_LABEL = re.compile(r"\.L_x_\d+")


def _fields(listing):
    return [(i.function, i.offset, i.guard, i.opcode, _LABEL.sub(".L", i.operands), i.low, i.high, i.symbol)
            for i in listing.instructions]


def _check(ids):
    compiled = [compile_ptx(get(k).ptx_text(), get(k).arch) for k in ids]
    batched = disassemble_many([c.cubin for c in compiled])
    for k, c, b in zip(ids, compiled, batched):
        assert not isinstance(b, Exception), (k, b)
        alone = disassemble(c.cubin)
        assert b.arch == alone.arch and b.warnings == alone.warnings
        assert _fields(b) == _fields(alone), k
        assert b.text(control=True) == alone.text(control=True), k  # labels normalised
        assert simulate(b, c).cycles == simulate(alone, c).cycles, k


def test_batched_listing_equals_single_runs():
    _check(KERNELS)


def test_unreadable_cubin_fails_alone():
    good = compile_ptx(get("gemm_tile_2x2x2").ptx_text()).cubin
    out = disassemble_many([good, b"not an ELF file", good])
    assert isinstance(out[1], NvdisasmError)
    assert out[0].instructions == out[2].instructions == disassemble(good).instructions


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PTXOPT_FULL_CORPUS"), reason="30 s; set PTXOPT_FULL_CORPUS=1")
def test_batched_listing_equals_single_runs_whole_corpus():
    _check([k.id for k in select("all")])
