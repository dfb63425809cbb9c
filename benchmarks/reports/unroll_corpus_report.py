"""``unroll`` on the corpus loop kernels: loops unrolled / refused (with the
reasons) per factor, and the interpreter on each kernel that changed.

    python benchmarks/reports/unroll_corpus_report.py [--per-family 2] [--json OUT]

Kernels: every hand-written corpus kernel with a PTX loop and the first
``--per-family`` kernels (by id) of each generated family that has one.
For ``unroll_2``/``unroll_4``/``unroll{factor=8}``: the loops rewritten,
the loops refused grouped by reason, and for each changed kernel one
interpreter launch of the manifest's check launch (seed 0) compared with
the original's outputs (``equal`` / ``differ`` / ``error``). No search,
no prover. Run it against another checkout with ``PYTHONPATH=<that
checkout>`` to compare.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import numpy as np

FACTORS = (2, 4, 8)


def _sample(per_family: int):
    from ptxopt import parse
    from ptxopt.analysis.loops import loops_of
    from ptxopt.kernels.corpus import load_manifest

    out, seen = [], {}
    for k in sorted(load_manifest(), key=lambda k: k.id):
        if k.generated and seen.get(k.family, 0) >= per_family:
            continue
        m = parse(k.ptx_text(), f"corpus:{k.id}")
        n = sum(len(loops_of(f)[1].loops) for f in m.functions if f.body is not None) if hasattr(m, "functions") \
            else len(loops_of(m.pick_entry(k.entry))[1].loops)
        if n:
            out.append((k, m, n))
            if k.generated:
                seen[k.family] = seen.get(k.family, 0) + 1
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[x].view(np.uint8), b[x].view(np.uint8)) for x in a)


def main() -> int:
    from ptxopt import emit, parse
    from ptxopt.interp import InterpError
    from ptxopt.interp.workload import launch_from_manifest
    from ptxopt.passes.unroll import Unroll

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    t0 = time.perf_counter()
    kernels = _sample(a.per_family)
    report = {"kernels": len(kernels), "loops": sum(n for _, _, n in kernels), "factors": {}}
    for f in FACTORS:
        changed = refused = 0
        reasons: dict[str, int] = {}
        verdicts: dict[str, list[str]] = {"equal": [], "differ": [], "error": []}
        for k, m, _ in kernels:
            out, rep = Unroll(factor=f).apply(m)
            changed += len(rep.changed)
            refused += len(rep.refused)
            for s in rep.refused:
                why = re.sub(r"%\w+", "%r", s.what.split(": ", 1)[-1])
                why = re.sub(r"\d+", "N", why)
                reasons[why] = reasons.get(why, 0) + 1
            if not rep.changed:
                continue
            try:
                _, want = launch_from_manifest(k, 0, module=m)
                _, got = launch_from_manifest(k, 0, module=parse(emit(out)))
                verdicts["equal" if _same(want, got) else "differ"].append(k.id)
            except InterpError as e:
                verdicts["error"].append(f"{k.id}: {e}")
        report["factors"][f] = {"unrolled": changed, "refused": refused, "reasons": reasons,
                                "interpreter": {v: len(ids) for v, ids in verdicts.items()},
                                "differ": verdicts["differ"], "error": verdicts["error"]}
        print(f"unroll factor {f}: {len(kernels)} kernels, {report['loops']} loops: unrolled {changed}, "
              f"refused {refused}; interpreter " + ", ".join(f"{v} {len(ids)}" for v, ids in verdicts.items()))
        for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
            print(f"    {n:4d}  {why}")
        for x in verdicts["differ"] + verdicts["error"]:
            print(f"    ! {x}")
    report["seconds"] = round(time.perf_counter() - t0, 1)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
