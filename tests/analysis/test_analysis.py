"""Behaviour of ``ptxopt.analysis``: CFG, def-use, liveness, dependency DAG,
register pressure, features. Small hand-written PTX snippets plus the corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from ptxopt.analysis import (
    FEATURE_NAMES, CFG, FunctionAnalysis, build_cfg, block_dag, critical_path, feature_vector,
    get_at, kernel_features, liveness, reaching_definitions, register_pressure, summary,
    topological_orders_respect,
)
from ptxopt.analysis.dag import build_dag, heights
from ptxopt.ptx.parser import parse

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("**/*.ptx"))

HEADER = """
.version 8.0
.target sm_89
.address_size 64
"""


def kernel(body: str, params: str = ".param .u64 pa, .param .u64 pb", regs: str | None = None) -> str:
    regs = regs if regs is not None else """
    .reg .pred %p<8>;
    .reg .b16 %rs<8>;
    .reg .b32 %r<40>;
    .reg .f32 %f<40>;
    .reg .b64 %rd<40>;
    """
    return HEADER + f".visible .entry k({params})\n{{\n{regs}\n{body}\n}}\n"


def cfg_of(body: str, **kw) -> CFG:
    return build_cfg(parse(kernel(body, **kw)).entries[0])


def dag_of(body: str, block: int = 0, **kw) -> nx.DiGraph:
    cfg = cfg_of(body, **kw)
    return block_dag(cfg, block)


def kinds(dag: nx.DiGraph, u: int, v: int) -> frozenset:
    return dag.edges[u, v]["kinds"] if dag.has_edge(u, v) else frozenset()


# ---------------------------------------------------------------------------
# CFG
# ---------------------------------------------------------------------------


BRANCHY = """
    ld.param.u64 %rd1, [pa];
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra $L_else;
    add.s32 %r2, %r1, 1;
    bra.uni $L_join;
$L_else:
    sub.s32 %r2, %r1, 1;
$L_join:
$L_join2:
    call.uni foo, (%r2);
    add.s32 %r3, %r2, 2;
    @%p1 ret;
    exit;
"""


def test_blocks_split_at_labels_and_branches():
    cfg = cfg_of(BRANCHY)
    sizes = [len(b.instructions) for b in cfg.blocks]
    # entry (3) | then (2) | else (1) | join: call, add, @p ret (3) | exit (1)
    assert sizes == [3, 2, 1, 3, 1]
    b0, b1, b2, b3, b4 = cfg.blocks
    assert b0.label is None and b2.label == "$L_else"
    # consecutive labels name one block
    assert b3.labels == ("$L_join", "$L_join2") and cfg.label_block["$L_join2"] == 3
    assert b0.succs == [2, 1]          # guarded branch: target, then fall-through
    assert b1.succs == [3]             # bra.uni: target only
    assert b2.succs == [3]             # falls through
    assert b3.succs == [4]             # guarded ret: falls through; call does not end a block
    assert b4.succs == []              # exit
    assert sorted(b3.preds) == [1, 2]
    assert set(cfg.graph.edges) == {(0, 2), (0, 1), (1, 3), (2, 3), (3, 4)}
    assert not cfg.has_loop
    assert b3.terminator.opcode == "ret" and b1.terminator.full_opcode == "bra.uni"


def test_instruction_after_unconditional_branch_starts_unreachable_block():
    cfg = cfg_of("""
    bra $L1;
    add.s32 %r1, %r1, 1;
$L1:
    ret;
""")
    assert [len(b.instructions) for b in cfg.blocks] == [1, 1, 1]
    assert cfg.blocks[0].succs == [2] and cfg.blocks[1].preds == []


def test_brx_successors_from_branchtargets_and_conservative_fallback():
    body = """
    ld.param.u32 %r1, [pa];
ts: .branchtargets $L1, $L3;
    brx.idx %r1, ts;
$L1:
    add.s32 %r2, %r1, 1;
$L2:
    add.s32 %r2, %r1, 2;
$L3:
    ret;
"""
    cfg = cfg_of(body)
    brx_block = cfg.block_of[1]
    assert [cfg.blocks[s].label for s in cfg.blocks[brx_block].succs] == ["$L1", "$L3"]
    cfg = cfg_of(body.replace("brx.idx %r1, ts", "brx.idx %r1, unknown_table"))
    brx_block = cfg.block_of[1]
    labelled = [b.index for b in cfg.blocks if b.labels]
    assert cfg.blocks[brx_block].succs == labelled


LOOP = """
    ld.param.u32 %r1, [pa];
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
$L_loop:
    add.s32 %r3, %r3, %r2;
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
    ld.param.u64 %rd1, [pb];
    st.global.u32 [%rd1], %r3;
    ret;
"""


def test_loop_detection():
    cfg = cfg_of(LOOP)
    assert cfg.has_loop
    assert cfg.back_edges == [(1, 1)]
    assert cfg.natural_loops() == [(1, frozenset({1}))]
    assert not cfg_of(BRANCHY).has_loop
    assert kernel_features(parse(kernel(LOOP)))["has_loop"] == 1.0


def test_sites_map_back_into_nested_scopes():
    fn = parse(kernel("""
    mov.u32 %r1, 1;
    {
        .reg .b32 %r1;
        mov.u32 %r1, 7;
        add.u32 %r2, %r1, 1;
    }
    add.u32 %r3, %r1, 2;
    ret;
""")).entries[0]
    cfg = build_cfg(fn)
    assert len(cfg.blocks) == 1 and len(cfg.instructions) == 5
    for iid, ins in enumerate(cfg.instructions):
        assert get_at(fn.body, cfg.sites[iid]) is ins
    assert len(cfg.sites[1]) == 2  # inside the nested scope
    # the scoped %r1 shadows the outer one: they are different registers
    rd = reaching_definitions(cfg)
    assert rd.reaching(2, cfg.du[2][1][0]) == (1,)
    assert rd.reaching(3, "%r1") == (0,)
    assert "%r1" in liveness(cfg).live_after(0)[1]  # outer %r1 live across the scope


# ---------------------------------------------------------------------------
# Def-use and liveness
# ---------------------------------------------------------------------------


def test_reaching_definitions_guarded_def_does_not_kill():
    cfg = cfg_of("""
    ld.param.u64 %rd1, [pa];
    setp.ne.s32 %p1, %r9, 0;
    mov.u32 %r1, 0;
    @%p1 ld.global.v2.b32 {%r1, %r2}, [%rd1];
    add.s32 %r3, %r1, %r2;
    mov.u32 %r1, 5;
    add.s32 %r4, %r1, 1;
    ret;
""")
    rd = reaching_definitions(cfg)
    assert rd.reaching(4, "%r1") == (2, 3)   # both the mov and the guarded load
    assert rd.reaching(4, "%r2") == (3,)
    assert rd.reaching(6, "%r1") == (5,)     # an unguarded mov kills both
    assert rd.reaching(3, "%p1") == (1,)     # the guard is a use
    assert rd.reaching(1, "%r9") == ()       # used before any definition
    assert rd.uses_of(2, "%r1") == (4,)
    assert rd.uses_of(5, "%r1") == (6,)


def test_reaching_definitions_around_a_loop():
    cfg = cfg_of(LOOP)
    rd = reaching_definitions(cfg)
    # %r2 in the loop body comes from the init (iid 1) or the increment (iid 4)
    assert rd.reaching(3, "%r2") == (1, 4)
    assert rd.reaching(8, "%r3") == (3,)
    assert set(rd.uses_of(4, "%r2")) == {3, 4, 5}


def test_liveness_on_a_small_loop():
    cfg = cfg_of(LOOP)
    lv = liveness(cfg)
    entry, loop, exit_ = 0, 1, 2
    assert lv.live_in[entry] == frozenset()
    assert lv.live_out[entry] == {"%r1", "%r2", "%r3"}
    assert lv.live_in[loop] == {"%r1", "%r2", "%r3"}
    assert lv.live_out[loop] == {"%r1", "%r2", "%r3"}  # live around the back edge
    assert lv.live_in[exit_] == {"%r3"}
    assert lv.live_out[exit_] == frozenset()
    after = lv.live_after(loop)
    assert after[2] == {"%r1", "%r2", "%r3", "%p1"}   # after setp
    assert after[3] == {"%r1", "%r2", "%r3"}          # after the branch


def test_liveness_guarded_def_keeps_value_live():
    cfg = cfg_of("""
    mov.u32 %r1, 0;
    setp.ne.s32 %p1, %r9, 0;
    @%p1 mov.u32 %r1, 3;
    st.global.u32 [%rd1], %r1;
    ret;
""")
    before = liveness(cfg).live_before(0)
    assert "%r1" in before[2]  # the guarded mov may not write it
    assert "%r9" in before[0] and "%rd1" in before[0]


# ---------------------------------------------------------------------------
# Dependency DAG: registers
# ---------------------------------------------------------------------------


def test_register_edges_raw_war_waw():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    add.s32 %r3, %r1, 1;
    add.s32 %r1, %r4, 1;
    add.s32 %r5, %r1, %r3;
""")
    assert kinds(dag, 0, 1) == {"raw"} and dag.edges[0, 1]["reg"] == "%r1"
    assert kinds(dag, 1, 2) == {"war"} and dag.edges[1, 2]["kind"] == "war"
    assert kinds(dag, 0, 2) == {"waw"}
    assert kinds(dag, 2, 3) == {"raw"}
    assert kinds(dag, 1, 3) == {"raw"} and dag.edges[1, 3]["reg"] == "%r3"
    assert not dag.has_edge(0, 3)  # the second definition of %r1 reaches 3, not the first


def test_register_edges_predicates_vectors_pairs():
    dag = dag_of("""
    setp.lt.s32 %p1|%p2, %r1, %r2;
    @%p1 add.s32 %r3, %r3, 1;
    @!%p2 add.s32 %r4, %r4, 1;
    ld.global.v2.f32 {%f1, %f2}, [%rd1];
    add.f32 %f3, %f2, 1.0;
    mov.f32 %f1, 0f00000000;
    setp.gt.s32 %p2, %r3, 0;
""")
    assert kinds(dag, 0, 1) == {"raw"} and dag.edges[0, 1]["reg"] == "%p1"  # guard is a use
    assert kinds(dag, 0, 2) == {"raw"} and dag.edges[0, 2]["reg"] == "%p2"  # negated guard
    assert kinds(dag, 3, 4) == {"raw"} and dag.edges[3, 4]["reg"] == "%f2"  # vector component
    assert kinds(dag, 3, 5) == {"waw"} and dag.edges[3, 5]["reg"] == "%f1"
    assert kinds(dag, 2, 6) == {"war"}                                      # pair half redefined
    assert "waw" in kinds(dag, 0, 6) and "%p2" in dag.edges[0, 6]["regs"]
    assert kinds(dag, 1, 6) == {"raw"}


def test_several_kinds_on_one_edge_and_kind_priority():
    dag = dag_of("""
    add.s32 %r1, %r1, 1;
    add.s32 %r1, %r1, %r1;
""")
    e = dag.edges[0, 1]
    assert e["kinds"] == {"raw", "waw"} and e["kind"] == "raw" and e["regs"] == {"%r1"}


def test_guarded_definitions_all_reach_the_use():
    dag = dag_of("""
    mov.u32 %r1, 0;
    @%p1 mov.u32 %r1, 1;
    @%p2 mov.u32 %r1, 2;
    add.s32 %r2, %r1, 1;
""")
    for d in (0, 1, 2):
        assert "raw" in kinds(dag, d, 3)
    assert "waw" in kinds(dag, 1, 2)


# ---------------------------------------------------------------------------
# Dependency DAG: memory
# ---------------------------------------------------------------------------


def test_memory_store_then_load_same_space():
    dag = dag_of("""
    st.global.f32 [%rd1], %f1;
    ld.global.f32 %f2, [%rd2];
""")
    assert kinds(dag, 0, 1) == {"mem"}


def test_memory_no_edge_between_loads():
    dag = dag_of("""
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1];
    ld.shared.f32 %f3, [%r1];
    ld.f32 %f4, [%rd2];
""")
    assert dag.number_of_edges() == 0


def test_memory_shared_and_global_do_not_alias_but_generic_does():
    dag = dag_of("""
    st.shared.f32 [%r1], %f1;
    ld.global.f32 %f2, [%rd1];
    st.global.f32 [%rd2], %f3;
    ld.shared.f32 %f4, [%r2];
    ld.f32 %f5, [%rd3];
    st.local.f32 [%rd4], %f6;
""")
    assert not dag.has_edge(0, 1) and not dag.has_edge(0, 2) and not dag.has_edge(2, 3)
    assert kinds(dag, 0, 3) == {"mem"}           # shared store -> shared load
    assert kinds(dag, 1, 2) == {"mem"}           # global load -> global store (WAR in memory)
    assert kinds(dag, 0, 4) == {"mem"} and kinds(dag, 2, 4) == {"mem"}  # generic sees both
    assert kinds(dag, 4, 5) == {"mem"}           # generic load -> local store
    assert not dag.has_edge(1, 5) and not dag.has_edge(3, 5)


def test_memory_param_and_const_loads_never_conflict_with_other_stores():
    dag = dag_of("""
    st.global.u64 [%rd1], %rd2;
    ld.param.u64 %rd3, [pa];
    st.f32 [%rd4], %f1;
    ld.const.f32 %f2, [%rd5];
    st.shared.f32 [%r1], %f2;
""")
    mem = [(u, v) for u, v, d in dag.edges(data=True) if "mem" in d["kinds"]]
    assert mem == [(0, 2), (2, 4)]  # only the stores: generic aliases global and shared


def test_memory_same_base_disjoint_offsets_are_independent():
    dag = dag_of("""
    st.global.f32 [%rd1], %f1;
    st.global.f32 [%rd1+4], %f2;
    ld.global.v2.f32 {%f3, %f4}, [%rd1+8];
    ld.global.f32 %f5, [%rd1+4];
    st.global.v4.f32 [%rd1+16], {%f1, %f2, %f3, %f4};
    ld.global.f32 %f6, [%rd1+28];
    add.s64 %rd1, %rd1, 4;
    ld.global.f32 %f7, [%rd1];
""")
    assert not dag.has_edge(0, 1) and not dag.has_edge(0, 2) and not dag.has_edge(1, 2)
    assert kinds(dag, 1, 3) == {"mem"}            # same bytes [4, 8)
    assert kinds(dag, 4, 5) == {"mem"}            # [28, 32) inside [16, 32)
    assert kinds(dag, 2, 4) == {"raw"}            # [8, 16) vs [16, 32): data only
    assert not dag.has_edge(3, 4) and not dag.has_edge(0, 4)
    # %rd1 was redefined: the same register no longer means the same address
    assert kinds(dag, 0, 7) == {"mem"} and kinds(dag, 4, 7) == {"mem"}


def test_memory_distinct_symbols_and_noalias_parameters():
    params = ".param .u64 .ptr .global .noalias pa, .param .u64 .ptr .global .noalias pb, .param .u64 pc"
    dag = dag_of("""
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    st.global.f32 [%rd5], %f9;
    st.global.f32 [%rd6], %f9;
    st.shared.f32 [sa], %f9;
    ld.shared.f32 %f2, [sb+4];
    ld.shared.f32 %f3, [sa];
""", params=params)
    assert not dag.has_edge(8, 9)                 # two .noalias parameters
    assert kinds(dag, 8, 10) == {"mem"}           # pc is not .noalias
    assert not dag.has_edge(11, 12)               # distinct shared variables
    assert kinds(dag, 11, 13) == {"mem"}          # the same one
    # without .noalias every two global accesses may alias
    dag = dag_of("""
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.global.f32 %f1, [%rd1];
    st.global.f32 [%rd2], %f9;
""")
    assert kinds(dag, 2, 3) == {"mem"}


# ---------------------------------------------------------------------------
# Dependency DAG: ordering points
# ---------------------------------------------------------------------------


def reachable(dag: nx.DiGraph, u: int, v: int) -> bool:
    return nx.has_path(dag, u, v)


def test_order_edges_around_bar_sync():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    st.shared.u32 [%r3], %r1;
    bar.sync 0;
    ld.shared.u32 %r4, [%r5];
    add.s32 %r6, %r7, 1;
""")
    for j in (0, 1):
        assert "order" in kinds(dag, j, 2)
    for j in (3, 4):
        assert "order" in kinds(dag, 2, j)
    assert reachable(dag, 0, 4)  # nothing crosses the barrier


def test_order_edges_around_atomics_and_transitivity():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    ld.global.u32 %r3, [%rd1];
    atom.global.add.u32 %r4, [%rd2], 1;
    mul.lo.s32 %r5, %r6, 3;
    atom.global.add.u32 %r7, [%rd3], 1;
    add.s32 %r8, %r9, 1;
    ret;
""")
    n = dag.number_of_nodes()
    for op in (2, 4, 6):  # atomics and the terminator: ordered against everything
        for j in range(n):
            if j < op:
                assert reachable(dag, j, op)
            elif j > op:
                assert reachable(dag, op, j)
    # the terminator stays last: every node reaches it
    assert all(reachable(dag, j, n - 1) for j in range(n - 1))
    # O(n) edges: the first atomic is not joined directly to the ret
    assert not dag.has_edge(0, 6)


def test_unknown_opcodes_and_clock_reads_are_ordering_points():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    frobnicate.b32 %r3, %r4;
    mov.u64 %rd1, %clock64;
    add.s32 %r5, %r6, 1;
""")
    assert "order" in kinds(dag, 0, 1) and "order" in kinds(dag, 1, 2) and "order" in kinds(dag, 2, 3)


def test_pure_arithmetic_is_free_to_move():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    mul.lo.s32 %r3, %r4, 2;
    fma.rn.f32 %f1, %f2, %f3, %f4;
    shfl.sync.bfly.b32 %r5, %r6, 1, 31, -1;
    shfl.sync.bfly.b32 %r7, %r8, 2, 31, -1;
""")
    assert sorted(dag.edges) == [(3, 4)]  # only the two collectives stay ordered


# ---------------------------------------------------------------------------
# DAG properties over the corpus
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_dags_acyclic_and_original_order_is_topological(path):
    module = parse(path.read_text())
    for fn in module.functions:
        if fn.body is None:
            continue
        fa = FunctionAnalysis(fn)
        assert sum(len(b.instructions) for b in fa.cfg.blocks) == len(list(fn.instructions()))
        for b, dag in zip(fa.cfg.blocks, fa.dags):
            assert nx.is_directed_acyclic_graph(dag)
            n = dag.number_of_nodes()
            assert n == len(b.instructions)
            assert topological_orders_respect(dag, list(range(n)))
            if b.terminator is not None and n > 1:
                assert dag.in_degree(n - 1) >= 1
                assert all(nx.has_path(dag, j, n - 1) for j in range(0, n - 1, max(1, n // 16)))
            for u, v, d in dag.edges(data=True):
                assert u < v and d["kind"] in d["kinds"]


def test_topological_orders_respect_rejects_bad_orders():
    dag = dag_of("""
    add.s32 %r1, %r2, 1;
    add.s32 %r3, %r1, 1;
    add.s32 %r4, %r5, 1;
""")
    assert topological_orders_respect(dag, [0, 1, 2])
    assert topological_orders_respect(dag, [2, 0, 1])
    assert topological_orders_respect(dag, [0, 2, 1])
    assert not topological_orders_respect(dag, [1, 0, 2])
    assert not topological_orders_respect(dag, [0, 1])
    assert not topological_orders_respect(dag, [0, 1, 1])


def test_critical_path_on_a_known_chain():
    dag = dag_of("""
    ld.global.f32 %f1, [%rd1];
    mul.f32 %f2, %f1, %f1;
    add.f32 %f3, %f2, 1.0;
    add.s32 %r1, %r2, 1;
    st.global.f32 [%rd2], %f3;
""")
    cp = critical_path(dag)
    assert cp.length == 4 and cp.nodes == [0, 1, 2, 4]
    lat = {"ld": 100, "mul": 5, "add": 3, "st": 1}
    cp = critical_path(dag, latency=lambda ins: lat[ins.opcode])
    assert cp.length == 100 + 5 + 3 + 1 and cp.nodes == [0, 1, 2, 4]
    assert heights(dag)[3] == 1


# ---------------------------------------------------------------------------
# Register pressure
# ---------------------------------------------------------------------------


def test_register_pressure_on_a_known_snippet():
    cfg = cfg_of("""
    ld.param.u64 %rd1, [pa];
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1+4];
    ld.global.f32 %f3, [%rd1+8];
    setp.gt.f32 %p1, %f1, 0f00000000;
    add.f32 %f4, %f1, %f2;
    selp.f32 %f5, %f4, %f3, %p1;
    cvt.rn.f16.f32 %rs1, %f5;
    st.global.b16 [%rd1], %rs1;
    ret;
""")
    # live after each instruction:
    #  0 {rd1}                     1 {rd1,f1}               2 {rd1,f1,f2}
    #  3 {rd1,f1,f2,f3}            4 {rd1,f1,f2,f3,p1}      5 {rd1,f3,p1,f4}
    #  6 {rd1,f5}                  7 {rd1,rs1}              8 {}
    # max b32 = 3 (after 3 and 4), b64 = 1, pred = 1, b16 = 1;
    # 32-bit equivalent: after 3/4: 3*1 + 1*2 = 5 (the predicate counts 0);
    # max_live: after 4: 5 registers.
    p = register_pressure(cfg)
    assert p.by_class == {"pred": 1, "b16": 1, "b32": 3, "b64": 1, "b128": 0}
    assert p.total32 == 5
    assert p.max_live == 5


def test_register_pressure_counts_dead_definitions_and_ignores_special_registers():
    cfg = cfg_of("""
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    add.s32 %r3, %r1, %r2;
    ret;
""")
    # %r3 is never used but occupies a register right after the add; %tid.x never counts
    p = register_pressure(cfg)
    assert p.by_class["b32"] == 2 and p.total32 == 2


def test_register_class_comes_from_declarations():
    cfg = cfg_of("""
    mov.b64 %x1, 0;
    mov.b64 %x2, 1;
    add.s64 %x3, %x1, %x2;
    st.global.u64 [%x3], %x3;
""", regs=".reg .b64 %x<4>;")
    p = register_pressure(cfg)
    assert p.by_class["b64"] == 2 and p.by_class["b32"] == 0 and p.total32 == 4


# ---------------------------------------------------------------------------
# Features and summary
# ---------------------------------------------------------------------------


GEMM = sorted(CORPUS.glob("gemm_tile/gemm_tile_*.ptx"))


@pytest.mark.parametrize("path", GEMM, ids=lambda p: p.stem)
def test_gemm_tile_features(path):
    m, n, k = map(int, re.search(r"(\d+)x(\d+)x(\d+)", path.stem).groups())
    module = parse(path.read_text())
    f = kernel_features(module)
    assert list(f) == list(FEATURE_NAMES)
    assert f["n_fma"] == m * n * k
    assert f["n_ld_global"] == m * k + k * n
    assert f["n_st_global"] == m * n
    assert f["n_blocks"] == 1 and f["has_loop"] == 0.0
    vec = feature_vector(module)
    assert vec.shape == (len(FEATURE_NAMES),) and vec.dtype == np.float64
    assert np.all(np.isfinite(vec))


def _corpus_files_by_tier() -> tuple[list[Path], list[Path]]:
    """CORPUS_FILES split in two: the hand-written kernels and the generated
    families' fast slice (tests/corpus_tiers.py), and the other generated kernels."""
    from corpus_tiers import generated_tier

    from ptxopt.kernels.corpus import load_manifest

    ids = {(CORPUS / k.path).resolve(): k.id for k in load_manifest()}
    fast, rest = [], []
    for path in CORPUS_FILES:
        kid = ids.get(path.resolve())
        (fast if kid is None or generated_tier(kid) in (None, "fast") else rest).append(path)
    return fast, rest


def _check_feature_vectors(paths):
    assert paths
    for path in paths:
        vec = feature_vector(parse(path.read_text()))
        assert len(vec) == len(FEATURE_NAMES) and np.all(np.isfinite(vec)), path
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)


def test_feature_vector_on_every_corpus_kernel():
    """The hand-written kernels and each generated template's cheapest kernel
    (the fast tier); the slow test below takes every other corpus file, so the
    two tiers together still cover all of them (each file once)."""
    _check_feature_vectors(_corpus_files_by_tier()[0])


@pytest.mark.slow
def test_feature_vector_on_the_other_generated_kernels():
    _check_feature_vectors(_corpus_files_by_tier()[1])


def test_features_count_spaces_widths_and_maxnreg():
    src = kernel("""
    ld.param.u64 %rd1, [pa];
    mov.u32 %r1, %tid.x;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
    ld.global.v2.f32 {%f5, %f6}, [%rd1+16];
    ld.shared.f32 %f7, [%r1];
    fma.rn.f32 %f8, %f1, %f2, %f3;
    mad.rn.f32 %f9, %f4, %f5, %f6;
    cvt.rn.f32.s32 %f10, %r1;
    bar.sync 0;
    atom.global.add.u32 %r2, [%rd1], 1;
    st.global.v2.f32 [%rd1], {%f8, %f9};
    ret;
""").replace("{\n", ".maxnreg 64\n{\n", 1)
    f = kernel_features(parse(src))
    assert f["maxnreg"] == 64
    assert f["n_ld_global"] == 2 and f["n_ld_global_v4"] == 1 and f["n_ld_global_v2"] == 1
    assert f["n_ld_shared"] == 1 and f["n_ld_param"] == 1
    assert f["n_st_global_v2"] == 1 and f["st_global_vec_ratio"] == 1.0
    assert f["n_fma"] == 2 and f["n_conversion"] == 1 and f["n_sreg_read"] == 1
    assert f["n_barrier"] == 1 and f["n_atomic"] == 1 and f["n_control"] == 1
    assert f["ld_global_bytes"] == 24 and f["st_global_bytes"] == 8
    assert f["n_params"] == 2 and f["n_instructions"] == 12


def test_summary_is_json_and_per_entry():
    module = parse((CORPUS / "cuda" / "saxpy.ptx").read_text())
    s = summary(module)
    text = json.dumps(s)
    entry = json.loads(text)["entries"]["saxpy"]
    assert entry["blocks"] == 4 and entry["has_loop"] is True
    assert set(entry["register_pressure"]) >= {"pred", "b16", "b32", "b64", "total32"}
    assert list(entry["features"]) == list(FEATURE_NAMES)
    assert entry["dag"]["edges_total"] >= entry["dag"]["edges_max"] > 0


def test_analysis_is_deterministic():
    text = (CORPUS / "cuda" / "layernorm_row.ptx").read_text()
    a = json.dumps(summary(parse(text)), sort_keys=True)
    b = json.dumps(summary(parse(text)), sort_keys=True)
    assert a == b


def test_gemm_16_dag_and_features_cover_the_large_block():
    """The largest corpus block's DAG is built whole (its speed is measured in benchmarks/, not
    asserted here: a timed test fails on a loaded machine)."""
    module = parse((CORPUS / "gemm_tile" / "gemm_tile_16x16x16.ptx").read_text())
    f = kernel_features(module)
    assert f["dag_max_nodes"] > 5000


def test_dag_memo_gives_one_frozen_graph_per_input(monkeypatch):
    from dataclasses import replace

    from ptxopt.analysis import manager as manager_mod

    text = (CORPUS / "gemm_tile" / "gemm_tile_4x4x4.ptx").read_text()
    fn = parse(text).entries[0]
    cfg = build_cfg(fn)
    am = manager_mod.AnalysisManager()
    a = am.block_dag(cfg, 0)
    assert am.block_dag(cfg, 0) is a and nx.is_frozen(a)  # the features of one state share it
    assert nx.is_frozen(block_dag(cfg, 0))  # built afresh without a manager, frozen too
    with pytest.raises(nx.NetworkXError):
        a.add_edge(0, 1)
    ins = list(cfg.blocks[0].instructions)
    shorter = am.dag(ins[:-1])
    assert shorter is not a and len(shorter) == len(a) - 1
    # equal instructions at other lines are other nodes' data: not the same graph
    plain = am.dag(ins)
    moved = am.dag([replace(i, line=i.line + 100) for i in ins])
    assert moved is not plain and moved.nodes[0]["ins"].line == ins[0].line + 100
    assert set(moved.edges) == set(plain.edges)
    # bounded: past the edge budget the oldest graphs go (the newest always stays)
    monkeypatch.setattr(manager_mod, "DAG_EDGES", a.number_of_edges() + 1)
    for k in range(2, 6):
        am.dag(ins[:-k])
    memo = am._memos["dag"]
    assert sum(g.number_of_edges() for g in memo.values()) <= a.number_of_edges() + 1
    assert len(memo) >= 1
