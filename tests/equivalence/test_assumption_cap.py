"""Every path that turns a check into a verdict carries the "assumes noalias"
cap: a rewrite that adds ``ld.global.nc`` loads no analysis proves
read-only (``nc_ld{assume_noalias=1}``) is never ``proved``/``equal`` on its
own, whoever asks.

The prover and the interpreter model one coherent memory, so on their own
they call such a rewrite ``proved``/``equal``; ``decide`` capped it, but the
test harnesses (the pass matrix, the differential fuzzer, the trust fuzzer)
called the interpreter directly and read it as ``equal``. Now
:func:`ptxopt.equivalence.interpret.verify` and
:func:`ptxopt.equivalence.prove.prove` apply the cap themselves; only
:mod:`ptxopt.equivalence.decision`, which caps its own decisions (and lets
``.nc`` footprint evidence lift the cap), may pass ``cap=False``. The last
test holds the code base to that."""

import ast
from pathlib import Path

import pytest

from ptxopt.kernels import corpus
from ptxopt import emit, parse
from ptxopt.equivalence.decision import ASSUMES_NOALIAS
from ptxopt.equivalence.interpret import Geometry, verify
from ptxopt.equivalence.launch import Launch, Origin
from ptxopt.equivalence.prove import prove
from ptxopt.equivalence.verdict import TRUSTED, Verdict
from ptxopt.passes.readonly_path import NcLd

ROOT = Path(__file__).resolve().parents[2]
FORCED = "nc_ld{assume_noalias=1}"
ENTRY = "nc_store_other_param"  # loads x, stores y: x may alias y, so the load is no provable .nc
GEOMETRY = Geometry(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.fixture(scope="module")
def pair():
    m = parse((ROOT / "tests" / "adversarial" / "nc_ld_store_other_param.ptx").read_text())
    out, rep = NcLd(assume_noalias=1).apply(m)
    assert rep.changed and "ld.global.nc" in emit(out)
    return m, out


def test_the_interpreter_check_carries_the_assumption(pair):
    m, out = pair
    assert verify(m, out, ENTRY, geometry=GEOMETRY, cap=False).status == "equal"  # one coherent memory
    res = verify(m, out, ENTRY, geometry=GEOMETRY)
    assert res.status == "inconclusive" and res.verdict == Verdict.INCONCLUSIVE
    assert res.error.startswith(ASSUMES_NOALIAS) and "st.global.f32" in res.assumption


def test_the_prover_carries_the_assumption():
    """The prover keeps ``.nc`` in a load's key, so it never proves a plain
    load turned into ``.nc``; it does prove a constant-trip unroll whose
    copies of the original's ``.nc`` load are new ``.nc`` loads (``out`` may
    alias ``a``). A proof runs no launch: no footprint lifts the cap."""
    from test_nc_reads import KERNEL, unrolled

    m = parse(KERNEL.replace("GLOBALS", "").replace("EXTRA", "").replace("DEST", "%rd4").replace("BASE", "%rd3")
              .replace("\tld.param.u32 %r1, [n];\n", "\tmov.u32 %r1, 8;\n"))
    out = unrolled(m)
    assert prove(m, out, entry="k", cap=False).verdict == Verdict.PROVED  # one coherent memory
    r = prove(m, out, entry="k")
    assert r.verdict == Verdict.INCONCLUSIVE and r.reason.startswith(ASSUMES_NOALIAS)
    assert "otherwise proved" in r.reason
    assert prove(emit(m), emit(out), entry="k").verdict == Verdict.INCONCLUSIVE  # the text memo too


def test_the_interpreter_check_keeps_the_footprint_evidence():
    """Unrolled copies of the original's own .nc loads (a runtime trip count):
    the .nc footprints lift the cap in verify() exactly as in decide()."""
    from test_nc_reads import EVIDENCE, LAUNCH, kernel, unrolled

    m = kernel()
    res = verify(m, unrolled(m), "k", launch=LAUNCH)
    assert res.status == "equal" and res.assumption is None
    assert any(str(n).startswith(EVIDENCE) for n in res.notes), res.notes


def test_every_public_verdict_is_capped(pair):
    """The entry points a user or a harness reaches: none trusts the forced rewrite."""
    from ptxopt.api import check_equivalence
    from ptxopt.equivalence.decision import decide, decide_module

    m, out = pair
    launch = Launch((1, 1, 1), (32, 1, 1), origin=Origin.CONTRACT, source="test")
    verdicts = {
        "decide": decide(m, out, ENTRY, launch).verdict,
        "decide without the prover": decide(m, out, ENTRY, launch, prove=False).verdict,
        "decide_module": decide_module(m, out, lambda _e: [launch]).verdict,
        "check_equivalence": check_equivalence(m, out)[0],
        "prove": prove(m, out).verdict,
        "verify": verify(m, out, ENTRY, geometry=GEOMETRY).verdict,
    }
    assert not [k for k, v in verdicts.items() if v in TRUSTED or v in ("equal", "proved")], verdicts


def test_pass_matrix_cell_is_unverified_not_changed():
    from ptxopt.testing.matrix import run_cell

    cell = run_cell(FORCED, corpus.get("cuda_saxpy"), equivalence_trials=2)
    assert cell.outcome == "unverified" and cell.detail.startswith(ASSUMES_NOALIAS), cell


def test_differential_check_lists_it_unverified(pair):
    from ptxopt.testing.differential import check_passes

    m, _ = pair
    out = check_passes(emit(m), GEOMETRY, pipelines=[FORCED])
    assert not out.findings and out.changed == [FORCED]
    assert [p for p, why in out.unverified if why.startswith(ASSUMES_NOALIAS)] == [FORCED], out.unverified


def test_trust_fuzz_records_the_assumption_not_an_equal():
    from ptxopt.testing.trust_fuzz import Case, _entry, check_case

    text = _entry("\tld.global.u32 %r1, [%rd4];\n\tst.global.u32 [%rd3], %r1;")
    r = check_case(Case("nc", 0, "a plain load forced onto .nc", text, pipelines=(FORCED,)))
    assert not r.findings
    assert [p for p, why in r.assumed if why.startswith(ASSUMES_NOALIAS)] == [FORCED], r.assumed


# -- the class: no caller skips the cap ------------------------------------------------------------------

#: Modules that may ask for an uncapped check, and why: they apply the cap themselves.
UNCAPPED_ALLOWED = {
    "ptxopt/equivalence/decision.py": "assumption_cap() caps every decision, with the .nc footprint evidence",
}
#: The uncapped cores behind the capped entry points: used only in their own module.
CORES = {"_verify_uncapped": "ptxopt/equivalence/interpret.py", "_prove_modules": "ptxopt/equivalence/prove/__init__.py",
         "_interpret": "ptxopt/equivalence/decision.py", "_prove": "ptxopt/equivalence/decision.py"}


def _sources():
    """Every module of the package, the learner and the benchmarks that could
    bypass the cap (the text names ``cap`` or a core; only those are parsed)."""
    for top in ("ptxopt", "rl", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text()
            if "cap" in text or any(c in text for c in CORES):
                yield path.relative_to(ROOT).as_posix(), ast.parse(text, str(path))


def _bypasses(rel: str, tree) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and rel not in UNCAPPED_ALLOWED:
            for kw in node.keywords:
                if kw.arg == "cap" and not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
                    out.append(f"{rel}:{node.lineno}: cap={ast.unparse(kw.value)}")
                if kw.arg is None:  # **kwargs could carry cap=False past this scan
                    f = ast.unparse(node.func)
                    if f.split(".")[-1] in ("verify", "prove"):
                        out.append(f"{rel}:{node.lineno}: {f}(**{ast.unparse(kw.value)})")
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.name if isinstance(node, ast.alias) else None)
        if name in CORES and CORES[name] != rel:
            out.append(f"{rel}:{getattr(node, 'lineno', '?')}: {name}, the uncapped core of {CORES[name]}")
    return out


def test_no_caller_skips_the_assumption_cap():
    bad = [b for rel, tree in _sources() for b in _bypasses(rel, tree)]
    assert not bad, "a check without the assumption cap:\n" + "\n".join(bad)


def test_the_scan_sees_a_bypass():
    sneaky = ast.parse("from ptxopt.equivalence.interpret import _verify_uncapped, verify\n"
                       "verify(a, b, cap=False)\nprove(a, b, cap=flag)\nverify(a, b, **kw)\n_verify_uncapped(a, b)\n")
    found = _bypasses("ptxopt/new_harness.py", sneaky)
    assert len(found) == 5, found
    assert not _bypasses("ptxopt/new_harness.py", ast.parse("verify(a, b, cap=True)\nprove(a, b)\n"))
