"""The interpreter covers the corpus: every opcode+modifier combination that
occurs in it decodes to an implemented step, and every kernel runs through
its manifest geometry on every input flavour, deterministically.

A new corpus kernel that needs something the interpreter lacks fails here
with the instruction named, instead of failing later inside a verification.
"""

from __future__ import annotations

import glob
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from ptxopt.kernels.corpus import corpus_root, load_manifest
from ptxopt.interp import Program, launch_from_manifest
from ptxopt.interp.decode import SIMPLE
from ptxopt.interp.workload import FLAVOURS
from ptxopt.ptx.parser import parse_bytes

from corpus_tiers import fast_kernels, full_corpus

KERNELS = load_manifest()
NON_GEMM = [k for k in KERNELS if k.family != "gemm_tile"]
GEMM = [k for k in KERNELS if k.family == "gemm_tile"]


def _corpus_files():
    """Every PTX file of the corpus, less the generated families' files outside
    the fast slice (all of them with PTXOPT_FULL_CORPUS=1)."""
    root = corpus_root()
    skip = set() if full_corpus() else {k.ptx_path for k in KERNELS if k not in fast_kernels(KERNELS)}
    return sorted(p for p in (Path(x) for x in glob.glob(str(root / "**" / "*.ptx"), recursive=True))
                  if p not in skip)


def test_every_corpus_opcode_combination_is_implemented():
    seen: dict[str, str] = {}
    missing: dict[str, list[str]] = defaultdict(list)
    for path in _corpus_files():
        module = parse_bytes(path.read_bytes(), str(path))
        program = Program(module)
        for fn in module.functions:
            if fn.body is None:
                continue
            for step in program.decoded(fn.name).code:
                if step.ins.line == 0:
                    continue  # the implicit ret at the end of a body
                seen.setdefault(step.ins.full_opcode, path.name)
                if step.kind == SIMPLE and isinstance(step.aux, str):
                    missing[step.ins.full_opcode].append(f"{path.name}: {step.aux}")
    assert len(seen) > 100  # the corpus really was enumerated
    assert not missing, "unimplemented in the corpus:\n" + "\n".join(v[0] for v in missing.values())


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("spec", NON_GEMM, ids=lambda k: k.id)
def test_corpus_kernel_runs(spec, flavour):
    ins, outs = launch_from_manifest(spec, seed=3, flavour=flavour)
    assert outs, "no output buffers"


@pytest.mark.parametrize("spec", GEMM[::5] + [k for k in GEMM if k.id == "gemm_tile_16x16x16"],
                         ids=lambda k: k.id)
def test_gemm_tiles_run_on_edge_inputs(spec):
    launch_from_manifest(spec, seed=1, flavour="edge")


@pytest.mark.parametrize("kid", ["cuda_histogram_atomic", "cuda_reduce_sum_warp_shuffle",
                                 "triton_matmul_f16", "triton_attention", "cuda_dropout_hash"])
def test_runs_are_deterministic(kid):
    spec = next(k for k in KERNELS if k.id == kid)
    a = launch_from_manifest(spec, seed=5, flavour="edge")[1]
    b = launch_from_manifest(spec, seed=5, flavour="edge")[1]
    for name in a:
        assert np.array_equal(a[name].view(np.uint8), b[name].view(np.uint8)), name


def test_inputs_honour_ranges_and_roles():
    from ptxopt.interp import make_args

    spec = next(k for k in KERNELS if k.id == "cuda_cross_entropy")
    for fl in FLAVOURS:
        args = make_args(spec, 0, fl)
        labels = args[[p.arg for p in spec.params].index("labels")]
        assert labels.min() >= 0 and labels.max() < 100
    spec = next(k for k in KERNELS if k.id == "triton_vector_add")
    args = make_args(spec, 0, "random")
    assert args[-1] is None and args[-2] is None  # nullable zero-byte scratch pointers
    spec = next(k for k in KERNELS if k.id == "cuda_histogram_atomic")
    assert not make_args(spec, 0, "edge")[1].any()  # init: zero
    edge = make_args(next(k for k in KERNELS if k.id == "cuda_relu"), 0, "edge")[0]
    assert np.isnan(edge).any() and np.isinf(edge).any() and (edge == 0).any()
    assert ((np.abs(edge) < np.finfo(np.float32).tiny) & (edge != 0)).any()  # subnormals


@pytest.mark.parametrize("spec", NON_GEMM, ids=lambda k: k.id)
def test_results_do_not_depend_on_the_schedule(spec):
    """Every corpus kernel is race-free: lockstep and both warp-serial
    schedules give identical buffers (and the scheduler gets there without
    deadlock)."""
    from ptxopt.interp import make_args, run_kernel
    from ptxopt.ptx.parser import parse

    program = Program(parse(spec.ptx_text()))
    outs = []
    for schedule in ("lockstep", "warps", "warps-reversed"):
        res = run_kernel(program, spec.entry, spec.launch.grid, spec.launch.block, make_args(spec, 2),
                         spec.launch.shared_bytes, seed=2, schedule=schedule)
        outs.append(res.buffers)
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            if a is not None:
                assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
