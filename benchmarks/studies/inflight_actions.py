"""Where the existing actions move the bytes-in-flight bound (ESTIMATES of the sim model, not measurements).

For a sample of corpus loop kernels and the kernels in benchmarks/outside_kernels/, at their
performance launches under the throughput objective (L2 cold), on the L4 table (sm_89) and the H100
table (the same PTX retargeted to sm_90): the estimate before and after each action, the binding
bound before/after, the bound that moved most, the bytes in flight per warp (at its first wait) and
per SM before/after, registers and resident warps; and the same gain with the bytes-in-flight bound
left out (``gain_without``), so the table shows what the mechanism changes.

    python benchmarks/studies/inflight_actions.py [--per-group N] [--actions a,b] [--devices L4,H100-SXM]
                                          [--out benchmarks/results/inflight_actions.json]

Sample: the first ``N`` kernels (manifest order) of each corpus group whose PTX has a branch and that
has a performance launch (gemm_tile excluded: single-thread, no loop), plus every outside kernel.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "tests" / "sim"), str(ROOT / "tests")]

from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.evaluate.candidate import _manifest_performance  # noqa: E402
from ptxopt.measure.backend import MeasureJob  # noqa: E402
from ptxopt.measure.sim import SimBackend, _objective_kw  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402
from ptxopt.sim.device import device_named  # noqa: E402
from ptxopt.sim.inflight import per_sm_bytes  # noqa: E402
from ptxopt.sim.throughput import KernelFacts, estimate  # noqa: E402
from test_floors import applied, outside  # noqa: E402

ACTIONS = ("vec_ld", "unroll_2", "unroll_4", "prefetch_L1", "prefetch_L2", "maxnreg_32", "maxnreg_64", "maxnreg_128")


def sample(per_group: int):
    seen: dict = collections.Counter()
    for k in load_manifest():
        if k.performance is None or k.family == "gemm_tile" or "bra" not in k.ptx_text():
            continue
        g = k.group or k.family
        if seen[g] < per_group:
            seen[g] += 1
            yield k.id, g, k.ptx_text(), k.entry, _manifest_performance(k), k
    for c in sorted((ROOT / "benchmarks" / "outside_kernels").glob("*.contract.json")):
        name = c.name.split(".")[0]
        text, entry, launch = outside(name)
        yield f"outside:{name}", "outside", text, entry, launch, None


def measure(text: str, arch: str, entry: str, launch, spec, dev):
    """(estimate with the bound, estimate without it, facts) of ``text`` under ``launch`` on ``dev``."""
    job = MeasureJob(text, arch, spec, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block)
    (m,) = SimBackend().measure_many([job])
    if isinstance(m, Exception):
        raise m
    facts = KernelFacts.of(m.extra["facts"])
    kw = _objective_kw(job)

    def est(f):
        return estimate(f, kw["launch"], dev, "throughput", blocks=kw.get("blocks"),
                        footprint_bytes=kw.get("footprint_bytes"), dram_floor=kw.get("dram_floor"), l2=kw["l2"])

    with_ = est(facts)
    without = est(dataclasses.replace(facts, inflight_bytes=0.0, miss_latency_bytes=0.0))
    return with_, without, facts


def describe(e, facts) -> dict:
    threads = e.launch.threads or 1
    lanes = min(32, threads)
    resident_threads = e.resident_warps * lanes
    per_sm, capped = per_sm_bytes(resident_threads, facts, e.device)
    return {"cycles": e.cycles, "binding": e.binding, "bounds": dict(e.bounds),
            "inflight_per_warp": facts.inflight_bytes * lanes, "inflight_per_sm": per_sm, "capped": capped,
            "registers": facts.registers, "warps_per_sm": e.occupancy["warps_per_sm"],
            "occupancy": e.occupancy["occupancy"]}


def moved(before: dict, after: dict) -> str:
    """The bound whose value changed most (relative), with its change."""
    best, rel = "", 0.0
    for k, v in before["bounds"].items():
        w = after["bounds"].get(k, 0.0)
        r = (w - v) / v if v else (1.0 if w else 0.0)
        if abs(r) > abs(rel):
            best, rel = k, r
    return f"{best} {100 * rel:+.0f}%" if best else "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-group", type=int, default=1)
    ap.add_argument("--actions", default=",".join(ACTIONS))
    ap.add_argument("--devices", default="L4,H100-SXM")
    ap.add_argument("--out", default=None)
    ap.add_argument("--md", default=None, help="also write the table as Markdown into this file")
    ap.add_argument("--from-json", default=None, help="only write --md from a JSON this script wrote")
    args = ap.parse_args()
    if args.from_json:
        Path(args.md).write_text(markdown(json.loads(Path(args.from_json).read_text())["rows"]))
        return
    actions = args.actions.split(",")
    devices = [device_named(d) for d in args.devices.split(",")]
    rows = []
    t0 = time.perf_counter()
    for kid, group, text, entry, launch, spec in sample(args.per_group):
        for dev in devices:
            arch = dev.arch
            src = text.replace(".target sm_89", f".target {arch}") if arch != "sm_89" else text
            try:
                b, b0, bf = measure(src, arch, entry, launch, spec, dev)
            except Exception as exc:  # a failure is a row, not a crash
                rows.append({"kernel": kid, "group": group, "device": dev.name, "action": "(none)",
                             "error": str(exc)[:200]})
                continue
            before = describe(b, bf)
            before["cycles_without"] = b0.cycles
            for name in actions:
                out = applied(src, name, launch, entry)
                if out is None:
                    continue
                try:
                    a, a0, af = measure(out, arch, entry, launch, spec, dev)
                except Exception as exc:
                    rows.append({"kernel": kid, "group": group, "device": dev.name, "action": name,
                                 "error": str(exc)[:200]})
                    continue
                after = describe(a, af)
                after["cycles_without"] = a0.cycles
                r = {"kernel": kid, "group": group, "device": dev.name, "action": name,
                     "gain": 1 - a.cycles / b.cycles, "gain_without": 1 - a0.cycles / b0.cycles,
                     "moved": moved(before, after), "before": before, "after": after}
                rows.append(r)
                print(f"{kid:30s} {dev.name:9s} {name:12s} gain {100 * r['gain']:+6.1f}% "
                      f"(without {100 * r['gain_without']:+6.1f}%) {before['binding']:>15s} -> "
                      f"{after['binding']:<15s} moved {r['moved']:<24s} in flight/warp "
                      f"{before['inflight_per_warp']:6.0f} -> {after['inflight_per_warp']:6.0f} B, /SM "
                      f"{before['inflight_per_sm']:7.0f} -> {after['inflight_per_sm']:7.0f} B, regs "
                      f"{before['registers']} -> {after['registers']}, warps/SM {before['warps_per_sm']} -> "
                      f"{after['warps_per_sm']}", flush=True)
    ok = [r for r in rows if "error" not in r]
    base = {(r["kernel"], r["device"]): r["before"] for r in ok}
    for (kid, dev), b in sorted(base.items()):
        if b["cycles"] != b["cycles_without"]:
            print(f"bound binds on the original: {kid} {dev}: {b['cycles_without']:,.0f} -> {b['cycles']:,.0f} "
                  f"cycles ({100 * (b['cycles'] / b['cycles_without'] - 1):+.1f}%), {b['inflight_per_sm']:,.0f} B "
                  f"in flight per SM{' (capped)' if b['capped'] else ''}")
    print(f"\n{len(ok)} rows, {len(rows) - len(ok)} errors, {time.perf_counter() - t0:.0f} s")
    for dev in devices:
        for name in actions:
            rs = [r for r in ok if r["device"] == dev.name and r["action"] == name]
            if rs:
                g = sorted(r["gain"] for r in rs)
                g0 = sorted(r["gain_without"] for r in rs)
                print(f"{dev.name:9s} {name:12s} n={len(rs):2d} mean gain {100 * sum(g) / len(g):+6.2f}% "
                      f"(without the bound {100 * sum(g0) / len(g0):+6.2f}%), bytes in flight binding after: "
                      f"{sum(r['after']['binding'] == 'bytes in flight' for r in rs)}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "kind": "estimate"}, indent=1))
    if args.md:
        Path(args.md).write_text(markdown(rows))


def markdown(rows: list) -> str:
    """The table (ESTIMATES): per device and action the mean gain with and without the bound, then
    every row where the action moved the estimate by 1% or more or the bound binds."""
    ok = [r for r in rows if "error" not in r]
    out = ["# Bytes in flight: where the existing actions move the bound (ESTIMATES, sim model, not measured)",
           "", "Written by `benchmarks/studies/inflight_actions.py`; throughput objective, L2 cold, performance launches; "
           "H100 = the same PTX retargeted to sm_90. `without` = the same estimate with the bytes-in-flight bound "
           "left out. In flight: per warp at its first wait / per SM (resident warps x per warp, capped).", "",
           "| device | action | kernels it applied to | mean gain | mean gain without the bound | binds after |",
           "|---|---|---|---|---|---|"]
    keys = sorted({(r["device"], r["action"]) for r in ok}, key=lambda k: (k[0], ACTIONS.index(k[1])
                                                                            if k[1] in ACTIONS else 99))
    for dev, act in keys:
        rs = [r for r in ok if r["device"] == dev and r["action"] == act]
        out.append(f"| {dev} | {act} | {len(rs)} | {100 * sum(r['gain'] for r in rs) / len(rs):+.2f}% | "
                   f"{100 * sum(r['gain_without'] for r in rs) / len(rs):+.2f}% | "
                   f"{sum(r['after']['binding'] == 'bytes in flight' for r in rs)} |")
    out += ["", "| kernel | device | action | gain | without | binding before -> after | bound moved | "
                "in flight /warp B | in flight /SM B | registers | warps/SM |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in ok:
        b, a = r["before"], r["after"]
        if abs(r["gain"]) < 0.01 and abs(r["gain_without"]) < 0.01 and "bytes in flight" not in (b["binding"], a["binding"]):
            continue
        out.append(f"| {r['kernel']} | {r['device']} | {r['action']} | {100 * r['gain']:+.1f}% | "
                   f"{100 * r['gain_without']:+.1f}% | {b['binding']} -> {a['binding']} | {r['moved']} | "
                   f"{b['inflight_per_warp']:.0f} -> {a['inflight_per_warp']:.0f} | "
                   f"{b['inflight_per_sm']:.0f}{'*' if b['capped'] else ''} -> "
                   f"{a['inflight_per_sm']:.0f}{'*' if a['capped'] else ''} | {b['registers']} -> {a['registers']} | "
                   f"{b['warps_per_sm']} -> {a['warps_per_sm']} |")
    out += ["", "`*`: capped at the device's per-SM limit (an assumption: Accel-Sim's L1 MSHR entries x 32 B).",
            "Rows shown: the action moved the estimate by 1% or more, with or without the bound, or the bound "
            "binds before or after.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    main()
