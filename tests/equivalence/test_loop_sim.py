"""The inductive loop simulation (ptxopt.equivalence.prove.loop_sim) and the
gates that require a structural rewrite to be proved (``ptxopt run``,
``ptxopt.passes.passmanager.optimize``, ``ptxopt.optimize``).

The unrolled kernels here are written by :func:`guarded` (the guarded
form of an unrolled loop, by hand, independent of the pass), with the knobs
an unroller gets wrong: how far ahead the guard looks, the base offset of
the value it tests, its comparison, the guard itself, a lost instruction in a
copy. Which settings are right is known from the loop's semantics, so the
table asserts ``proved`` exactly for the right ones.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ptxopt.equivalence.prove import clear_memo, prove
from ptxopt.equivalence.prove.smt import solver as solvers

pytestmark = pytest.mark.skipif(not solvers.available(), reason="no SMT solver installed")

HEAD = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(
	.param .u64 p,
	.param .u32 n
)
{
"""
DECLS = """	.reg .pred %p<2>;
	.reg .f32 %f<3>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
"""
PRE = """	ld.param.u64 %rd1, [p];
	ld.param.u32 %r2, [n];
	ld.global.f32 %f2, [%rd1];
	mov.f32 %f1, 0f00000000;
	mov.u32 %r1, 0;
L_top:
"""
BODY = ["add.f32 %f1, %f1, %f2;", "add.s32 %r1, %r1, 1;", "setp.lt.u32 %p1, %r1, %r2;"]
TAIL = """	@%p1 bra L_top;
	st.global.f32 [%rd1], %f1;
	st.global.u32 [%rd1+4], %r1;
	ret;
}
"""
ORIGINAL = HEAD + DECLS + PRE + "".join(f"\t{x}\n" for x in BODY) + TAIL


def guarded(k: int, *, base: int = 0, ahead: int | None = None, cmp: str = "lt", guard: bool = True,
            drop: int | None = None) -> str:
    """The original's loop unrolled ``k`` times in the guarded form:
    ``t0 = i + base; t1 = t0 + ahead; q = t1 CMP n && t1 >= t0``; ``@!q`` runs
    one iteration, else ``k`` copies. ``drop``: the index of a copied body
    instruction left out of the first copy."""
    ahead = k - 1 if ahead is None else ahead
    check = [f"add.u32 %t0, %r1, {base};", f"add.u32 %t1, %t0, {ahead};", f"setp.{cmp}.u32 %q0, %t1, %r2;",
             "setp.ge.u32 %q1, %t1, %t0;", "and.pred %q0, %q0, %q1;"]
    if guard:
        check.append("@!%q0 bra L_top_last;")
    copies = []
    for c in range(k - 1):
        copies += [x for j, x in enumerate(BODY) if not (c == 0 and j == drop)]
    lines = check + copies + ["L_top_last:"] + BODY
    decls = "\t.reg .b32 %t<2>;\n\t.reg .pred %q<2>;\n" + DECLS
    return HEAD + decls + PRE + "".join(x + "\n" if x.endswith(":") else f"\t{x}\n" for x in lines) + TAIL


def _proved(candidate: str, original: str = ORIGINAL) -> tuple[bool, str]:
    clear_memo()
    r = prove(original, candidate)
    return r.proved, r.reason


@pytest.mark.parametrize("k", [2, 4, 8])
def test_a_guarded_unroll_with_a_runtime_trip_count_is_proved(k):
    ok, why = _proved(guarded(k))
    assert ok, why
    assert "inductive simulation" in why


WRONG = {  # class -> the knobs that make it (each wrong for some trip count)
    "guard one step short": dict(ahead=-2),
    "remainder base one behind": dict(base=-1),
    "guard compare weakened to <=": dict(cmp="le"),
    "guard dropped": dict(guard=False),
    "copy loses its accumulate": dict(drop=0),
    "copy loses its induction step": dict(drop=1),
}


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("cls", sorted(WRONG))
def test_a_wrong_unroll_is_never_proved(cls, k):
    knobs = dict(WRONG[cls])
    if "ahead" in knobs:
        knobs["ahead"] = k + knobs["ahead"]
    ok, why = _proved(guarded(k, **knobs))
    assert not ok, f"{cls} (k={k}) proved: {why}"


def test_a_conservative_guard_is_still_right():
    # looking one step further than needed runs the copies less often: still every iteration, in order
    ok, why = _proved(guarded(4, ahead=4))
    assert ok, why


def test_the_loop_mutants_of_the_pass_are_never_proved():
    from ptxopt import emit, parse
    from ptxopt.testing.loop_mutants import loop_mutants

    mutants = loop_mutants(parse(ORIGINAL), "k", 4)
    assert mutants, "unroll_4 changes this loop: there are mutants to check"
    for mu in mutants:
        ok, why = _proved(emit(mu.module))
        assert not ok, f"{mu.operator} proved: {why}"


def test_a_solver_timeout_is_inconclusive_with_the_reason(monkeypatch):
    from ptxopt.equivalence.prove import loop_sim

    monkeypatch.setattr(loop_sim.solvers, "solve",
                        lambda text, ms, *a: solvers.Answer("unknown", note="bitwuzla: unknown (time limit)"))
    clear_memo()
    r = prove(ORIGINAL, guarded(4))
    assert r.verdict == "inconclusive"
    assert "solver timeout" in r.reason


def test_a_candidate_only_register_live_at_the_header_is_refused():
    # the check's %t0 is read at the header before it is written: not the identity relation
    bad = guarded(2).replace("add.u32 %t0, %r1, 0;", "add.u32 %t0, %t0, 0;")
    ok, why = _proved(bad)
    assert not ok
    assert "%t0" in why


# -- the gates --------------------------------------------------------------------------


def _wrong_unroll(monkeypatch):
    """Make ``unroll`` write a wrong loop: its result, then the guard's value one behind."""
    from ptxopt.passes.unroll import Unroll

    real = Unroll.run_function

    def broken(self, fn, report, module, analyses=None):
        from ptxopt import emit, parse

        real(self, fn, report, module, analyses)
        text = emit(module)
        import re

        wrong = re.sub(r"(add\.[us]32\s+(%unroll\w*0), %r1), 0;", r"\1, -1;", text)
        assert wrong != text
        fn.body.items[:] = parse(wrong).pick_entry(fn.name).body.items
    monkeypatch.setattr(Unroll, "run_function", broken)


@pytest.fixture
def kernel(tmp_path):
    p = tmp_path / "k.ptx"
    p.write_text(ORIGINAL)
    return p


def test_run_writes_a_proved_unroll(kernel):
    from ptxopt.cli import cli

    r = CliRunner().invoke(cli, ["run", "--no-compile-check", "-p", "unroll_4", str(kernel)])
    assert r.exit_code == 0, r.output
    assert "L_top_last" in r.stdout
    assert "ptxopt: proved: unroll_4" in r.stderr


def test_run_refuses_an_unproved_unroll_unless_allowed(kernel, monkeypatch, tmp_path):
    from ptxopt.cli import cli

    _wrong_unroll(monkeypatch)
    out = tmp_path / "out.ptx"
    r = CliRunner().invoke(cli, ["run", "--no-compile-check", "-p", "unroll_4", str(kernel), "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert not out.exists()
    assert "not proved" in r.stderr and "--allow-unchecked" in r.stderr
    r = CliRunner().invoke(cli, ["run", "--no-compile-check", "--allow-unchecked", "-p", "unroll_4", str(kernel),
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.exists()
    assert "NOT PROVED" in r.stderr


def test_the_unchecked_entry_point_refuses_a_structural_rewrite():
    from ptxopt.passes.passmanager import UnprovedStructuralRewrite
    from ptxopt.passes.passmanager import run_passes_unchecked as optimize

    with pytest.raises(UnprovedStructuralRewrite, match="allow_unchecked"):
        optimize(ORIGINAL, "unroll_4")
    assert "L_top_last" in optimize(ORIGINAL, "unroll_4", allow_unchecked=True)
    assert optimize(ORIGINAL, "cache_cg") is not None  # not structural: as before


@pytest.mark.slow
def test_the_checked_entry_point_applies_only_a_proved_unroll(monkeypatch):
    import ptxopt

    good = ptxopt.optimize(ORIGINAL, "unroll_4", estimate=False)
    assert good.changed and str(good.verdict) == "proved", good.reason
    _wrong_unroll(monkeypatch)
    for verify in (True, False):
        bad = ptxopt.optimize(ORIGINAL, "unroll_4", estimate=False, verify=verify)
        assert not bad.changed and bad.ptx == ORIGINAL, bad.reason


# -- a reproducer: the exit test reads the value computed after it (the previous iteration's) ---------

PREV = HEAD + """	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r2, [n];
	ld.global.u32 %r4, [%rd1+8];
	mov.u32 %r3, 0;
	mov.u32 %r1, 0;
L_top:
"""
PREV_BODY = ["add.s32 %r3, %r3, %r1;", "setp.lt.s32 %p1, %r4, %r2;", "add.s32 %r4, %r1, 1;", "add.s32 %r1, %r1, 1;"]
PREV_TAIL = TAIL.replace("st.global.f32 [%rd1], %f1;", "st.global.u32 [%rd1], %r3;")
PREV_ORIGINAL = PREV + "".join(f"\t{x}\n" for x in PREV_BODY) + PREV_TAIL


def test_an_unroll_that_guards_on_the_wrong_iterations_value_is_not_proved():
    # what unroll_2 wrote before its loop facts came from def-use: the guard tests i+1 < n, but the
    # exit test after copy 1 reads %r4 as the *previous* iteration left it (on the first trip: a
    # value loaded before the loop), so the copies can run past the exit
    check = ["add.s32 %t0, %r1, 0;", "add.s32 %t1, %t0, 1;", "setp.lt.s32 %q0, %t1, %r2;",
             "setp.ge.s32 %q1, %t1, %t0;", "and.pred %q0, %q0, %q1;", "@!%q0 bra L_top_last;"]
    lines = check + PREV_BODY + ["L_top_last:"] + PREV_BODY
    decls = "\t.reg .b32 %t<2>;\n\t.reg .pred %q<2>;\n"
    wrong = (PREV.replace("{\n", "{\n" + decls, 1) + "".join(x + "\n" if x.endswith(":") else f"\t{x}\n"
                                                              for x in lines) + PREV_TAIL)
    ok, why = _proved(wrong, PREV_ORIGINAL)
    assert not ok, why
    assert "exit test" in why


# -- random loop shapes x random guarded unrolls: every proved pair agrees in the interpreter ----------

XHEAD = ".version 8.0\n.target sm_89\n.address_size 64\n\n.visible .entry k(.param .u64 out, .param .u32 a, " \
        ".param .u32 n)\n{\n"
XDECL = "\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<2>;\n"
XPRE = ["ld.param.u64 %rd1, [out];", "ld.param.u32 %r1, [a];", "ld.param.u32 %r2, [n];", "mov.u32 %r3, 0;",
        "mov.u32 %r4, 0;"]


def _shape(rng):
    """A counted loop: step, type, continuation compare, and where the test reads the IV
    (after its update, before it, through a copy, one ahead of it)."""
    step = rng.choice([1, 2, 3, -1, -2])
    ty = rng.choice(["s32", "u32"])
    cmp = rng.choice(["lt", "le", "ne"] if step > 0 else ["gt", "ge", "ne"])
    upd, acc = f"add.s32 %r1, %r1, {step};", "add.s32 %r3, %r3, %r1;"
    body = rng.choice([
        [acc, upd, f"setp.{cmp}.{ty} %p1, %r1, %r2;"],
        [acc, f"setp.{cmp}.{ty} %p1, %r1, %r2;", upd],
        [acc, f"add.s32 %r4, %r1, {step};", "mov.u32 %r1, %r4;", f"setp.{cmp}.{ty} %p1, %r4, %r2;"],
        [acc, f"add.s32 %r4, %r1, {step + 1};", upd, f"setp.{cmp}.{ty} %p1, %r4, %r2;"],
    ])
    return step, ty, cmp, body


def _xtext(decls, loop):
    tail = ["@%p1 bra L_top;", "st.global.u32 [%rd1], %r3;", "st.global.u32 [%rd1+4], %r1;", "ret;"]
    return XHEAD + decls + "".join(x + "\n" if x.endswith(":") else f"\t{x}\n"
                                   for x in XPRE + ["L_top:"] + loop + tail) + "}\n"


def _xguarded(body, k, ty, cmp, step, base, ahead):
    chk = [f"add.{ty} %t0, %r1, {base};", f"add.{ty} %t1, %t0, {ahead * step};"]
    if cmp == "ne":
        a, b = ("%r2", "%t0") if step > 0 else ("%t0", "%r2")
        chk += [f"sub.u32 %t1, {a}, {b};", f"setp.gt.u32 %q0, %t1, {ahead * abs(step)};"]
    else:
        chk += [f"setp.{cmp}.{ty} %q0, %t1, %r2;", f"setp.{'ge' if step > 0 else 'le'}.{ty} %q1, %t1, %t0;",
                "and.pred %q0, %q0, %q1;"]
    return chk + ["@!%q0 bra L_top_last;"] + body * (k - 1) + ["L_top_last:"] + body


@pytest.mark.slow
def test_every_proved_random_unroll_agrees_in_the_interpreter():
    """No proved pair differs on a launch, while the same launches do show some
    unproved pairs wrong (so they can see a wrong unroll at all)."""
    import random

    from ptxopt.equivalence.interpret import verify
    from ptxopt.equivalence.launch import Launch, Origin

    rng = random.Random(1)
    proved = refused = ran = caught = 0
    # first a guard one step short (wrong at n = start + 1), then random shapes and knobs
    cases = [(1, "s32", "lt", ["add.s32 %r3, %r3, %r1;", "add.s32 %r1, %r1, 1;", "setp.lt.s32 %p1, %r1, %r2;"],
              2, 0, 0)]
    for _ in range(13):
        step, ty, cmp, body = _shape(rng)
        k = rng.choice([2, 4])
        cases.append((step, ty, cmp, body, k, rng.choice([-2 * step, -step, 0, step, 2 * step]),
                      rng.choice([k - 2, k - 1, k])))
    for step, ty, cmp, body, k, base, ahead in cases:
        orig = _xtext(XDECL, body)
        cand = _xtext("\t.reg .b32 %t<2>;\n\t.reg .pred %q<2>;\n" + XDECL,
                      _xguarded(body, k, ty, cmp, step, base, ahead))
        ok, why = _proved(cand, orig)
        proved, refused = proved + ok, refused + (not ok)
        wrong = False
        for a0 in (0, 0xFFFFFFF8, 0xFFFFFFFE):
            for d in (0, 1, 2, 3, 5, 9):
                n = (a0 + d * (1 if step > 0 else -1)) % (1 << 32)
                launch = Launch((1, 1, 1), (1, 1, 1), scalars={"a": a0, "n": n}, origin=Origin.CONTRACT,
                                source="test")
                try:
                    res = verify(orig, cand, "k", launch=launch, extra_launches=False, trials=1, max_steps=3000)
                except Exception:  # noqa: BLE001 - the original runs past the step budget here: no evidence
                    continue
                assert not (ok and res.status == "mismatch"), (body, k, base, ahead, a0, n, why)
                ran += ok and res.status == "equal"
                wrong = wrong or res.status == "mismatch"
        caught += wrong
    assert proved >= 3 and refused >= 3 and ran >= 15 and caught >= 1, (proved, refused, ran, caught)


def test_an_unmodelled_integer_operation_is_compared_as_a_function_of_its_operands():
    # prmt is not in the SMT encoding's integer semantics: the same prmt on the same bits is equal,
    # another selector in one copy (its result carried round the loop) is not proved
    def with_prmt(text: str, selector: str = "0x3210", first_only: bool = False) -> str:
        acc = "\tadd.f32 %f1, %f1, %f2;\n"
        text = text.replace("\tst.global.u32 [%rd1+4], %r1;\n",
                            "\tst.global.u32 [%rd1+4], %r1;\n\tst.global.u32 [%rd1+8], %r0;\n")
        text = text.replace("\tmov.u32 %r1, 0;\n", "\tmov.u32 %r1, 0;\n\tmov.u32 %r0, 7;\n")
        prmt = "\tprmt.b32 %r0, %r1, %r0, {};\n"
        if first_only:
            text = text.replace(acc, acc + prmt.format(selector), 1)
            selector = "0x3210"
        return text.replace(acc + "\tadd.s32", acc + prmt.format(selector) + "\tadd.s32")
    original = with_prmt(ORIGINAL)
    ok, why = _proved(with_prmt(guarded(4)), original)
    assert ok, why
    ok, why = _proved(with_prmt(guarded(4), "0x3201", first_only=True), original)
    assert not ok, why


NESTED = HEAD.replace(".param .u32 n\n", ".param .u32 n,\n\t.param .u32 m\n") + """	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r2, [n];
	ld.param.u32 %r5, [m];
	mov.u32 %r3, 0;
	mov.u32 %r4, 0;
L_outer:
	mov.u32 %r1, 0;
L_inner:
INNER	@%p1 bra L_inner;
	add.s32 %r4, %r4, 1;
	setp.lt.u32 %p2, %r4, %r5;
	@%p2 bra L_outer;
	st.global.u32 [%rd1], %r3;
	ret;
}
"""
INNER = ["add.s32 %r3, %r3, %r1;", "add.s32 %r1, %r1, 1;", "setp.lt.u32 %p1, %r1, %r2;"]


def _nested(k: int | None, ahead: int | None = None) -> str:
    """NESTED, its inner loop unrolled ``k`` times in the guarded form (None: as it is)."""
    if k is None:
        return NESTED.replace("INNER", "".join(f"\t{x}\n" for x in INNER))
    check = ["add.u32 %t0, %r1, 0;", f"add.u32 %t1, %t0, {k - 1 if ahead is None else ahead};",
             "setp.lt.u32 %q0, %t1, %r2;", "setp.ge.u32 %q1, %t1, %t0;", "and.pred %q0, %q0, %q1;",
             "@!%q0 bra L_inner_last;"]
    lines = check + INNER * (k - 1) + ["L_inner_last:"] + INNER
    text = NESTED.replace("INNER", "".join(x + "\n" if x.endswith(":") else f"\t{x}\n" for x in lines))
    return text.replace("\t.reg .pred %p<3>;", "\t.reg .b32 %t<2>;\n\t.reg .pred %q<2>;\n\t.reg .pred %p<3>;")


def test_an_inner_loop_unrolled_inside_an_outer_loop_is_proved():
    ok, why = _proved(_nested(4), _nested(None))
    assert ok, why
    ok, why = _proved(_nested(4, ahead=2), _nested(None))  # one step short
    assert not ok, why


def test_the_exact_form_is_proved_and_a_dropped_copy_is_not():
    const = [x.replace("%r2;", "8;") for x in BODY]
    original = ORIGINAL.replace(BODY[2], const[2])
    pre, tail = original.split("L_top:\n")[0] + "L_top:\n", TAIL

    def exact(copies: int) -> str:
        return pre + "".join(f"\t{x}\n" for x in const * copies) + tail
    ok, why = _proved(exact(4), original)
    assert ok, why
    ok, why = _proved(exact(3), original)  # 3 of 4 copies: a trip past 8 iterations
    assert not ok, why


# prefetches in a simulated loop: one of the address an original access makes, under the same guard, is covered
# without a solver query (prefetch_L1 after unroll_2 on gen_conv2d_08 timed out at 4 s a query on the address
# arithmetic, inconclusive); a guard that differs or another address still goes to the solver and is refused
_LD = "\tld.global.f32 %f2, [%rd1];\n"
_SET = "\tmov.f32 %f2, 0f00000000;\n\tsetp.ne.u32 %p0, %r2, 0;\n"
_GLD = _SET + "\t@%p0 ld.global.f32 %f2, [%rd1];\n"
PREFETCHES = {  # name: (original, candidate, proved)
    "at the load's address": (ORIGINAL, guarded(2).replace(_LD, "\tprefetch.global.L1 [%rd1];\n" + _LD), True),
    "under the load's guard": (ORIGINAL.replace(_LD, _GLD), guarded(2).replace(
        _LD, _SET + "\t@%p0 prefetch.global.L1 [%rd1];\n\t@%p0 ld.global.f32 %f2, [%rd1];\n"), True),
    "of a guarded load, unguarded": (ORIGINAL.replace(_LD, _GLD), guarded(2).replace(
        _LD, _SET + "\tprefetch.global.L1 [%rd1];\n\t@%p0 ld.global.f32 %f2, [%rd1];\n"), False),
    "under the negated guard": (ORIGINAL.replace(_LD, _GLD), guarded(2).replace(
        _LD, _SET + "\t@!%p0 prefetch.global.L1 [%rd1];\n\t@%p0 ld.global.f32 %f2, [%rd1];\n"), False),
    "at an address nothing reads": (ORIGINAL, guarded(2).replace(_LD, "\tprefetch.global.L1 [%rd1+64];\n" + _LD),
                                    False),
}


@pytest.mark.parametrize("name", list(PREFETCHES))
def test_a_prefetch_is_covered_only_by_an_access_that_runs_with_it(name):
    original, candidate, want = PREFETCHES[name]
    proved, why = _proved(candidate, original)
    assert proved is want, why
    if not want:
        assert "covered by an original access fails" in why, why


def test_a_prefetch_of_a_loads_address_is_proved_on_a_conv2d():
    """gen_conv2d_08's unroll_2,prefetch_L1: proved (before, the covering query on its address arithmetic
    ran out of the solver's 4 s and the candidate was inconclusive)."""
    from ptxopt.kernels.corpus import get
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.ptx.parser import parse

    spec = get("gen_conv2d_08")
    m = parse(spec.ptx_text())
    out = PassManager(Pipeline.parse("unroll_2,prefetch_L1")).run(m).module
    clear_memo()
    r = prove(m, out, entry=spec.entry)
    assert r.proved, r.reason
