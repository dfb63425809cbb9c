"""The linear-size dependency graph (:mod:`ptxopt.analysis.depgraph`) and
the schedulers over it (:mod:`ptxopt.analysis.schedule`) against the full
DAG of :func:`ptxopt.analysis.dag.build_dag`.

The claim that makes the fast schedulers legal: on every block, "u must
precede v" holds in the DepGraph (paths through join nodes included) exactly
when it holds in the DAG. Checked on corpus kernels, every adversarial
kernel (carry chains, ``.extern .shared`` aliasing, guards, barriers, fences,
atomics, clock reads...), random fuzzer kernels with and without
``.noalias`` parameters, and each reorder pass's output is checked against
the full DAG directly.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ptxopt import parse
from ptxopt.analysis import build_cfg, topological_orders_respect
from ptxopt.analysis.alias import noalias_params, overlapping_symbols, pointer_roots
from ptxopt.analysis.dag import block_dag
from ptxopt.analysis.depgraph import block_depgraph
from ptxopt.analysis.schedule import list_schedule, respects
from ptxopt.kernels.corpus import load_manifest
from ptxopt.passes.pipeline import make_pass
from ptxopt.testing.random_kernels import kernel_from_steps, random_steps

PASSES = ["reorder_cp", "reorder_il", "reorder_lf", "reorder_sl"]
ADVERSARIAL = sorted((Path(__file__).parents[1] / "adversarial").glob("*.ptx"))
SMALL_CORPUS = [k for k in load_manifest() if not k.generated and k.ptx_text().count(";") < 700]


def _noalias(text: str) -> str:
    return text.replace(".param .u64 fuzz_param_", ".param .u64 .ptr .global .noalias fuzz_param_")


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = kernel_from_steps(random_steps(rng, rng.randint(4, 40)))
        out.append(_noalias(t) if i % 3 == 0 else t)
    return out


def _blocks(module):
    """(DAG, DepGraph) of every block of every function, with the same alias facts."""
    for fn in module.functions:
        if fn.body is None:
            continue
        cfg = build_cfg(fn)
        noalias = noalias_params(fn)
        roots = pointer_roots(cfg) if noalias else {}
        overlap = overlapping_symbols(fn, module)
        for b in cfg.blocks:
            yield (block_dag(cfg, b.index, roots=roots, noalias=noalias, overlap=overlap),
                   block_depgraph(cfg, b.index, roots=roots, noalias=noalias, overlap=overlap))


def _dag_closure(dag) -> list[int]:
    n = dag.number_of_nodes()
    anc = [0] * n
    for v in range(n):  # every DAG edge goes from a lower to a higher index
        m = 0
        for u in dag.pred[v]:
            m |= anc[u] | (1 << u)
        anc[v] = m
    return anc


def _same_partial_order(module) -> None:
    for dag, g in _blocks(module):
        assert g.n == dag.number_of_nodes()
        assert g.precedes() == _dag_closure(dag)
        assert all(len(set(p)) == len(p) for p in g.preds)  # each pair once, join nodes included


def _reorders_respect_the_dag(module) -> None:
    """Each reorder pass's new block orders respect the original blocks' full DAGs."""
    before = {}
    for fn in module.functions:
        if fn.body is not None:
            cfg = build_cfg(fn)
            before[fn.name] = (cfg, [dag for dag, _ in _blocks_of(module, fn, cfg)])
    for name in PASSES:
        out, _ = make_pass(name).apply(module)
        for fn in out.functions:
            if fn.body is None:
                continue
            cb, dags = before[fn.name]
            ca = build_cfg(fn)
            for ba, bb, dag in zip(ca.blocks, cb.blocks, dags):
                pos = {id(i): k for k, i in enumerate(bb.instructions)}
                order = [pos.get(id(i), -1) for i in ba.instructions]
                assert topological_orders_respect(dag, order), (name, fn.name, bb.index)


def _blocks_of(module, fn, cfg):
    noalias = noalias_params(fn)
    roots = pointer_roots(cfg) if noalias else {}
    overlap = overlapping_symbols(fn, module)
    for b in cfg.blocks:
        yield block_dag(cfg, b.index, roots=roots, noalias=noalias, overlap=overlap), None


@pytest.mark.parametrize("path", ADVERSARIAL, ids=[p.stem for p in ADVERSARIAL])
def test_adversarial_kernels(path):
    m = parse(path.read_text())
    _same_partial_order(m)
    _reorders_respect_the_dag(m)


def test_random_kernels():
    for text in _random_texts(40, seed=7):
        m = parse(text)
        _same_partial_order(m)
        _reorders_respect_the_dag(m)


@pytest.mark.slow
def test_random_kernels_long():
    for text in _random_texts(400, seed=11):
        m = parse(text)
        _same_partial_order(m)
        _reorders_respect_the_dag(m)


@pytest.mark.parametrize("spec", SMALL_CORPUS[::4], ids=[k.id for k in SMALL_CORPUS[::4]])
def test_corpus_kernels(spec):
    _same_partial_order(parse(spec.ptx_text()))


@pytest.mark.slow
@pytest.mark.parametrize("spec", load_manifest(), ids=[k.id for k in load_manifest()])
def test_corpus_kernels_all(spec):
    m = parse(spec.ptx_text())
    if m and spec.ptx_text().count(";") < 2500:
        _same_partial_order(m)
    _reorders_respect_the_dag(m)


def test_join_nodes_keep_the_graph_linear():
    """The gemm tile's stores each conflict with every load through the
    other pointers: the DAG has a quadratic number of memory edges, the
    DepGraph one join node per group and a linear number of edges, with
    the same partial order."""
    spec = next(k for k in load_manifest() if k.id == "gemm_tile_8x8x8")
    m = parse(spec.ptx_text())
    [(dag, g)] = list(_blocks(m))
    assert g.size > g.n  # join nodes were made
    assert g.number_of_edges() * 3 < dag.number_of_edges()
    assert g.number_of_edges() < 6 * g.n
    assert g.precedes() == _dag_closure(dag)


STORE_LOAD = """.version 8.8
.target sm_89
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b)
{
	.reg .b64 %rd<5>;
	.reg .f32 %f<4>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.global.f32 %f1, [%rd1];
	ld.global.f32 %f2, [%rd1+4];
	st.global.f32 [%rd2], %f1;
	st.global.f32 [%rd1+8], %f2;
	ld.global.f32 %f3, [%rd1+8];
	ret;
}
"""


def test_respects_rejects_what_the_dag_rejects():
    """A store moved above a load it may alias (through another pointer, so
    only a join node carries the constraint) is caught by both checks; the
    store to a disjoint offset of the same base may move."""
    m = parse(STORE_LOAD)
    [(dag, g)] = list(_blocks(m))
    ok = list(range(g.n))
    assert respects(g, ok) and topological_orders_respect(dag, ok)
    swapped = [0, 1, 4, 2, 3, 5, 6, 7]  # st [%rd2] above both loads of %rd1
    assert not respects(g, swapped) and not topological_orders_respect(dag, swapped)
    early = [0, 1, 2, 5, 3, 4, 6, 7]  # st [%rd1+8] above ld [%rd1+4]: %f2 not yet loaded
    assert not respects(g, early) and not topological_orders_respect(dag, early)
    late_load = [0, 1, 2, 3, 4, 6, 5, 7]  # ld [%rd1+8] above the st [%rd1+8] it reads
    assert not respects(g, late_load) and not topological_orders_respect(dag, late_load)
    # a schedule computed over the DepGraph is legal for the DAG
    order = list_schedule(g, [(0, g.n)], [(-v,) for v in range(g.n)])
    assert topological_orders_respect(dag, order)
