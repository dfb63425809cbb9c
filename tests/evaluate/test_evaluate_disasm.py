"""Batched disassembly (ptxopt.measure.disasm) gives what one nvdisasm run per cubin gives."""

from __future__ import annotations

import os
import re

import pytest

from ptxopt.kernels.corpus import get, select
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


def _check(ids, monkeypatch=None):
    compiled = [compile_ptx(get(k).ptx_text(), get(k).arch) for k in ids]
    runs = []
    if monkeypatch is not None:  # count the disassemblies (the locator's --version probe aside)
        from ptxopt.toolchain import find_nvdisasm, process

        find_nvdisasm()
        once = process._run_once
        monkeypatch.setattr(process, "_run_once", lambda argv, tool, *a: (runs.append(tool), once(argv, tool, *a))[1])
    batched = disassemble_many([c.cubin for c in compiled])
    if monkeypatch is not None:
        # one run per ELF layout (ptxas 12.9 and 13.x cubins differ in their header flags), never
        # a silent fallback to one run per cubin (Triton cubins must merge too)
        assert runs.count("nvdisasm") == len({c.cubin[48:52] for c in compiled}), runs
    for k, c, b in zip(ids, compiled, batched):
        assert not isinstance(b, Exception), (k, b)
        alone = disassemble(c.cubin)
        assert b.arch == alone.arch and b.warnings == alone.warnings
        assert _fields(b) == _fields(alone), k
        assert b.text(control=True) == alone.text(control=True), k  # labels normalised
        assert simulate(b, c).cycles == simulate(alone, c).cycles, k


def test_batched_listing_equals_single_runs(monkeypatch):
    _check(KERNELS, monkeypatch)


def test_a_pair_of_triton_kernels_in_one_run(monkeypatch):
    """The Triton hook's estimate disassembles two cubins: each function's
    .nv.info names its parameter bank's symbol by index, which must survive the merge."""
    _check(["triton_softmax_row", "triton_bias_gelu"], monkeypatch)


def test_unreadable_cubin_fails_alone():
    good = compile_ptx(get("gemm_tile_2x2x2").ptx_text()).cubin
    out = disassemble_many([good, b"not an ELF file", good])
    assert isinstance(out[1], NvdisasmError)
    assert out[0].instructions == out[2].instructions == disassemble(good).instructions


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PTXOPT_FULL_CORPUS"), reason="30 s; set PTXOPT_FULL_CORPUS=1")
def test_batched_listing_equals_single_runs_whole_corpus():
    _check([k.id for k in select("all")])
