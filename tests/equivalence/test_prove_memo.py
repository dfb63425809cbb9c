"""The prover executes the original once for many candidates (a search asks about many), with unchanged verdicts."""

from __future__ import annotations

import pytest

from ptxopt.analysis.cfg import CFG
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.prove import clear_memo, original_memo, prove
from ptxopt.equivalence.prove.symexec import BlockExecutor
from ptxopt.evaluate import Candidate, EvaluationSession
from ptxopt.ptx.parser import parse
from ptxopt.passes.passmanager import PassManager

PIPELINES = ("reorder_cp", "cache_cg", "vec_ld", "reorder_lf")


@pytest.fixture
def runs(monkeypatch):
    """Every block run of the symbolic executor, as (executor, block index).
    The executors themselves are kept alive: an id() of a freed executor can
    be reused by the next one (seen once in a sequential run)."""
    seen: list = []
    alive: list = []
    orig = BlockExecutor.run

    def run(self, block_index, instructions):
        alive.append(self)
        seen.append((id(self), block_index))
        return orig(self, block_index, instructions)

    monkeypatch.setattr(BlockExecutor, "run", run)
    clear_memo()
    yield seen
    clear_memo()


def _kernel(name="cuda_dropout_hash"):
    m = parse(Candidate.from_corpus(get(name)).ptx)
    fn = next(f for f in m.functions if f.is_entry)
    return m, fn, len(CFG(fn).blocks)


def test_original_executed_once_for_n_candidates(runs):
    m, fn, blocks = _kernel()
    assert blocks > 3  # several blocks: a per-candidate re-execution would show
    cands = [PassManager(p).run(m).module for p in PIPELINES]
    verdicts = [prove(m, c, entry=fn.name).verdict for c in cands]
    assert all(v == "proved" for v in verdicts)  # every block of both sides was executed
    executors = {}
    for ex, b in runs:
        executors.setdefault(ex, []).append(b)
    # one executor ran the original's blocks once each; each candidate has its own
    assert len(executors) == 1 + len(cands)
    assert sorted(len(v) for v in executors.values()) == [blocks] * (1 + len(cands))
    assert len(runs) == blocks * (1 + len(cands))  # was 2 * blocks * len(cands)


def test_a_reparsed_original_shares_the_memo(runs):
    """Keyed by the module's digest (its printed text), not by the object."""
    m, fn, blocks = _kernel()
    c = PassManager("reorder_cp").run(m).module
    prove(m, c, entry=fn.name)
    prove(parse(Candidate.from_corpus(get("cuda_dropout_hash")).ptx), c, entry=fn.name)
    assert len(runs) == blocks * 3


def test_verdicts_and_reasons_unchanged():
    """With the memo warm (every candidate after the first) the answer is the
    one a cold prover gives, for proved and not-proved pairs alike."""
    for name in ("cuda_dropout_hash", "cuda_layernorm_row", "gemm_tile_4x4x4"):
        m = parse(Candidate.from_corpus(get(name)).ptx)
        cands = [PassManager(p).run(m).module for p in PIPELINES]
        # a candidate that must not prove: an operand swapped in the first fma/mul/add
        text = Candidate.from_corpus(get(name)).ptx
        cands.append(parse(text.replace("add.s32", "sub.s32", 1) if "add.s32" in text else text))
        clear_memo()
        warm = [prove(m, c) for c in cands]
        cold = []
        for c in cands:
            clear_memo()
            cold.append(prove(m, c))
        assert [(r.verdict, r.reason) for r in warm] == [(r.verdict, r.reason) for r in cold]
        if "add.s32" in text:
            assert warm[-1].verdict != "proved"
    clear_memo()


def test_bounded():
    clear_memo()
    m, fn, _ = _kernel()
    c = PassManager("reorder_cp").run(m).module
    for i in range(original_memo.MAX_ENTRIES + 3):
        prove(m, c, entry=fn.name, assume_align=1 << i)  # a different key each time
    assert len(EvaluationSession.current().proof_originals) == original_memo.MAX_ENTRIES
    clear_memo()
