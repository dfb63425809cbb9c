"""Where ``loop_version_2``/``loop_version_4`` apply, what the proof says and what the sim
model estimates (ESTIMATES, not measurements).

    python benchmarks/reports/loop_version_report.py [--corpus SELECTOR ...] [--outside DIR] [--devices L4,H100-SXM]

* **Corpus loop kernels** (every kernel of the selectors with a natural loop): how often each
  width applies, and the refusal reasons by count (registers, labels and line numbers folded).
* **Outside kernels** (``benchmarks/outside_kernels/*.ptx`` with a contract): per kernel and width,
  applied or the reasons; for each rewrite the prover's verdict with the project's limits (4 s per
  query, wall time: a loaded machine times out sooner) and its time against one ptxas run of the
  candidate, the pass's own time, the interpreter at the check launch of :data:`CHECK` (rows of
  odd length: misaligned rows and a remainder; the boundary trip counts come on top), and
  ``explain --objective throughput`` before/after on each device (cycles, binding bound, LSU
  issue bound, registers: ESTIMATES).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter
from pathlib import Path

WIDTHS = (2, 4)
#: check launches (small, for equivalence): one block of 32 threads, rows of odd length
CHECK = {
    "rows_dot": {"rows_dot_param_3": 32, "rows_dot_param_4": 37},
    "rows_axpy": {"rows_axpy_param_2": 2.0, "rows_axpy_param_3": 32, "rows_axpy_param_4": 37, "rows_axpy_param_5": 37},
    "rows_horner": {"rows_horner_param_3": 32, "rows_horner_param_4": 37},
    "rows_gemv": {"rows_gemv_param_3": 32, "rows_gemv_param_4": 37},
}


def _fold(why: str) -> str:
    return re.sub(r"\$?L\w*: |line \d+: |%\w+|\b\d+\b", "#", why)[:110]


def corpus_table(selectors) -> None:
    from ptxopt import parse
    from ptxopt.analysis.loops import loops_of
    from ptxopt.kernels.corpus import select
    from ptxopt.passes.loop_version import LoopVersion

    kernels, applied, reasons = 0, Counter(), Counter()
    for spec in [s for sel in selectors for s in select(sel)]:
        m = parse(spec.ptx_text(), spec.path)
        if not any(loops_of(f)[1].loops for f in m.functions if f.body is not None):
            continue
        kernels += 1
        for w in WIDTHS:
            _, rep = LoopVersion(check="align", width=w).apply(m)
            applied[w] += bool(rep.changed)
            for s in rep.refused:
                reasons[(w, _fold(s.what))] += 1
    print(f"## Corpus loop kernels ({kernels}, selectors {' '.join(selectors)})\n")
    print("| width | kernels rewritten | loops refused |\n|---|---|---|")
    for w in WIDTHS:
        print(f"| {w} | {applied[w]} | {sum(v for (x, _), v in reasons.items() if x == w)} |")
    print("\nRefusal reasons (width 4; width 2 alike):\n")
    for (w, why), v in reasons.most_common():
        if w == 4 and v > 1:
            print(f"- {v} x {why}")
    print()


def _explain(path: str, pipeline: str, device: str) -> dict | None:
    from click.testing import CliRunner

    from ptxopt.cli import cli

    r = CliRunner().invoke(cli, ["explain", path, "--objective", "throughput", "--passes", pipeline,
                                 "--device", device, "--json"])
    if r.exit_code != 0:
        return None
    return json.loads(r.stdout)["kernels"][0]


def outside_table(folder: str, devices: list[str]) -> None:
    from ptxopt import emit, parse
    from ptxopt.equivalence.decision import decide
    from ptxopt.equivalence.launch import Launch, Origin
    from ptxopt.equivalence.prove import clear_memo, prove
    from ptxopt.passes.loop_version import LoopVersion
    from ptxopt.toolchain.ptxas import compile_ptx

    rows, costs, verdicts = [], [], Counter()
    for path in sorted(Path(folder).glob("*.ptx")):
        text = path.read_text()
        m = parse(text, str(path))
        entry = m.entries[0].name
        for w in WIDTHS:
            t = time.perf_counter()
            out, rep = LoopVersion(check="align", width=w).apply(m)
            t_pass = time.perf_counter() - t
            if not rep.changed:
                why = "; ".join(sorted({_fold(s.what) for s in rep.refused})) or "no loop"
                rows.append(f"| {entry} | {w} | refused: {why} | | | | |")
                continue
            cand = emit(out)
            t = time.perf_counter()
            compile_ptx(cand, "sm_89", memo=False)
            t_ptxas = time.perf_counter() - t
            clear_memo()
            t = time.perf_counter()
            pr = prove(text, cand, entry=entry)
            t_prove = time.perf_counter() - t
            verdicts[pr.verdict] += 1
            costs.append((t_pass / t_ptxas, t_prove / t_ptxas))
            equal = "-"
            if entry in CHECK:
                launch = Launch((1, 1, 1), (32, 1, 1), scalars=CHECK[entry], origin=Origin.CONTRACT, source="report")
                d = decide(m, out, entry, launch, prove=False)
                equal = d.verdict.value
                verdicts["interp " + equal] += 1
            est = []
            for dev in devices:
                k = _explain(str(path), f"loop_version_{w}", dev)
                if k is None:
                    est.append(f"{dev}: n/a")
                    continue
                b, a = k["before"], k["after"]
                cb, ca = b["estimate"]["cycles"], a["estimate"]["cycles"]
                est.append(f"{dev}: {cb:,.0f} -> {ca:,.0f} ({100 * (cb - ca) / cb:+.1f}%), {b['binding']} -> "
                           f"{a['binding']}, LSU {b['bounds']['LSU issue']:,.0f} -> {a['bounds']['LSU issue']:,.0f}, "
                           f"regs {b['registers']} -> {a['registers']}")
            rows.append(f"| {entry} | {w} | {rep.changed[0].what.split(': ', 1)[1][:60]}... | {pr.verdict} "
                        f"({t_prove:.2f} s) | {equal} | pass {t_pass * 1e3:.0f} ms, proof {t_prove / t_ptxas:.1f}x "
                        f"ptxas | {'; '.join(est)} |")
    print(f"## Outside kernels ({folder})\n")
    print("| kernel | width | result | proof | interpreter | cost vs one ptxas run | throughput ESTIMATE |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nverdicts: {dict(verdicts)}")
    if costs:
        print(f"pass / ptxas: median {statistics.median(c[0] for c in costs):.3f}x; "
              f"proof / ptxas: median {statistics.median(c[1] for c in costs):.2f}x, "
              f"max {max(c[1] for c in costs):.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="*", default=["nvcc", "triton"])
    ap.add_argument("--outside", default="benchmarks/outside_kernels")
    ap.add_argument("--devices", default="L4,H100-SXM")
    a = ap.parse_args()
    if a.corpus:
        corpus_table(a.corpus)
    outside_table(a.outside, a.devices.split(","))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
