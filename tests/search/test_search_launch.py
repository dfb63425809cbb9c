"""Search states apply a pass that depends on the launch (``launch_bounds``)
bound to the kernel's performance launch, as the evaluator does, and the
move memo never hands one launch's outcome (or a launch-free one) to
another (else an action such as launch_bounds on an nvcc kernel is masked for every launch)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ptxopt.ptx.emit import emit
from ptxopt.equivalence.launch import Launch, Role
from ptxopt.evaluate import Candidate, evaluate
from ptxopt.passes.base import Pass
from ptxopt.passes.passmanager import PassManager
from ptxopt.evaluate import move_memo
from ptxopt.search.actions import ACTIONS
from ptxopt.evaluate.move_memo import MoveMemo
from ptxopt.search.state import State

# an nvcc-style entry: no .reqntid, no .maxntid (the block is the launch's)
NVCC = """\
.version 8.8
.target sm_89
.address_size 64

.visible .entry scale(
\t.param .u64 scale_param_0
)
{
\t.reg .f32 %f<4>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [scale_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tld.global.f32 %f1, [%rd4];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd4], %f2;
\tret;
}
"""


def perf(block: int) -> Launch:
    return Launch(grid=(4, 1, 1), block=(block, 1, 1), role=Role.PERFORMANCE, source="test")


def cand(block: int | None) -> Candidate:
    return Candidate(NVCC, name="scale", performance=None if block is None else perf(block))


@pytest.fixture(autouse=True)
def _fresh():
    move_memo.clear_memo()
    yield
    move_memo.clear_memo()


def masked(s: State, action: str) -> str | None:
    """None where ``action`` is legal at ``s`` (by the mask), else the reason."""
    legal = bool(s.action_mask()[ACTIONS.index(action)])
    return None if legal else next(m.reason for m in s.moves() if m.action == action)


def test_launch_bounds_is_legal_on_an_nvcc_entry_with_a_performance_launch():
    s = State.root(cand(128))
    assert masked(s, "launch_bounds_2") is None
    child = s.child("launch_bounds_2")
    assert str(child.pipeline) == "launch_bounds_2"  # the action's own string: the evaluator binds it again
    assert ".maxntid 128" in child.printed and ".minnctapersm 2" in child.printed
    # without a performance launch the block is unknown: refused, so masked
    assert masked(State.root(cand(None)), "launch_bounds_2") == "no change"


def test_the_child_is_the_module_the_evaluator_builds(monkeypatch):
    """The evaluator measures the child's own module (no pass runs again), and
    its own pass run for the child's pipeline, when told to apply the passes
    again, prints exactly the child (the state and the evaluator bind the
    launch one way) and gives the same result."""
    from ptxopt.evaluate import EvaluationSession, prepare as frontend

    built = []
    real = PassManager.run

    def spy(self, module):
        out = real(self, module)
        if len(self.pipeline):
            built.append(emit(out.module))
        return out

    monkeypatch.setattr(PassManager, "run", spy)
    for action in ("launch_bounds_2", "launch_bounds{minblocks=4}"):
        child = State.root(cand(128)).child(action)
        built.clear()
        r = evaluate(child.candidate(), cache=None)
        assert r.ok and r.changed, (r.status, r.error)
        assert built == []  # measured as the search built it
        monkeypatch.setattr(frontend, "HAND_OVER", False)
        with EvaluationSession().active():  # a session that has not seen the child's module
            again = evaluate(child.candidate(), cache=None)
        monkeypatch.setattr(frontend, "HAND_OVER", True)
        assert built and built[0] == child.printed
        assert (again.key, again.cycles, again.equivalence) == (r.key, r.cycles, r.equivalence)


def test_a_corpus_nvcc_kernel_offers_launch_bounds():
    """The manifest's performance launch binds (cuda_saxpy: no .reqntid)."""
    s = State.root(Candidate.from_corpus("cuda_saxpy"))
    assert ".reqntid" not in s.printed
    assert masked(s, "launch_bounds_2") is None


def test_the_memo_does_not_leak_between_launches(tmp_path):
    """One printed module, three launches, one memo file: each launch's mask
    is its own. 4 blocks of 1024 threads never fit an SM (48 warps on
    sm_89), 4 of 128 do; without a launch the block is unknown."""
    path = tmp_path / "moves.sqlite"
    lb4 = "launch_bounds{minblocks=4}"
    assert masked(State.root(cand(None), memo=MoveMemo(path)), lb4) == "no change"
    move_memo.clear_memo()  # a new process: only the file remains
    assert masked(State.root(cand(128), memo=MoveMemo(path)), lb4) is None
    move_memo.clear_memo()
    assert masked(State.root(cand(1024), memo=MoveMemo(path)), lb4) == "no change"
    # ...and each launch's facts are remembered: a repeat applies no pass
    move_memo.clear_memo()
    applied = []
    real = Pass.apply
    try:
        Pass.apply = lambda self, m: (applied.append(self.name), real(self, m))[1]
        for block, want in ((128, None), (1024, "no change"), (None, "no change")):
            s = State.root(cand(block), memo=MoveMemo(path))
            assert bool(s.action_mask()[ACTIONS.index(lb4)]) == (want is None)
    finally:
        Pass.apply = real
    assert applied == []


def test_the_memo_key_names_the_launch_only_for_launch_dependent_actions():
    with_lb = State.root(cand(128))
    assert with_lb.memo_launch and "(128, 1, 1)" in with_lb.memo_launch
    without = State.root(cand(128), extra_actions=())
    without = State(without.kernel, without.pipeline, without.module, without.printed,
                    actions=("vec_ld", "cache_cg"))
    assert without.memo_launch == ""
    assert State.root(cand(None)).memo_launch == ""


def test_a_pass_must_declare_that_it_uses_the_launch():
    """``uses_launch`` and overriding ``with_launch`` go together (a pass
    that binds the launch undeclared would be memoised launch-free)."""
    with pytest.raises(TypeError, match="uses_launch=False but it overrides with_launch"):
        @dataclass(frozen=True)
        class Sneaky(Pass):
            kind = "sneaky"

            def with_launch(self, launch, entry=None):
                return self

    with pytest.raises(TypeError, match="uses_launch=True but it does not override with_launch"):
        @dataclass(frozen=True)
        class Claims(Pass):
            kind = "claims"
            uses_launch = True


def test_only_launch_bounds_uses_the_launch():
    """The registered passes whose outcome depends on the launch (maxnreg,
    nc_ld, unroll: the module alone)."""
    from ptxopt.passes.registry import pass_registry

    assert sorted(k for k, cls in pass_registry().items() if cls().uses_launch) == ["launch_bounds"]


def test_optimize_binds_the_performance_launch():
    """``optimize(..., performance=)`` (the Triton hook's path) applies the
    pipeline as the evaluator does: bound to the launch's block."""
    from ptxopt.api import optimize
    from ptxopt.passes.pipeline import PipelineError

    r = optimize(NVCC, "launch_bounds_2", performance=perf(128), estimate=False)
    assert r.candidate is not None and ".maxntid 128" in r.candidate, (r.reason, r.records)
    assert r.pipeline == "launch_bounds_2{block=128}"
    with pytest.raises(PipelineError, match="names block 256, the performance launch uses 128"):
        optimize(NVCC, "launch_bounds_2{block=256}", performance=perf(128), estimate=False)


def test_explain_applies_the_pipeline_bound():
    from ptxopt.cli.explain import _apply
    from ptxopt.passes.pipeline import Pipeline

    out = _apply(Pipeline.parse("launch_bounds_2"), NVCC, "scale.ptx", perf(128), "scale")
    assert ".maxntid 128" in out and ".minnctapersm 2" in out


@pytest.mark.slow
def test_explain_binds_the_performance_launch():
    """``ptxopt explain -p launch_bounds{minblocks=4}`` on an nvcc kernel
    (no .reqntid) estimates the module the evaluator builds: ptxas sees
    .maxntid 256 .minnctapersm 4 and moves its register count (unbound the
    pass refused and 'after' was the input)."""
    import json

    from tests.cli_helpers import run_cli

    r = run_cli("explain", "corpus:cuda_matmul_naive", "-p", "launch_bounds{minblocks=4}", "--json")
    assert r.exit_code == 0, r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    assert k["before"]["launch"]["block"] == [16, 16, 1]
    assert k["after"]["registers"] != k["before"]["registers"]
