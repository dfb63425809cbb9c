"""The analysis manager: passes get their analyses from it, it forgets what a
pass did not preserve, and what it hands out cannot be changed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from ptxopt.analysis.manager import ANALYSES, AnalysisManager, PreservedAnalyses, default_manager
from ptxopt.kernels.corpus import get
from ptxopt.passes.base import ChangeReport, FunctionPass, Pass
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline
from ptxopt.ptx.emit import emit
from ptxopt.ptx.ir import Instruction, PerfDirective
from ptxopt.ptx.parser import parse

LOOP = """.version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<3>;
\tld.param.u64 %rd1, [p];
\tld.param.u32 %r1, [n];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r2, 0;
L:
\tld.global.f32 %f1, [%rd2];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd2], %f2;
\tadd.s64 %rd2, %rd2, 4;
\tadd.s32 %r2, %r2, 1;
\tsetp.lt.s32 %p1, %r2, 8;
\t@%p1 bra L;
\tret;
}
"""


# -- passes that say what they preserve (the manager's side of the contract) --

@dataclass(frozen=True)
class _AsksCFG(Pass):
    """Asks for every function's CFG and loops, then adds a directive (the body is untouched)."""

    kind = "am_test_directive"

    def run(self, module, analyses=None):
        report = ChangeReport(self.name)
        for fn in module.entries:
            analyses.cfg(fn)
            analyses.loops(fn)
            fn.directives = fn.directives + (PerfDirective(".maxnreg", ("128",)),)
            report.change(fn.name, fn.line, "directive")
        return report


@dataclass(frozen=True)
class _KeepsCFG(_AsksCFG):
    kind = "am_test_directive_keeps"
    preserves = PreservedAnalyses.of("cfg", "loops")


@dataclass(frozen=True)
class _LooksOnly(Pass):
    """Asks for the CFG and changes nothing."""

    kind = "am_test_looks"

    def run(self, module, analyses=None):
        for fn in module.entries:
            analyses.cfg(fn)
        return ChangeReport(self.name)


@dataclass(frozen=True)
class _RewritesBodyClaimsCFG(Pass):
    """Rewrites the body but (wrongly) claims to preserve the CFG."""

    kind = "am_test_liar"
    preserves = PreservedAnalyses.all()

    def run(self, module, analyses=None):
        report = ChangeReport(self.name)
        for fn in module.entries:
            analyses.cfg(fn)
            fn.body.items.insert(len(fn.body.items) - 1, Instruction("bar", ("sync",), ()))
            report.change(fn.name, 0, "bar.sync added")
        return report


def _run(passes, text=LOOP):
    am = AnalysisManager()
    PassManager(Pipeline(list(passes)), analyses=am).run(parse(text))
    return am


def test_a_pass_that_does_not_preserve_the_cfg_forces_a_recompute():
    """Three passes on the run's own module, each asking for the CFG: the first
    runs on a copy (the input stays, nothing dropped); the second's CFG is
    dropped after it (it preserves none), so the third builds it again."""
    am = _run([_AsksCFG(), _AsksCFG(), _LooksOnly()])
    assert am.builds["cfg"] == 2 and am.builds["loops"] == 1


def test_nothing_is_dropped_while_the_state_before_is_kept():
    """Under an instrument that keeps the module before each pass (it may
    revert to it), every pass runs on a copy: what the state before holds stays."""
    import io

    from ptxopt.passes.passmanager import PrintChanged

    am = AnalysisManager()
    PassManager(Pipeline([_AsksCFG(), _AsksCFG(), _LooksOnly()]), analyses=am,
                instruments=[PrintChanged(io.StringIO())]).run(parse(LOOP))
    assert am.builds["cfg"] == 1


def test_a_pass_that_preserves_the_cfg_keeps_it():
    am = _run([_KeepsCFG(), _KeepsCFG(), _LooksOnly()])
    assert am.builds["cfg"] == 1 and am.builds["loops"] == 1


def test_a_pass_that_changes_nothing_preserves_everything():
    am = _run([_AsksCFG(), _LooksOnly(), _LooksOnly(), _LooksOnly()])
    assert am.builds["cfg"] == 1
    assert _LooksOnly().preserved(ChangeReport("x")) == PreservedAnalyses.all()
    changed = ChangeReport("x")
    changed.change("k", 1, "y")
    assert _LooksOnly().preserved(changed) == PreservedAnalyses.none()


def test_a_false_preservation_claim_gets_a_fresh_cfg_not_a_stale_one():
    """Results are keyed by the identity of the statements: a body rewritten
    under a claim that the CFG is preserved has a new key, so the next pass
    sees the new body's CFG."""
    am = AnalysisManager()
    m = parse(LOOP)
    out = PassManager(Pipeline([_AsksCFG(), _RewritesBodyClaimsCFG()]), analyses=am).run(m).module
    cfg = am.cfg(out.entries[0])
    assert am.builds["cfg"] == 2
    assert [i.opcode for i in cfg.instructions][-2:] == ["bar", "ret"]


def test_apply_drops_nothing_its_input_still_holds():
    """The search tries passes on copies of one state: ``apply`` leaves the
    state untouched, so its results stay for the next pass tried."""
    am = AnalysisManager()
    m = parse(LOOP)
    for _ in range(3):
        _AsksCFG().apply(m, am)
    assert am.builds["cfg"] == 1


def test_preserved_analyses_names():
    assert str(PreservedAnalyses.all()) == "all" and str(PreservedAnalyses.none()) == "none"
    assert PreservedAnalyses.of("cfg", "dag").preserves("dag")
    assert not PreservedAnalyses.of("cfg").preserves("text")
    with pytest.raises(ValueError, match="unknown analyses"):
        PreservedAnalyses.of("cfgs")
    assert set(PreservedAnalyses.all().names) == set(ANALYSES)


# -- read-only views ----------------------------------------------------------

def test_the_cfg_handed_out_is_read_only():
    am = AnalysisManager()
    fn = parse(LOOP).entries[0]
    cfg = am.cfg(fn)
    with pytest.raises((TypeError, AttributeError)):
        cfg.instructions.append(cfg.instructions[0])
    with pytest.raises(TypeError):
        cfg.blocks[0].succs[0] = 3
    with pytest.raises((TypeError, AttributeError)):
        cfg.blocks[1].instructions.pop()
    with pytest.raises(TypeError):
        cfg.label_block["M"] = 0
    with pytest.raises(TypeError):
        cfg.du[0] = ((), ())
    with pytest.raises(AttributeError, match="read-only"):
        cfg.blocks = []
    with pytest.raises(AttributeError, match="read-only"):
        cfg.blocks[0].preds = [1]
    with pytest.raises(TypeError):
        cfg.reg_types.exact["%x"] = "b32"
    import networkx as nx

    with pytest.raises(nx.NetworkXError):
        cfg.graph.add_edge(0, 0)
    # another caller of the same function gets the same, unchanged facts
    again = am.cfg(fn)
    assert again.instructions is cfg.instructions and again.function is fn


def test_the_dependence_graph_and_loops_handed_out_are_read_only():
    am = AnalysisManager()
    fn = parse(LOOP).entries[0]
    cfg = am.cfg(fn)
    g = am.block_depgraph(cfg, 1, roots={}, noalias=frozenset(), overlap=frozenset())
    with pytest.raises((TypeError, AttributeError)):
        g.preds[1].append(0)
    with pytest.raises(TypeError):
        g.succs[0] = ()
    with pytest.raises(AttributeError, match="read-only"):
        g.topo = []
    info = am.loops(fn)
    with pytest.raises(AttributeError):
        info.loops.append(info.loops[0])
    with pytest.raises(AttributeError, match="read-only"):
        info.loops[0].carried_mem = ()
    assert replace(info.loops[0], carried_mem=()).carried_mem == ()  # a copy is the caller's


def test_a_cfg_built_without_the_manager_stays_writable():
    """Only what the manager shares is frozen: a caller's own CFG is its own."""
    from ptxopt.analysis.cfg import build_cfg

    cfg = build_cfg(parse(LOOP).entries[0])
    cfg.blocks[0].succs.append(0)
    assert cfg.blocks[0].succs[-1] == 0


# -- the old signatures -------------------------------------------------------

def test_a_plugin_without_an_analyses_argument_still_runs():
    calls = []

    @dataclass(frozen=True)
    class OldStyle(FunctionPass):
        kind = "am_test_old_style"

        def run_function(self, fn, report, module):
            calls.append(default_manager().cfg(fn).function is fn)

    @dataclass(frozen=True)
    class OldRun(Pass):
        kind = "am_test_old_run"

        def run(self, module):
            calls.append("run")
            return ChangeReport(self.name)

    m = parse(LOOP)
    PassManager(Pipeline([OldStyle(), OldRun()])).run(m)
    OldStyle().apply(m)
    assert calls == [True, "run", True]


def test_a_subclass_of_a_built_in_pass_may_call_it_the_old_way():
    """A plugin that wraps a built-in pass and calls its ``run_function``
    without ``analyses`` (written before the manager) gets the default
    manager's analyses and the built-in's result."""
    from ptxopt.passes.unroll import Unroll

    @dataclass(frozen=True)
    class Wrapped(Unroll):
        kind = "am_test_wrapped_unroll"

        def run_function(self, fn, report, module):
            super().run_function(fn, report, module)

    new, _ = Wrapped(factor=2).apply(parse(LOOP))
    want, _ = Unroll(factor=2).apply(parse(LOOP))
    assert emit(new) == emit(want)


# -- determinism and identity ---------------------------------------------------

def test_passes_are_deterministic_with_a_fresh_shared_or_default_manager():
    """The same output and report whatever manager the passes ask (fresh, one
    already holding the state's results, the default one)."""
    text = get("gemm_tile_2x2x2").ptx_text()
    shared = AnalysisManager()
    for name in ("reorder_cp", "reorder_il", "prefetch_L1", "vec_ld", "unroll_2", "maxnreg_64"):
        from ptxopt.passes.pipeline import make_pass

        p = make_pass(name)
        outs = set()
        for am in (AnalysisManager(), shared, shared, None):
            o, rep = p.apply(parse(text), am)
            outs.add((emit(o), repr(rep.to_json())))
        assert len(outs) == 1, name


def test_text_is_the_printed_module_and_follows_changes():
    am = AnalysisManager()
    m = parse(LOOP)
    assert am.text(m) == emit(m)
    assert am.text(m) is am.text(m) and am.builds["text"] == 1
    fn = m.entries[0]
    fn.directives = fn.directives + (PerfDirective(".maxnreg", ("64",)),)
    assert am.text(m) == emit(m) and ".maxnreg 64" in am.text(m)
    m2 = replace(m, version="8.1")
    assert am.text(m2) == emit(m2)


def test_the_default_manager_is_emptied_by_a_cold_start():
    from ptxopt.support.bounded_memo import clear_group

    am = default_manager()
    am.cfg(parse(LOOP).entries[0])
    assert len(am) > 0
    clear_group("front_end")
    assert len(am) == 0
