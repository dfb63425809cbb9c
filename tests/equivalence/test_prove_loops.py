"""The prover on unrolled loops (:mod:`ptxopt.equivalence.prove.loop_paths`).

``unroll_2``/``unroll_4`` of every test kernel with a constant-trip loop is
``proved`` (by executing whole paths: the block matcher cannot pair one
unrolled iteration with k original ones); mutants of the unrolled loop,
written as text edits of the pass's output -- a wrong trip bound, an
off-by-one step, a dropped or changed guard, two iterations swapped across a
loop-carried dependence -- are never proved. One test breaks a side
condition (the candidate's open branches must test the original's own
conditions) and shows a mutant is then proved: the check is load-bearing.
"""

from pathlib import Path

import pytest

from ptxopt import emit, parse
from ptxopt.equivalence.prove import loop_paths as loops, prove
from ptxopt.equivalence.verdict import Verdict
from ptxopt.passes.unroll import Unroll
from tests.passes.test_unroll import KERNEL

ROOT = Path(__file__).resolve().parents[1]
# every test and corpus kernel unroll_2/unroll_4 changes (the corpus: attention_small's 128-trip loop, beside a
# loop whose trip count depends on the thread)
LOOP_KERNELS = ["golden/unroll_2/applies.ptx", "golden/unroll_2/interacts.ptx", "golden/unroll_4/applies.ptx",
                "adversarial/unroll_shfl_loop.ptx", "../corpus/cuda/attention_small.ptx",
                "golden/unroll_4/refuses.ptx"]  # (a 6-trip loop: unroll_2 exact; unroll_4 takes the guarded form)

# KERNEL behind a thread guard: an open branch the paths fork on, before a constant loop
GUARDED = KERNEL.replace(".param .u64 in)", ".param .u64 in, .param .u32 n)").replace(
    "\tmov.u32 %r2, %tid.x;\n",
    "\tmov.u32 %r2, %tid.x;\n\tld.param.u32 %r3, [n];\n\tsetp.ge.u32 %p2, %r2, %r3;\n\t@%p2 bra L_done;\n").replace(
    "\tret;\n", "L_done:\n\tret;\n").replace(".reg .pred %p<2>;", ".reg .pred %p<3>;")


def unrolled(text: str, factor: int) -> str:
    out, rep = Unroll(factor=factor).apply(parse(text))
    assert rep.changed, rep
    return emit(out).replace(" \t", " ")  # the printer's "opcode<TAB>operands", as the edits below write it


@pytest.mark.parametrize("factor", (2, 4))
@pytest.mark.parametrize("name", ["test_unroll.KERNEL", "GUARDED", *LOOP_KERNELS])
def test_unrolled_constant_trip_loops_are_proved(name, factor):
    text = KERNEL if name == "test_unroll.KERNEL" else GUARDED if name == "GUARDED" else (ROOT / name).read_text()
    if name.endswith("refuses.ptx") and factor == 4:
        # 6 is not a multiple of 4: the guarded form declares fresh registers for
        # its look-ahead test; the inductive loop simulation proves it (prove.loop_sim)
        r = prove(text, unrolled(text, factor))
        assert r.verdict == Verdict.PROVED and "inductive simulation" in r.reason, r.reason
        return
    r = prove(text, unrolled(text, factor))
    assert r.verdict == Verdict.PROVED, r.reason
    blocks = [b.reason for d in r.functions for b in d.blocks]
    assert any(b.startswith(("loop: the loop run out", "whole paths")) for b in blocks), blocks


U2 = unrolled(KERNEL, 2)
UG = unrolled(GUARDED, 2)
TEST = "setp.lt.u32 %p1, %r1, 8;"
STEP = "add.s32 %r1, %r1, 1;"


def _second(text: str, old: str, new: str) -> str:
    """``text`` with the second occurrence of ``old`` (the second unrolled copy's) replaced."""
    i = text.index(old, text.index(old) + 1)
    return text[:i] + new + text[i + len(old):]


def _swapped(text: str) -> str:
    """The two iterations' accumulations in the other order: the second
    iteration's value is added first, across the loop-carried %f1."""
    body = text[text.index("L_top:\n") + 7:text.index("\t@%p1 bra L_top;")]
    swapped = ("\tld.global.f32 %f2, [%rd6];\n\tadd.s64 %rd6, %rd6, 128;\n\tadd.s32 %r1, %r1, 1;\n"
               "\tld.global.f32 %f3, [%rd6];\n\tfma.rn.f32 %f1, %f1, 0f3F000000, %f3;\n"
               "\tfma.rn.f32 %f1, %f1, 0f3F000000, %f2;\n\tadd.s64 %rd6, %rd6, 128;\n"
               "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 8;\n")
    return text.replace(body, swapped)


MUTANTS = {
    "wrong trip bound": (KERNEL, _second(U2, TEST, "setp.lt.u32 %p1, %r1, 10;")),
    "bound off by one": (KERNEL, _second(U2, TEST, "setp.le.u32 %p1, %r1, 8;")),
    "off-by-one step": (KERNEL, _second(U2, STEP, "add.s32 %r1, %r1, 2;")),
    "dropped guard": (KERNEL, U2.replace("@%p1 bra", "bra")),
    "negated guard": (KERNEL, U2.replace("@%p1 bra", "@!%p1 bra")),
    "branch on the first copy": (KERNEL, U2.replace("\t@%p1 bra L_top;\n", "").replace(
        TEST, TEST + "\n\t@%p1 bra L_top;", 1)),
    "swapped iterations (loop-carried %f1)": (KERNEL, _swapped(U2)),
    "changed thread guard": (GUARDED, UG.replace("setp.ge.u32 %p2, %r2, %r3;", "setp.gt.u32 %p2, %r2, %r3;")),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutants_of_the_unrolled_loop_are_never_proved(name):
    original, bad = MUTANTS[name]
    assert bad != unrolled(original, 2)
    r = prove(original, bad)
    assert r.verdict != Verdict.PROVED, name
    assert "whole paths:" in r.reason  # the path proof ran and refused, with its reason


def test_an_equivalent_exit_test_is_proved():
    """The second copy's counter is always even, so ``< 7`` exits exactly when
    ``< 8`` does: the same paths, proved (the path proof decides by value, not text)."""
    assert prove(KERNEL, _second(U2, TEST, "setp.lt.u32 %p1, %r1, 7;")).verdict == Verdict.PROVED


def test_the_open_branch_check_is_load_bearing(monkeypatch):
    """Replace the candidate's decision rule by a positional replay of the
    original's decisions (a plausible bug: it never checks that the candidate
    tests the same condition): the changed-guard mutant is then 'proved'."""
    original, bad = MUTANTS["changed thread guard"]
    assert prove(original, bad).verdict != Verdict.PROVED

    def replay(run):
        it = iter([v for _, v in run.decisions])
        return lambda p, neg: next(it) != neg

    monkeypatch.setattr(loops, "decide_like", replay)
    # (parsed modules: prove() memoises text pairs, and this pair's honest verdict is memoised above)
    assert prove(parse(original), parse(bad)).verdict == Verdict.PROVED  # what the real check prevents


SIGNED = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r2, 0;
	mov.s32 %r1, -4;
L_top:
	add.s32 %r2, %r2, 3;
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, 4;
	@%p1 bra L_top;
	st.global.u32 [%rd2], %r2;
	ret;
}
"""


def test_constant_exit_tests_use_the_comparison_signedness():
    """-4 counts up to 4 in 8 signed iterations (1 if compared unsigned):
    unrolling by 2 and 4 is proved, a candidate that runs the body once is not."""
    for f in (2, 4):
        assert prove(SIGNED, unrolled(SIGNED, f)).verdict == Verdict.PROVED
    once = SIGNED.replace("\t@%p1 bra L_top;\n", "")
    assert prove(SIGNED, once).verdict != Verdict.PROVED
    as_unsigned = SIGNED.replace("setp.lt.s32", "setp.lt.u32")
    assert prove(SIGNED, as_unsigned).verdict != Verdict.PROVED


def test_runtime_trip_counts_stay_inconclusive():
    """A loop bounded by a parameter forks at every exit test: never proved here."""
    t = KERNEL.replace(".param .u64 in)", ".param .u64 in, .param .u32 n)").replace(
        "\tmov.u32 %r1, 0;\n", "\tmov.u32 %r1, 0;\n\tld.param.u32 %r3, [n];\n").replace(
        "setp.lt.u32 %p1, %r1, 8;", "setp.lt.u32 %p1, %r1, %r3;")
    body = t[t.index("L_top:\n") + 7:t.index("\t@%p1 bra L_top;")]
    twice = t.replace(body, body + body)
    r = prove(t, twice)
    assert r.verdict != Verdict.PROVED


@pytest.mark.parametrize("key,a,b,want", [
    ("setp.lt.s32", 0xFFFFFFFF, 0, 1), ("setp.lt.u32", 0xFFFFFFFF, 0, 0), ("setp.lo.s32", 0xFFFFFFFF, 0, 0),
    ("setp.hi.s32", 0xFFFFFFFF, 0, 1), ("setp.ge.s64", -1, 0, 0), ("setp.ge.u64", -1, 0, 1),
    ("setp.eq.b32", 0x100000000 + 5, 5, 1), ("setp.lt.b32", 1, 2, None), ("setp.ne.s16", 0x10000, 0, 0),
    ("setp.lt.f32", 1, 2, None), ("add.s32", 0xFFFFFFFF, 1, 0), ("shr.u32", 8, 1, None),
])
def test_constants_follow_the_integer_semantics(key, a, b, want):
    """Constant exit tests: signed/unsigned as the SMT encoder's table says,
    at the type's width; anything not modelled is unknown (None), never a guess."""
    from ptxopt.equivalence.prove.values import Graph

    g = Graph()
    k = loops.Constants(g)
    assert k.of(g.node("op", key, g.const(a), g.const(b))) == want


# KERNEL's loop entered from two places: %r1 starts at 0, or at 3 when n != 0 (5 iterations: odd)
TWO_ENTRIES = KERNEL.replace(".param .u64 in)", ".param .u64 in, .param .u32 n)").replace(
    "\tmov.u32 %r1, 0;\n",
    "\tld.param.u32 %r3, [n];\n\tsetp.eq.u32 %p2, %r3, 0;\n\tmov.u32 %r1, 0;\n\t@%p2 bra L_top;\n"
    "\tmov.u32 %r1, 3;\n").replace(".reg .pred %p<2>;", ".reg .pred %p<3>;")


def test_the_loop_start_must_be_one_constant_on_every_entry(monkeypatch):
    """Unrolled by 2 (text edit: the pass refuses, the trip count is not
    constant), the loop runs 6 times where the original runs 5 when n != 0.
    Never proved; if the region proof took the start from one entry only
    (a plausible bug, patched in below), it would be 'proved'."""
    body = KERNEL[KERNEL.index("L_top:\n") + 7:KERNEL.index("\t@%p1 bra L_top;")]
    bad = TWO_ENTRIES.replace(body, body + body)
    assert prove(TWO_ENTRIES, bad).verdict != Verdict.PROVED
    assert prove(TWO_ENTRIES, TWO_ENTRIES.replace("mov.u32 %r1, 3;", "mov.u32 %r1, 4;").replace(body, body + body),
                 ).verdict != Verdict.PROVED  # (equivalent, but the start is not one constant: not proved here)

    real = loops.entry_constants

    def first_entry_only(so, graph, oracle, k, b, outside, live):
        return real(so, graph, oracle, k, b, outside[:1], live)

    monkeypatch.setattr(loops, "entry_constants", first_entry_only)
    assert prove(parse(TWO_ENTRIES), parse(bad)).verdict == Verdict.PROVED  # what the real check prevents


def _split(text: str) -> str:
    """``text`` with a jump to the next line before the loop: one block more,
    so the block matcher fails and the whole-path proof decides."""
    return text.replace("L_top:\n", "\tbra L_pre;\nL_pre:\nL_top:\n", 1)


@pytest.fixture
def original_path_runs(monkeypatch):
    """How many times the original's paths were run (each call runs all of them)."""
    from ptxopt.equivalence.prove import clear_memo

    calls = []
    real = loops._original_paths

    def counted(ex):
        calls.append(ex)
        return real(ex)

    monkeypatch.setattr(loops, "_original_paths", counted)
    clear_memo()
    yield calls
    clear_memo()


def test_the_originals_paths_run_once_for_many_candidates(original_path_runs):
    """A search proves many candidates against one original: its paths (the
    dearer half of a path proof) run once, and every verdict and reason is
    the one a fresh prover gives (proved ones and refused mutants alike)."""
    from ptxopt.equivalence.prove import clear_memo

    candidates = [_split(KERNEL), _split(U2), _split(unrolled(KERNEL, 4)),
                  *(bad for original, bad in MUTANTS.values() if original is KERNEL)]
    remembered = [prove(KERNEL, c) for c in candidates]
    assert len(original_path_runs) == 1
    fresh = []
    for c in candidates:
        clear_memo()
        fresh.append(prove(KERNEL, c))
    assert len(original_path_runs) == 1 + len(candidates)  # each of them reached the path proof
    assert [(r.verdict, r.reason) for r in remembered] == [(r.verdict, r.reason) for r in fresh]
    assert [r.verdict for r in remembered[:3]] == [Verdict.PROVED] * 3
    assert all("whole paths" in r.reason for r in remembered[:3])
    assert all(r.verdict != Verdict.PROVED for r in remembered[3:])


def test_an_original_past_the_path_budget_gives_up_once(original_path_runs, monkeypatch):
    """Why the original's paths cannot be run is the original's alone: the
    next candidate gets the same reason without running them again."""
    monkeypatch.setattr(loops, "MAX_PATHS", 1)  # GUARDED forks once: 2 paths
    first, second = prove(GUARDED, _split(UG)), prove(GUARDED, _split(unrolled(GUARDED, 4)))
    assert len(original_path_runs) == 1
    for r in (first, second):
        assert r.verdict != Verdict.PROVED and "more than 1 paths" in r.reason, r.reason


def test_the_candidate_continues_from_the_originals_budget(original_path_runs, monkeypatch):
    """The remembered paths carry the steps they took of the proof's budget:
    a later candidate's run gets only what is left, as when both ran in one
    proof (a memo that handed it a fresh budget would prove these)."""
    from ptxopt.equivalence.prove import clear_memo, original_memo

    assert prove(KERNEL, _split(U2)).verdict == Verdict.PROVED
    (used,) = [e.paths.steps for e in original_memo._ENTRIES.get().values() if e.paths is not None]
    assert used > 0
    clear_memo()
    monkeypatch.setattr(loops, "TOTAL_STEPS", used + 1)  # the original's paths fit, a candidate's do not
    first, second = prove(KERNEL, _split(U2)), prove(KERNEL, _split(unrolled(KERNEL, 4)))
    assert len(original_path_runs) == 2  # the second proof ran no original path
    for r in (first, second):
        assert r.verdict != Verdict.PROVED and f"more than {used + 1} instructions in all" in r.reason, r.reason
