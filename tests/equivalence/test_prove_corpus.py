"""The prover on real kernels, their mutants and random kernels.

* every pass on a selection of corpus kernels (gemm tiles, nvcc, Triton;
  the whole corpus in the slow tier): ``proved`` or ``inconclusive`` with a
  reason, never ``differ`` (a pass never changes a kernel's interface);
* **no false proofs**: no mutant (:mod:`ptxopt.testing.mutants`) of an
  nvcc/Triton corpus kernel (all of them in the slow tier, a few here) or of
  an adversarial kernel (``tests/adversarial/``) is ``proved``, nor a mutant
  of a pass's output checked against the original;
* differential: random race-free kernels (:mod:`ptxopt.testing.random_kernels`)
  with random rewrites -- one of the 20 passes, a mutant, two adjacent
  instructions swapped, an instruction deleted -- where ``proved`` must
  imply that the interpreter (:func:`ptxopt.equivalence.interpret.verify`) finds the pair
  equal.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxopt.kernels.corpus import load_manifest
from ptxopt.ptx.emit import emit
from ptxopt.ptx.ir import Instruction, instruction_slots
from ptxopt.ptx.parser import parse
from ptxopt.passes import pass_names
from ptxopt.passes.pipeline import changed_output
from ptxopt.equivalence.prove import prove
from ptxopt.testing.mutants import mutants
from ptxopt.testing.random_kernels import kernel_from_steps, launch

KERNELS = {k.id: k for k in load_manifest()}
CORPUS_MUTANT_KERNELS = sorted(k.id for k in KERNELS.values() if k.compiler in ("nvcc", "triton"))
FAST_PASS_KERNELS = ("gemm_tile_4x4x4", "gemm_tile_4x8x4", "cuda_matmul_tiled_smem", "cuda_softmax_warp",
                     "triton_attention", "triton_cross_entropy")
FAST_MUTANT_KERNELS = ("gemm_tile_4x4x4", "cuda_reduce_sum_smem", "cuda_histogram_atomic", "triton_cumsum")
ADVERSARIAL_DIR = Path(__file__).parents[1] / "adversarial"
ADVERSARIAL = sorted(ADVERSARIAL_DIR.glob("*.ptx"))


@lru_cache(maxsize=None)
def _parsed(kid: str):
    m = parse(KERNELS[kid].ptx_text(), kid)
    return m, emit(m)


def _check_passes(kid: str) -> int:
    m, text = _parsed(kid)
    entry = KERNELS[kid].entry
    proved = 0
    for p in pass_names():
        out = changed_output(p, m)
        if out is None or emit(out) == text:
            continue
        r = prove(text, emit(out), entry=entry)
        assert r.verdict in ("proved", "inconclusive"), f"{kid} {p}: {r.verdict}: {r.reason}"
        assert r.reason, f"{kid} {p}: no reason"
        proved += r.verdict == "proved"
    return proved


@pytest.mark.parametrize("kid", FAST_PASS_KERNELS)
def test_every_pass_is_proved_or_inconclusive(kid):
    assert _check_passes(kid) > 0, f"{kid}: the prover proved no pass at all"


def _sweep_kernels() -> list[str]:
    """Every corpus kernel, less those whose pairs test_smt_recheck.py proves
    (with the same assertions as :func:`_check_passes`) and re-checks, when it
    runs (an SMT solver is installed): the same proofs are not made twice."""
    from corpus_tiers import smt_recheck_kernels

    from ptxopt.equivalence.prove.smt import solver

    rechecked = {k.id for k in smt_recheck_kernels(load_manifest())} if solver.available() else set()
    return sorted(k for k in KERNELS if k not in rechecked)


@pytest.mark.slow
@pytest.mark.parametrize("kid", _sweep_kernels())
def test_every_pass_on_every_corpus_kernel(kid):
    _check_passes(kid)


def dead_site(module, entry: str, line: int) -> bool:
    """Is the instruction at ``line`` of ``entry`` one whose every result is
    dead right after it (by :func:`ptxopt.analysis.defuse.liveness`, not the
    prover)? Changing such an instruction's sources is an *equivalent*
    mutant (``mov %p, 0; bar.red.and.pred %p, ...``: the first value is
    never read), which a prover may rightly prove."""
    from ptxopt.analysis.cfg import CFG
    from ptxopt.analysis.defuse import liveness

    cfg = CFG(module.pick_entry(entry))
    live = liveness(cfg)
    sites = [(b, k, iid) for b in cfg.blocks for k, iid in enumerate(b.iids) if cfg.instructions[iid].line == line]
    if len(sites) != 1:
        return False  # no instruction, or several, with that line (a pass's output): not judged dead
    b, k, iid = sites[0]
    defs = cfg.du[iid][0]
    after = live.live_after(b.index)[k]
    return bool(defs) and not any(r in after for r in defs)


def _equivalent_mutant(original, mutant, entry: str, reason: str, what: str) -> bool:
    """A proved mutant that changes a live value must be one the SMT fallback
    or a loop proof (a loop run out, its exit tests evaluated) showed equal -- the structural prover only proves terms built
    the same way -- and the interpreter, an independent oracle, must find no
    difference on the manifest's launch. Seen: a mask bit a shifted operand
    never has (``(tid << 1) & 254`` vs ``& 255``) and the "other" value of a
    masked Triton load that is only stored under the same predicate."""
    from ptxopt.equivalence.interpret import Geometry, verify

    if not any(w in reason for w in ("SMT solver", "run out", "whole paths", "inductive simulation")):
        return False  # (the loop proofs of prove.loops decide exit tests by value: an equivalent bound is proved)
    name = what.split(" after ")[0]  # ``what``: the corpus id or adversarial file, or "NAME after PASS"
    spec = KERNELS.get(name)
    if spec is not None:
        res = verify(original, mutant, entry, trials=4, spec=spec)
    elif (ADVERSARIAL_DIR / f"{name}.ptx").exists():  # the launch the adversarial file states (// block: ...)
        # (an unrolled loop's guard mutated so that its fast path never runs is equivalent: the remainder
        # path is the original loop, one trip at a time; the loop proof proves it and the launch agrees)
        from test_adversarial import load_spec

        a = load_spec(ADVERSARIAL_DIR / f"{name}.ptx")
        res = verify(original, mutant, entry, trials=8, geometry=Geometry(grid=a.grid, block=a.block,
                                                                          shared_bytes=a.shared))
    else:
        res = None
    return res is not None and res.status in ("equal", "inconclusive")


def _no_false_proof(original, entry: str, mutated_modules, what: str) -> int:
    """No mutant is proved, except one that only changes a dead result or
    an equivalent one (:func:`_equivalent_mutant`)."""
    text = emit(original)
    n = 0
    for mu in mutated_modules:
        r = prove(text, emit(mu.module), entry=entry)
        if r.verdict == "proved":
            assert (mu.operator in ("constant", "swap") and dead_site(original, entry, mu.line)) or \
                _equivalent_mutant(original, mu.module, entry, r.reason, what), \
                f"{what}: mutant {mu.operator} at line {mu.line} ({mu.what}) proved: {r.reason}"
        n += 1
    return n


@pytest.mark.parametrize("kid", FAST_MUTANT_KERNELS)
def test_corpus_mutants_are_never_proved(kid):
    m, _ = _parsed(kid)
    assert _no_false_proof(m, KERNELS[kid].entry, mutants(m, KERNELS[kid].entry, per_operator=2), kid) > 0


@pytest.mark.slow
@pytest.mark.parametrize("kid", CORPUS_MUTANT_KERNELS)
def test_every_corpus_mutant_is_never_proved(kid):
    m, _ = _parsed(kid)
    entry = KERNELS[kid].entry
    _no_false_proof(m, entry, mutants(m, entry, per_operator=3), kid)
    # a mutant of a pass's (often reordered) output, against the original
    for p in ("reorder_cp", "reorder_il", "vec_ld", "split_ld"):
        out = changed_output(p, m)
        if out is not None:
            _no_false_proof_against(m, out, entry, f"{kid} after {p}")


def _no_false_proof_against(original, rewritten, entry: str, what: str) -> None:
    """Mutants of a pass's output, checked against the original."""
    text = emit(original)
    for mu in mutants(rewritten, entry, per_operator=2):
        r = prove(text, emit(mu.module), entry=entry)
        if r.verdict == "proved":
            assert (mu.operator in ("constant", "swap") and dead_site(rewritten, entry, mu.line)) or \
                _equivalent_mutant(original, mu.module, entry, r.reason, what), \
                f"{what}: mutant {mu.operator} at line {mu.line} ({mu.what}) proved: {r.reason}"


def test_dead_site_is_judged_by_liveness():
    m = parse((Path(__file__).parents[1] / "adversarial" / "bar_red_dag.ptx").read_text())
    lines = {ins.opcode + "." + ".".join(ins.modifiers): ins.line
             for _, _, ins in instruction_slots(m.entries[0].body)}
    assert dead_site(m, "bar_red_dag", lines["setp.eq.u32"])  # overwritten by bar.red before any read
    assert not dead_site(m, "bar_red_dag", lines["setp.lt.u32"])
    assert not dead_site(m, "bar_red_dag", lines["st.global.u32"])  # no result


@pytest.mark.parametrize("path", ADVERSARIAL, ids=lambda p: p.stem)
def test_adversarial_mutants_are_never_proved(path):
    m = parse(path.read_text(), path.name)
    for fn in m.entries:
        _no_false_proof(m, fn.name, mutants(m, fn.name, per_operator=3), path.stem)


@pytest.mark.slow
@pytest.mark.parametrize("path", ADVERSARIAL, ids=lambda p: p.stem)
def test_every_adversarial_mutant_site_is_never_proved(path):
    """Every site of every operator (not a spread of three), and mutants of
    each pass's output against the original."""
    m = parse(path.read_text(), path.name)
    for fn in m.entries:
        _no_false_proof(m, fn.name, mutants(m, fn.name, per_operator=10_000), path.stem)
        for p in pass_names():
            out = changed_output(p, m)
            if out is not None:
                _no_false_proof_against(m, out, fn.name, f"{path.stem} after {p}")


# ---------------------------------------------------------------------------
# differential: proved => the interpreter finds them equal

REWRITES = ("pass", "mutant", "swap", "delete")


def _rewrite(module, entry: str, kind: str, pick: int):
    """One random rewrite of ``module`` (None when it does not apply)."""
    if kind == "pass":
        names = pass_names()
        return changed_output(names[pick % len(names)], module)
    if kind == "mutant":
        mu = mutants(module, entry, per_operator=2)
        return mu[pick % len(mu)].module if mu else None
    m = module.copy()
    slots = [(items, i) for items, i, _ in instruction_slots(m.pick_entry(entry).body)]
    if not slots:
        return None
    items, i = slots[pick % len(slots)]
    if kind == "delete":
        if getattr(items[i], "opcode", None) in ("ret", "exit"):
            return None
        del items[i]
        return m
    if i + 1 >= len(items) or type(items[i + 1]) is not Instruction:
        return None
    items[i], items[i + 1] = items[i + 1], items[i]
    return m


def _differential(steps, kind: str, pick: int) -> str:
    from ptxopt.equivalence.interpret import verify

    text = kernel_from_steps(steps)
    m = parse(text)
    entry = m.entries[0].name
    cand = _rewrite(m, entry, kind, pick)
    if cand is None or emit(cand) == emit(m):
        return "unchanged"
    r = prove(emit(m), emit(cand), entry=entry)
    if r.verdict == "proved":
        res = verify(m, cand, entry, geometry=launch())
        # "inconclusive" is allowed: a change no launch ran (random guards) is not tested, so not refuted
        assert res.status in ("equal", "inconclusive"), \
            f"proved ({r.reason}) but the interpreter says {res.status}: {res.mismatch or res.error}\n{kind} {pick}\n{text}"
    return r.verdict


STEP = st.tuples(*[st.integers(0, 1 << 16)] * 5)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=4, max_size=20), st.sampled_from(REWRITES), st.integers(0, 1 << 16))
def test_proved_implies_interpreter_equal(steps, kind, pick):
    _differential(steps, kind, pick)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=4, max_size=32), st.sampled_from(REWRITES), st.integers(0, 1 << 16))
def test_proved_implies_interpreter_equal_more(steps, kind, pick):
    _differential(steps, kind, pick)


def test_the_differential_check_proves_something():
    """The random rewrites do get proved sometimes (else the check above is vacuous)."""
    rng = random.Random(7)
    verdicts = []
    for _ in range(30):
        steps = [tuple(rng.randrange(1 << 16) for _ in range(5)) for _ in range(12)]
        verdicts.append(_differential(steps, rng.choice(("swap", "pass")), rng.randrange(1 << 16)))
    assert "proved" in verdicts
