"""Floor violations of the throughput estimate over corpus kernels x every pass (ESTIMATES).

For each sampled kernel at its performance launch, and for its output under each pass: the floors of
``ptxopt.sim.floors`` (DRAM and L2 from the exact footprint, FP32/FP16/tensor work over the device's
peaks) against the sim backend's estimate, three times: ``before`` with the DRAM floor's input taken
away (the model before the footprint fed it: the manifest's counts only), ``walk`` with every floor
taken out of the estimate's max (the walked bounds alone: where they fall below a floor, the floor is
what binds -- the walk undercounts there), and ``after`` (as shipped: the floors are bounds of the
estimate, so a violation there is a bug in the mechanism).  Also: passes that change the exact DRAM
bytes (none should: no pass changes which addresses are accessed), and cache-hint passes that lower
the walk's L2 bytes (none should: a hint never removes a transfer), and rewrites whose footprint is
less known than the original's estimated below the original's exact DRAM floor (none should: the
floor is carried, ``ptxopt.analysis.carried_footprint``).

    python benchmarks/reports/floors_sweep.py [--per-group N] [--passes a,b] [--out FILE.json]

Sample: the first ``N`` kernels of each corpus group (manifest order) with a performance launch, and
the kernels in benchmarks/outside_kernels/ (no byte counts).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "tests" / "sim"), str(ROOT / "tests")]

import ptxopt.measure.sim as sim_backend  # noqa: E402
from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.evaluate.candidate import _manifest_performance  # noqa: E402
from ptxopt.passes.registry import pass_names  # noqa: E402
from ptxopt.sim.device import device_for  # noqa: E402
from ptxopt.sim.floors import launch_floors  # noqa: E402
from test_floors import applied, hint_violations, lost_floor, measured, outside  # noqa: E402


def sample(per_group: int):
    seen: dict = collections.Counter()
    for k in load_manifest():
        if k.performance is None or k.family == "gemm_tile":
            continue
        g = k.group or k.family
        if seen[g] < per_group:
            seen[g] += 1
            yield k.id, g, k.ptx_text(), k.entry, _manifest_performance(k), k, k.arch
    for c in sorted((ROOT / "benchmarks" / "outside_kernels").glob("*.contract.json")):
        name = c.name.split(".")[0]
        text, entry, launch = outside(name)
        yield f"outside:{name}", "outside", text, entry, launch, None, "sm_89"


def estimates(text, arch, entry, launch, spec, original=None):
    """(before, walk, after Measurement): without the DRAM floor's input, without any floor, as shipped
    (``original``: the text ``text`` was rewritten from; its exact DRAM floor is carried)."""
    after = measured(text, arch, entry, launch, spec, original)
    old, old_a = sim_backend._dram_floor, sim_backend._arithmetic_floors
    sim_backend._dram_floor = lambda job, perf: None
    try:
        before = measured(text, arch, entry, launch, spec, original).cycles
        sim_backend._arithmetic_floors = lambda job, perf: None
        walk = measured(text, arch, entry, launch, spec, original).cycles
    finally:
        sim_backend._dram_floor, sim_backend._arithmetic_floors = old, old_a
    return before, walk, after


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-group", type=int, default=1)
    ap.add_argument("--passes", default=None, help="comma-separated (default: every pass)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    passes = args.passes.split(",") if args.passes else pass_names()
    rows = []
    for kid, group, text, entry, launch, spec, arch in sample(args.per_group):
        dev = device_for(arch)
        base = launch_floors(text, entry, launch, dev)
        m0 = None
        for name in [""] + passes:
            out = text if not name else applied(text, name, launch, entry)
            if out is None:
                continue
            try:
                fl = base if not name else launch_floors(out, entry, launch, dev)
                before, walk, m = estimates(out, arch, entry, launch, spec, text if name else None)
                after = m.cycles
                m0 = m if not name else m0
            except Exception as e:  # a failure is a row, not a crash
                rows.append({"kernel": kid, "group": group, "pass": name or "(none)", "error": str(e)[:200]})
                continue
            moved = (name and base.footprint_source == fl.footprint_source == "exact"
                     and base.dram_bytes != fl.dram_bytes)
            rows.append({"kernel": kid, "group": group, "pass": name or "(none)", "source": fl.footprint_source,
                         "before": before, "walk": walk, "after": after, "floors": fl.to_json(),
                         "binding": m.extra.get("bound"), "l2_bytes_per_thread": m.extra["facts"]["l2_bytes"],
                         "violations_before": fl.violations(before), "violations_walk": fl.violations(walk),
                         "violations_after": fl.violations(after), "dram_bytes_changed": bool(moved),
                         "hint_lowered_l2": hint_violations(name, m0, m) if name and m0 is not None else [],
                         "estimate_source": (m.extra.get("footprint") or {}).get("source"),
                         "original_floor_lost": lost_floor(base, fl, after) if name else []})
            r = rows[-1]
            print(f"{kid:36s} {r['pass']:16s} {r['source']:12s} before {before:14,.0f} walk {walk:14,.0f} "
                  f"after {after:14,.0f} ({r['binding']}) viol {len(r['violations_before'])}/"
                  f"{len(r['violations_walk'])}/{len(r['violations_after'])}", flush=True)
    ok = [r for r in rows if "error" not in r]
    base_source = {r["kernel"]: r["source"] for r in ok if r["pass"] == "(none)"}

    def kinds(key):
        c = collections.Counter()
        for r in ok:
            for v in r[key]:
                c[v.split(" floor")[0]] += 1
        return dict(c)

    print(f"\n{len(ok)} estimates ({len({r['kernel'] for r in ok})} kernels x passes), {len(rows) - len(ok)} errors")
    print("rows violating a floor: before", sum(1 for r in ok if r["violations_before"]),
          "walk alone", sum(1 for r in ok if r["violations_walk"]), "after", sum(1 for r in ok if r["violations_after"]))
    print("violations by floor, before:", kinds("violations_before"))
    print("violations by floor, walk alone (where a floor binds):", kinds("violations_walk"))
    print("violations by floor, after:", kinds("violations_after"))
    print("binding bound, after:", dict(collections.Counter(r["binding"] for r in ok)))
    print("cache hints that lowered the walk's L2 bytes:", sorted({(r["kernel"], r["pass"]) for r in ok
                                                                  if r["hint_lowered_l2"]}))
    print("passes that changed the exact DRAM bytes:", sorted({(r["kernel"], r["pass"]) for r in ok
                                                               if r["dram_bytes_changed"]}))
    print("rewrites whose footprint is less known than the original's (exact -> other):",
          sum(1 for r in ok if r["pass"] != "(none)" and r["source"] != "exact"
              and base_source.get(r["kernel"]) == "exact"),
          "of them estimated below the original's exact DRAM floor:", sum(1 for r in ok if r["original_floor_lost"]))
    for r in ok:
        for v in r["original_floor_lost"]:
            print(f"  floor lost: {r['kernel']} {r['pass']}: {v}")
    after_left = sorted({(r["kernel"], r["pass"], v) for r in ok for v in r["violations_after"]})
    for k, p, v in after_left[:40]:
        print(f"  after: {k} {p}: {v}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
