"""Where the DRAM floor's bytes come from, over the corpus and the kernels written outside it, and what
finding them costs next to one ptxas run.

For every kernel with a performance launch: the footprint of ``ptxopt.analysis.global_footprint`` at
that launch (its ``source``: exact / extrapolated / unknown, per launch and per buffer), whether the
exact bytes equal the manifest's counts (a read-modify-write buffer counted twice, as the counts do),
and the time of the analysis (parse included) against ``ptxas`` on the same PTX (median ratio).

    python benchmarks/reports/footprint_sources.py [--every N] [--no-ptxas] [--out benchmarks/results/footprint_sources.json]

``--every N`` takes every Nth corpus kernel (a stratified sample: manifest order groups families).
Prints a table; ``--out`` writes the rows.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.analysis.global_footprint import footprint_of_text  # noqa: E402
from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.sim.occupancy import dram_bytes_of_spec  # noqa: E402

OUTSIDE = ROOT / "benchmarks" / "outside_kernels"


def kernels(every: int):
    for k in [k for k in load_manifest() if k.performance is not None][::every]:
        p = k.performance
        yield k.id, k.group or k.family, k.ptx_text(), k.entry, p.grid, p.block, p.scalars, \
            dram_bytes_of_spec(k.performance_spec())
    for c in sorted(OUTSIDE.glob("*.contract.json")):
        name = c.name.split(".")[0]
        contract = json.loads(c.read_text())
        perf = contract["performance"]
        yield f"outside:{name}", "outside", (OUTSIDE / f"{name}.ptx").read_text(), contract["entry"], perf["grid"], \
            perf["block"], perf["scalars"], None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--no-ptxas", action="store_true", help="skip the ptxas timing")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for kid, group, text, entry, grid, block, scalars, counts in kernels(args.every):
        t0 = time.perf_counter()
        fp = footprint_of_text(text, entry, grid, block, scalars)
        t_fp = time.perf_counter() - t0
        t_ptxas = None
        if not args.no_ptxas:
            from ptxopt.toolchain import compile_ptx

            t0 = time.perf_counter()
            try:
                compile_ptx(text, "sm_89", memo=False)
                t_ptxas = time.perf_counter() - t0
            except Exception:
                t_ptxas = None
        rows.append({"kernel": kid, "group": group, "source": fp.source, "floor_bytes": fp.floor_bytes,
                     "counts_bytes": counts, "buffers": {b.name: b.source for b in fp.buffers},
                     "why": next((b.why for b in fp.buffers if b.why), ""), "analysis_s": t_fp, "ptxas_s": t_ptxas})
        print(f"{kid:40s} {fp.source:12s} floor={fp.floor_bytes} counts={counts} {1e3 * t_fp:.0f} ms", flush=True)
    by = collections.Counter(r["source"] for r in rows if r["group"] != "outside")
    out = collections.Counter(r["source"] for r in rows if r["group"] == "outside")
    bufs = collections.Counter(s for r in rows for s in r["buffers"].values())
    agree = [r for r in rows if r["source"] == "exact" and r["counts_bytes"]]
    same = sum(1 for r in agree if r["floor_bytes"] == r["counts_bytes"])
    print("\nlaunch footprint source, corpus:", dict(by))
    print("launch footprint source, outside kernels:", dict(out))
    print("buffer footprint source (all):", dict(bufs))
    print(f"exact launches whose floor equals the manifest counts: {same}/{len(agree)}")
    ratios = [r["analysis_s"] / r["ptxas_s"] for r in rows if r["ptxas_s"]]
    if ratios:
        print(f"analysis / ptxas time: median {statistics.median(ratios):.2f}x, "
              f"max {max(ratios):.2f}x over {len(ratios)} kernels")
    why = collections.Counter(r["why"].split(": ", 1)[-1][:60] for r in rows if r["source"] != "exact")
    print("most common reasons (not exact):")
    for w, n in why.most_common(10):
        print(f"  {n:4d}  {w}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
