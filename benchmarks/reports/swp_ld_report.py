"""``swp_ld`` over the corpus loop kernels and benchmarks/outside_kernels.

For each distance: kernels changed / unchanged, the refusal reasons counted,
the proof's verdict on every changed kernel (and why not proved), the pass's
and the proof's CPU time against one ptxas run of the result, and -- on the
first changed kernel of each family (a stratified sample) -- the estimated
cycles (sim backend, throughput objective, L2 cold: an ESTIMATE) with and
without the pass and the equivalence verdict the evaluator gives.

    python benchmarks/reports/swp_ld_report.py [--estimate] [distances...]
"""

from __future__ import annotations

import collections
import pathlib
import re
import resource
import statistics
import sys
import time

from ptxopt import emit, parse
from ptxopt.analysis.loops import loops_of
from ptxopt.passes.pipeline import Pipeline

OUTSIDE = pathlib.Path(__file__).parents[1] / "outside_kernels"


def kernels():
    from ptxopt.kernels.corpus import select

    for k in select("all"):
        yield k.id, k.ptx_text(), f"corpus:{k.id}"
    for p in sorted(OUTSIDE.glob("*.ptx")):
        yield "outside/" + p.stem, p.read_text(), str(p)


def family(name: str) -> str:
    return re.sub(r"_\d+$", "", name) if name.startswith("gen_") else name


def _ptxas_s(text: str) -> float | None:
    from ptxopt.toolchain.arch import resolve_arch
    from ptxopt.toolchain.ptxas import compile_ptx

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        compile_ptx(text, resolve_arch(text), memo=False)
    except Exception:  # noqa: BLE001 - a rejected kernel has no comparable time
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU time, as the pass's and proof's (a loaded machine)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def report(distance: int, estimate: bool) -> None:
    from ptxopt.equivalence.prove import prove

    name_ = f"swp_ld_{distance}"
    (p,) = Pipeline.parse(name_).passes
    looped = 0
    changed = []
    reasons = collections.Counter()
    for name, text, ref in kernels():
        m = parse(text)
        if not any(loops_of(f)[1].loops for f in m.functions if f.body is not None):
            continue
        looped += 1
        t0 = time.process_time()
        out, rep = p.apply(m)
        t_pass = time.process_time() - t0
        for s in rep.refused:
            reasons[re.sub(r"line \d+|%\w+|\d+", "#", s.what.split(": ", 1)[-1])[:100]] += 1
        if rep.changed:
            changed.append((name, text, emit(out), ref, t_pass, len(rep.changed)))
    fams = collections.Counter(family(n) for n, *_ in changed)
    print(f"\n## {name_}: {looped} kernels with loops, {len(changed)} changed ({sum(c[5] for c in changed)} loops), "
          f"{looped - len(changed)} unchanged")
    print("changed by family:", ", ".join(f"{f} {n}" for f, n in sorted(fams.items())))
    print("refusals (per loop or load):")
    for r, n in reasons.most_common(14):
        print(f"  {n:4d}  {r}")
    verdicts = collections.Counter()
    why = collections.Counter()
    ratios_pass, ratios_proof = [], []
    for name, text, cand, _, t_pass, _ in changed:
        t0 = time.process_time()
        r = prove(text, cand)
        t_proof = time.process_time() - t0
        verdicts[str(r.verdict)] += 1
        if str(r.verdict) != "proved":
            why[re.sub(r"\d+|%\w+|\S+:\d+", "#", r.reason.split(": ", 1)[-1])[:110]] += 1
        tp = _ptxas_s(cand)
        if tp:
            ratios_pass.append(t_pass / tp)
            ratios_proof.append(t_proof / tp)
    print("proof:", dict(verdicts))
    for r, n in why.most_common(6):
        print(f"  {n:4d}  {r}")
    if ratios_pass:
        print(f"CPU time / one ptxas run of the result ({len(ratios_pass)} kernels): pass median "
              f"{statistics.median(ratios_pass):.3f}x (max {max(ratios_pass):.3f}x); proof median "
              f"{statistics.median(ratios_proof):.2f}x (max {max(ratios_proof):.2f}x)")
    if not estimate:
        return
    from ptxopt.evaluate import evaluate

    seen = set()
    print("| kernel | cycles before | after | gain | equivalence |")
    print("|---|---|---|---|---|")
    for name, text, cand, ref, *_ in changed:
        if family(name) in seen:
            continue
        seen.add(family(name))
        try:
            b = evaluate(ref, "", cache=None)
            a = evaluate(ref, name_, cache=None)
        except Exception as e:  # noqa: BLE001 - a kernel the evaluator cannot take is reported, not fatal
            print(f"| {name} | - | - | - | {type(e).__name__}: {e} |")
            continue
        if not (b.cycles and a.cycles):
            print(f"| {name} | {b.status} | {a.status} | - | {a.equivalence}: {(a.error or '')[:60]} |")
            continue
        gain = 100 * (b.cycles - a.cycles) / b.cycles
        print(f"| {name} | {b.cycles:,.0f} | {a.cycles:,.0f} | {gain:+.1f}% | {a.equivalence} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    est = "--estimate" in args
    ds = [int(a) for a in args if a.isdigit()] or [1, 2]
    for d in ds:
        report(d, est)
