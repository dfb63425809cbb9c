"""``swp_ld`` over the corpus loop kernels and benchmarks/outside_kernels:
loops pipelined / refused (with the reasons counted), and the pass's CPU time
against one ptxas run of the same kernel. Prints a table; no estimate here."""

from __future__ import annotations

import collections
import pathlib
import re
import sys
import time

from ptxopt import parse
from ptxopt.analysis.loops import loops_of
from ptxopt.pipeline import Pipeline


def kernels():
    from ptxopt.corpus import select

    for k in select("all"):
        yield k.id, k.ptx_text()
    for p in sorted(pathlib.Path(__file__).parent.joinpath("outside_kernels").glob("*.ptx")):
        yield "outside/" + p.stem, p.read_text()


def main(distance: int = 1, ptxas_sample: int = 12) -> None:
    (p,) = Pipeline.parse(f"swp_ld{{distance={distance}}}").passes
    applied = refused_k = loops = kernels_with_loops = 0
    reasons = collections.Counter()
    pass_s = []
    names = []
    for name, text in kernels():
        m = parse(text)
        if not any(loops_of(f)[1].loops for f in m.functions if f.body is not None):
            continue
        kernels_with_loops += 1
        t0 = time.process_time()
        out, rep = p.apply(m)
        pass_s.append((time.process_time() - t0, name, text))
        ch = len(rep.changed)
        applied += ch > 0
        refused_k += ch == 0
        for s in rep.refused:
            reasons[re.sub(r"line \d+|%\w+|\d+", "#", s.what.split(": ", 1)[-1])[:90]] += 1
        if ch:
            names.append(name)
    print(f"swp_ld{{distance={distance}}}: {kernels_with_loops} kernels with loops, {applied} changed, "
          f"{refused_k} unchanged")
    for r, n in reasons.most_common(12):
        print(f"  {n:4d}  {r}")
    print("changed:", ", ".join(names[:40]))
    # cost vs one ptxas run, on a sample (every k-th kernel with loops)
    sample = pass_s[:: max(1, len(pass_s) // ptxas_sample)][:ptxas_sample]
    ratios = []
    for sec, name, text in sample:
        t0 = time.process_time()
        t1 = time.perf_counter()
        try:
            _ptxas(text)
        except Exception:  # noqa: BLE001 - a rejected kernel has no comparable time
            continue
        ratios.append(sec / max(1e-6, time.perf_counter() - t1))
    ratios.sort()
    print(f"pass CPU time / one ptxas run (wall), {len(ratios)} kernels: median {ratios[len(ratios) // 2]:.3f}x, "
          f"max {ratios[-1]:.3f}x")


def _ptxas(text: str) -> None:
    from ptxopt.toolchain.arch import resolve_arch
    from ptxopt.toolchain.ptxas import compile_ptx

    compile_ptx(text, resolve_arch(text), memo=False)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
