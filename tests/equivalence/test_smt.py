"""The SMT decision procedure (:mod:`ptxopt.equivalence.prove.smt`): a correct
strength reduction is ``proved`` through the solver, a wrong one never is and
the solver's counterexample is shown; the encoding's carry and shift
semantics can fail; and the alias facts the prover relies on (shared with the
SMT check's CFG matching, not its value semantics) are checked against the
interpreter's actual addresses."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.equivalence import Verdict, decide
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.prove import prove
from ptxopt.equivalence.prove.smt import recheck, solver

pytestmark = pytest.mark.skipif(not solver.available(), reason="no SMT solver installed")

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [p];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r3, %tid.x;
\tmul.wide.u32 %rd3, %r3, 8;
\tadd.s64 %rd4, %rd2, %rd3;
\tld.global.u32 %r1, [%rd4];
BODY
\tst.global.u32 [%rd4+4], %r2;
\tret;
}
"""


def k(body: str) -> str:
    return KERNEL.replace("BODY", body)


MUL = k("\tmul.lo.s32 %r2, %r1, 128;")
SHL7 = k("\tshl.b32 %r2, %r1, 7;")
SHL6 = k("\tshl.b32 %r2, %r1, 6;")


def _decide(a: str, b: str):
    return decide(parse(a), parse(b), "k")


def test_strength_reduction_is_proved_through_the_solver():
    d = _decide(MUL, SHL7)
    assert d.verdict is Verdict.PROVED, d.note
    assert "SMT solver" in d.note and solver.DEFAULT in d.note
    assert recheck(MUL, SHL7).status == "equal"


def test_without_the_solver_it_is_not_proved(monkeypatch):
    monkeypatch.setattr(solver, "available", lambda name=solver.DEFAULT: False)
    r = prove(parse(MUL), parse(SHL7), entry="k")
    assert r.verdict == "inconclusive" and "stores differ" in r.reason


def test_the_wrong_shift_is_never_proved_and_the_counterexample_is_shown():
    r = prove(parse(MUL), parse(SHL6), entry="k")
    assert r.verdict == "inconclusive"
    assert "solver: block 0 (entry) differs" in r.reason and "writes" in r.reason, r.reason
    d = _decide(MUL, SHL6)
    assert d.verdict is not Verdict.PROVED
    assert "solver: block 0 (entry) differs" in d.note
    rc = recheck(MUL, SHL6)
    assert rc.status == "differ"
    # the counterexample: the value stored, both ways, and the loaded value that makes them differ
    assert "store" in rc.reason and "in the candidate" in rc.reason and "load" in rc.reason


def test_verify_prove_cli_cites_the_solver(tmp_path):
    po, p7, p6 = tmp_path / "o.ptx", tmp_path / "c7.ptx", tmp_path / "c6.ptx"
    po.write_text(MUL)
    p7.write_text(SHL7)
    p6.write_text(SHL6)
    args = ["--prove", "--json", "--kernel", "k", "--grid", "1,1,1", "--block", "32,1,1", "--trials", "1"]
    r = CliRunner().invoke(cli, ["verify", str(po), str(p7), *args], catch_exceptions=False)
    d = json.loads(r.output)
    assert d["status"] == "proved" and "SMT solver" in d["prove"]["reason"], r.output
    r = CliRunner().invoke(cli, ["verify", str(po), str(p6), *args], catch_exceptions=False)
    d = json.loads(r.output)
    assert d["prove"]["verdict"] != "proved" and "differs" in d["prove"]["reason"]
    assert d["status"] != "proved"


@pytest.mark.parametrize("a,b,equal", [
    # 64-bit add as a 32-bit carry chain (the carry flag is modelled, not assumed)
    ("add.s64 %rd5, %rd4, %rd3;",
     ("mov.b64 {%r4, %r5}, %rd4; mov.b64 {%r6, %r7}, %rd3; add.cc.u32 %r4, %r4, %r6; addc.u32 %r5, %r5, %r7;"
      " mov.b64 %rd5, {%r4, %r5};"), True),
    # ... and without the carry-in: wrong
    ("add.s64 %rd5, %rd4, %rd3;",
     ("mov.b64 {%r4, %r5}, %rd4; mov.b64 {%r6, %r7}, %rd3; add.cc.u32 %r4, %r4, %r6; add.u32 %r5, %r5, %r7;"
      " mov.b64 %rd5, {%r4, %r5};"), False),
    # a borrow chain: sub.cc sets the flag on a borrow, subc subtracts it
    ("sub.s64 %rd5, %rd4, %rd3;",
     ("mov.b64 {%r4, %r5}, %rd4; mov.b64 {%r6, %r7}, %rd3; sub.cc.u32 %r4, %r4, %r6; subc.u32 %r5, %r5, %r7;"
      " mov.b64 %rd5, {%r4, %r5};"), True),
    # shifts: an amount of at least the width gives 0 (shl) or the sign (shr.s)
    ("shl.b32 %r2, %r1, 33;", "mov.u32 %r2, 0;", True),
    ("shr.s32 %r2, %r1, 40;", "shr.s32 %r2, %r1, 31;", True),
    ("shr.u32 %r2, %r1, 40;", "shr.s32 %r2, %r1, 31;", False),
    # mul.hi is the high half of the double-width product; signedness matters
    ("mul.hi.u32 %r2, %r1, 16;", "shr.u32 %r2, %r1, 28;", True),
    ("mul.hi.s32 %r2, %r1, 16;", "shr.u32 %r2, %r1, 28;", False),
    # floating point: the same operator on the same bits only, never an identity of real arithmetic
    ("mov.b32 %f1, %r1; add.rn.f32 %f2, %f1, %f1; mov.b32 %r2, %f2;",
     "mov.b32 %f1, %r1; mul.rn.f32 %f2, %f1, 0f40000000; mov.b32 %r2, %f2;", False),
    ("mov.b32 %f1, %r1; add.rn.f32 %f2, %f1, 0f3F800000; mov.b32 %r2, %f2;",
     "mov.b32 %f1, %r1; add.rz.f32 %f2, %f1, 0f3F800000; mov.b32 %r2, %f2;", False),
])
def test_semantics_can_fail(a, b, equal):
    regs = "\t.reg .f32 %f<4>;\n"
    body = "\tmov.b64 %rd3, %rd4;\n\tadd.s64 %rd3, %rd3, 17;\n"
    high = "\n\tshr.u64 %rd6, %rd5, 32;\n\tcvt.u32.u64 %r2, %rd6;"  # the half a carry reaches
    A = k(body + "\t" + a + high * ("%rd5" in a)).replace("\t.reg .b64", regs + "\t.reg .b64")
    B = k(body + "\t" + b + high * ("%rd5" in b)).replace("\t.reg .b64", regs + "\t.reg .b64")
    r = recheck(A, B)
    assert r.status == ("equal" if equal else "differ"), r.reason


def test_unsupported_is_never_a_guess():
    a = k("\tdiv.u32 %r2, %r1, 8;")
    b = k("\tshr.u32 %r2, %r1, 3;")
    r = recheck(a, b)
    assert r.status == "unsupported" and "div.u32" in r.reason
    assert prove(parse(a), parse(b), entry="k").verdict == "inconclusive"


def test_a_timeout_is_unknown_not_a_verdict(monkeypatch):
    monkeypatch.setattr(solver, "solve", lambda text, ms=0, s="": solver.Answer("unknown", note="time limit"))
    assert recheck(MUL, SHL7).status == "unknown"
    assert prove(parse(MUL), parse(SHL7), entry="k").verdict == "inconclusive"


def test_both_solvers_agree():
    for s in ("z3", "bitwuzla"):
        if solver.available(s):
            assert recheck(MUL, SHL7, solver=s).status == "equal"
            assert recheck(MUL, SHL6, solver=s).status == "differ"


# --------------------------------------------------------------------------------------
# the alias facts (shared by the prover's memory model and the CFG matching), against the
# interpreter: accesses the rules call disjoint never touch a common byte when run
# --------------------------------------------------------------------------------------


def _logged_run(text: str):
    """Run the kernel in the interpreter; every load/store's per-thread byte ranges by instruction."""
    from ptxopt.equivalence.interpret import verify
    from ptxopt.interp import device_memory as imem
    from ptxopt.testing.random_kernels import launch

    log: dict[tuple, list] = {}
    keep = []
    orig_load, orig_store = imem.Memory.load, imem.Memory.store

    def record(gaddr, nbytes, site, idx):
        ins, cta = site
        keep.append(cta)
        import numpy as np

        threads = np.atleast_1d(idx)
        addrs = np.broadcast_to(np.atleast_1d(gaddr), threads.shape)
        for t, a in zip(threads.tolist(), addrs.tolist()):
            log.setdefault((id(ins), id(cta), t), []).append((int(a), nbytes))

    def load(self, gaddr, elem, count, space, site, idx):
        record(gaddr, elem * count, site, idx)
        return orig_load(self, gaddr, elem, count, space, site, idx)

    def store(self, gaddr, elem, values, space, site, idx):
        record(gaddr, elem * len(values), site, idx)
        return orig_store(self, gaddr, elem, values, space, site, idx)

    m = parse(text)
    imem.Memory.load, imem.Memory.store = load, store
    try:
        verify(m, m, m.entries[0].name, seeds=(0,), trials=1, geometry=launch(), layouts=False,
               extra_launches=False)
    finally:
        imem.Memory.load, imem.Memory.store = orig_load, orig_store
    return m, log


def test_alias_facts_hold_on_the_interpreters_addresses():
    from ptxopt.ptx import opcodes, operand_facts
    from ptxopt.analysis.alias import Access, base_key, may_alias, overlapping_symbols
    from ptxopt.analysis.cfg import CFG
    from ptxopt.testing.random_kernels import kernel_from_steps, random_steps

    checked = disjoint = 0
    for seed in range(6):
        m, log = _logged_run(kernel_from_steps(random_steps(random.Random(seed), 28)))
        fn = m.entries[0]
        overlap = overlapping_symbols(fn, m)
        by_ins: dict[int, dict] = {}
        for (iid, cta, t), xs in log.items():
            by_ins.setdefault(iid, {})[(cta, t)] = xs
        for blk in CFG(fn).blocks:
            version: dict[str, int] = {}
            accs = []
            for ins in blk.instructions:
                f = operand_facts.facts(ins)
                if f.role in ("load", "store") and ins.opcode in ("ld", "st") and ins.guard is None \
                        and f.address is not None and f.address.size:
                    base, off = base_key(f.address, version)
                    accs.append((ins, Access(0, f.role == "store", f.address.space, base, off, f.address.size)))
                for r in f.defs:
                    version[r] = version.get(r, 0) + 1
            for i, (ia, a) in enumerate(accs):
                for ib, b in accs[i + 1:]:
                    if may_alias(a, b, overlap=overlap):
                        continue
                    disjoint += 1
                    la, lb = by_ins.get(id(ia), {}), by_ins.get(id(ib), {})
                    for key in la.keys() & lb.keys():
                        for (x, nx), (y, ny) in zip(la[key], lb[key]):  # the k-th run of the block, both
                            checked += 1
                            assert x + nx <= y or y + ny <= x, (
                                f"seed {seed}: line {ia.line} [{x:#x},+{nx}) and line {ib.line} "
                                f"[{y:#x},+{ny}) overlap, yet the alias rules call them disjoint")
    assert disjoint > 20 and checked > 500, (disjoint, checked)
    assert opcodes.ADDRESS_BITS["shared"] == 32  # (the window the offsets are normalised in)


# --------------------------------------------------------------------------------------
# one query checked many times under assumptions (Houdini's loop in the pipelined-loop proof)
# --------------------------------------------------------------------------------------

_X = ["(declare-fun x () (_ BitVec 8))", "(declare-fun y () (_ BitVec 8))"]
_CLAIMS = ["(= (bvand x #x00) #x00)",  # holds
           "(bvule (bvand x #x0f) #x0f)",  # holds
           "(= (bvadd x y) (bvadd y x))",  # holds
           "(= x #x03)",  # fails
           "(bvult x #x80)",  # fails under the condition below
           "(= (bvmul x #x02) (bvshl x #x01))",  # holds
           "(= (bvor x y) x)"]  # fails
_COND = ["((_ extract 7 7) x)"]  # x >= 0x80


class _Q:
    lines = _X


@pytest.mark.parametrize("which", ["bitwuzla", "z3"])
def test_an_incremental_check_answers_as_a_fresh_query_of_the_claims_still_held(which):
    from ptxopt.equivalence.prove.loop_sim import refute_all, refute_any

    if not solver.available(which):
        pytest.skip(f"{which} not installed")
    inc = solver.Incremental(refute_any(_Q, _COND, _CLAIMS, "hb"), solver=which)
    rng = random.Random(0)
    for _ in range(12):
        live = sorted(rng.sample(range(len(_CLAIMS)), rng.randint(1, len(_CLAIMS))))
        fresh = solver.solve(refute_all(_Q, _COND, [_CLAIMS[i] for i in live], "hb"), solver=which)
        ans = inc.check(true=[f"hb.on.{i}" for i in live],
                        false=[f"hb.on.{i}" for i in range(len(_CLAIMS)) if i not in live],
                        want=[f"hb.{i}" for i in live])
        assert ans.status == fresh.status, live
        if ans.status == "sat":  # the model falsifies a claim still held, never only a dropped one
            assert any(ans.model[f"hb.{i}"] == 0 for i in live)
    # Houdini's fixpoint: the claims that hold whenever the condition does
    dropped: set[int] = set()
    while True:
        live = [i for i in range(len(_CLAIMS)) if i not in dropped]
        ans = inc.check(true=[f"hb.on.{i}" for i in live], false=[f"hb.on.{i}" for i in dropped],
                        want=[f"hb.{i}" for i in live])
        if ans.status == "unsat":
            break
        dropped |= {i for i in live if ans.model[f"hb.{i}"] == 0}
    assert dropped == {3, 4, 6}


def test_an_incremental_query_the_solver_rejects_is_unknown_never_an_exception():
    inc = solver.Incremental("(assert (= x #x00))\n")  # x never declared
    ans = inc.check(true=["a"])
    assert ans.status == "unknown" and "rejected" in ans.note
    ok = solver.Incremental("(declare-fun a () Bool)\n(assert a)\n")
    assert ok.check(false=["a"]).status == "unsat" and ok.check(true=["a"]).status == "sat"
    assert ok.check(true=["nope"]).status == "unknown"  # a name the query does not declare: no verdict


def test_an_ite_inside_an_ite_on_the_same_condition_folds():
    """Query.define folds ``(ite C (ite C A B) Y)`` to ``(ite C A Y)`` and
    ``(ite C X (ite C A B))`` to ``(ite C X B)`` (an identity), and nothing on
    another condition."""
    from ptxopt.equivalence.prove.smt.terms import Query

    q = Query()
    a, b = q.var("a", 1), q.var("b", 1)
    x, y, z = (q.var(n, 32) for n in "xyz")
    c, d = f"(= {a} #b1)", f"(= {b} #b1)"
    inner = q.define(f"(ite {c} {x} {y})", 32)
    assert q.define(f"(ite {c} {inner} {z})", 32) == q.define(f"(ite {c} {x} {z})", 32)
    assert q.define(f"(ite {c} {z} {inner})", 32) == q.define(f"(ite {c} {z} {y})", 32)
    other = q.define(f"(ite {d} {inner} {z})", 32)
    assert other not in (q.define(f"(ite {d} {x} {z})", 32), q.define(f"(ite {d} {y} {z})", 32))
