"""Where the latency-hiding actions pay: ``loop_version_2``/``loop_version_4`` (a versioned loop whose
fast copy is the vectorised one) and ``swp_ld_1``/``swp_ld_2`` (software-pipelined loads), over a
stratified sample of the corpus loop kernels and every kernel in ``benchmarks/outside_kernels/``.

Every cycle figure is an ESTIMATE of the sim model (throughput objective, L2 cold, the performance
launch), never a measurement. Per kernel, action and device (the L4 table, sm_89, and the H100 table:
the same PTX retargeted to sm_90):

* the gain (percent of the original's cycles; the rewrite is estimated with the original given, so
  a footprint the rewrite loses keeps the original's DRAM floor, as search and eval do);
* the binding bound before -> after and the bound that moved most;
* bytes in flight per warp (at its first wait) and per SM (resident warps x per warp, capped at the
  device's ASSUMED per-SM limit, marked ``*``) before -> after; registers and resident warps per SM;

and per kernel and action, once (verdicts do not depend on the device): ``refused`` (the pass changed
nothing; its reasons, registers, labels and numbers folded, are counted), else the evaluator's decision
(:func:`ptxopt.equivalence.decision.decide`: the proof first, the interpreter at the check launch when
the proof does not settle it): ``proved``, ``equal``, ``inconclusive`` or ``differ``. Last, the pass's
CPU time against one ptxas run of the original (CPU time of the child, measured in the same run).

    python benchmarks/reports/latency_actions_table.py [--per-group 1] [--devices L4,H100-SXM] [--only a,b]
                                               [--json FILE] [--md benchmarks/results/latency_actions_table.md]
    python benchmarks/reports/latency_actions_table.py --cost-only --per-group 0   # pass cost, every loop kernel

Sample: every outside kernel, then per stratum of ``benchmarks/reports/throughput_audit.py`` (the manifest
group, else gemm_tile / real:<compiler>, in name order) the first ``--per-group`` kernels in id order with
a natural loop and a performance launch. ``--json`` is written after each kernel and resumed from.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "benchmarks" / "reports"), str(ROOT / "benchmarks" / "studies"),
                str(ROOT / "tests" / "sim"), str(ROOT / "tests")]

NEW_ACTIONS = ("loop_version_2", "loop_version_4", "swp_ld_1", "swp_ld_2")
OUTSIDE = ROOT / "benchmarks" / "outside_kernels"
#: check launches for the outside row kernels whose contract gives only the performance launch
#: (one block of 32 threads, rows of odd length: misaligned rows and a remainder)
ROW_CHECK = {
    "rows_dot": {"rows_dot_param_3": 32, "rows_dot_param_4": 37},
    "rows_axpy": {"rows_axpy_param_2": 2.0, "rows_axpy_param_3": 32, "rows_axpy_param_4": 37,
                  "rows_axpy_param_5": 37},
    "rows_horner": {"rows_horner_param_3": 32, "rows_horner_param_4": 37},
    "rows_gemv": {"rows_gemv_param_3": 32, "rows_gemv_param_4": 37},
}


def fold(why: str) -> str:
    """A refusal reason with its registers, labels, line numbers and numbers folded (to count)."""
    why = why.split(": ", 1)[1] if re.match(r"^\S+:\d+", why) else why
    return re.sub(r"\$?L\w*|line \d+|%\w+|\b\d+\b", "#", why)[:120]


def sample(per_group: int, corpus: bool = True):
    """``(label, stratum, text, entry, performance launch, check launch, spec)``: the outside kernels,
    then the corpus loop kernels (``per_group`` per stratum)."""
    yield from _outside()
    if corpus:
        yield from _corpus(per_group)


def _corpus(per_group: int):
    from ptxopt.analysis.loops import loops_of
    from ptxopt.equivalence.launch import from_spec
    from ptxopt.evaluate.candidate import _manifest_performance
    from ptxopt.kernels.corpus import select
    from ptxopt.ptx.parser import parse
    from throughput_audit import stratum

    groups: dict[str, list] = collections.defaultdict(list)
    for s in select("all"):
        if s.performance is not None:
            groups[stratum(s)].append(s)
    for g in sorted(groups):
        taken = 0
        for s in sorted(groups[g], key=lambda s: s.id):
            if taken == per_group:
                break
            text = s.ptx_text()
            m = parse(text, s.id)
            if not any(loops_of(f)[1].loops for f in m.functions if f.body is not None):
                continue
            taken += 1
            yield s.id, g, text, s.entry, _manifest_performance(s), from_spec(s), s


def _outside():
    from ptxopt.equivalence.launch_contract import contract_from_json
    from ptxopt.equivalence.launch import Launch, Origin
    from test_floors import outside

    for c in sorted(OUTSIDE.glob("*.contract.json")):
        name = c.name.split(".")[0]
        text, entry, perf = outside(name)
        d = json.loads(c.read_text())
        if "launch" in d:
            check = contract_from_json(d, c.name)
        elif name in ROW_CHECK:
            check = Launch((1, 1, 1), (32, 1, 1), scalars=ROW_CHECK[name], origin=Origin.CONTRACT,
                           source="latency_actions_table")
        else:
            check = None  # a guessed launch
        yield f"outside:{name}", "outside", text, entry, perf, check, None


def ptxas_cpu_s(text: str, arch: str) -> float | None:
    """CPU time of one ptxas run of ``text`` (the child's, as the pass's is the process's)."""
    from ptxopt.toolchain.ptxas import compile_ptx

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        compile_ptx(text, arch, memo=False)
    except Exception:  # noqa: BLE001 - a kernel ptxas rejects has no comparable time
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def measure(text: str, dev, entry: str, launch, spec, original: str | None) -> dict:
    """The estimate of ``text`` on ``dev`` at ``launch`` (a rewrite of ``original``), described."""
    from inflight_actions import describe
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.sim import SimBackend, _objective_kw
    from ptxopt.ptx.parser import parse
    from ptxopt.sim.throughput import KernelFacts, estimate

    def on(t):
        return t if t is None or dev.arch == "sm_89" else t.replace(".target sm_89", f".target {dev.arch}")

    text, original = on(text), on(original)
    job = MeasureJob(text, dev.arch, spec, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block, original=original)
    (m,) = SimBackend().measure_many([job])
    if isinstance(m, Exception):
        raise m
    facts = KernelFacts.of(m.extra["facts"])
    kw = _objective_kw(job)
    e = estimate(facts, kw["launch"], dev, "throughput", blocks=kw.get("blocks"),
                 footprint_bytes=kw.get("footprint_bytes"), dram_floor=kw.get("dram_floor"), l2=kw["l2"],
                 floors=kw.get("floors"))
    d = describe(e, facts)
    d["cycles"] = m.cycles  # what search and eval see (the re-estimate above gives the bounds)
    return d


def moved(before: dict, after: dict) -> str:
    """The bound that bound before, with its change (what a gain or loss of the estimate comes from),
    and the bound that binds after when it is another one, with its change."""
    def change(k: str) -> str:
        v, w = before["bounds"].get(k, 0.0), after["bounds"].get(k, 0.0)
        return f"{k} {100 * (w - v) / v:+.0f}%" if v else f"{k} new"

    out = change(before["binding"])
    if after["binding"] != before["binding"]:
        out += "; " + change(after["binding"])
    return out


def run(args) -> dict:
    from ptxopt.equivalence.decision import decide
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.sim.device import device_named

    devices = [device_named(d) for d in args.devices.split(",")]
    only = set(args.only.split(",")) if args.only else None
    old = json.loads(Path(args.json).read_text()) if args.json and Path(args.json).is_file() else None
    rows, verdicts, costs = (old["rows"], old["verdicts"], old["costs"]) if old else ([], [], [])
    done = {v["kernel"] for v in verdicts}
    t0 = time.perf_counter() - (old["wall_s"] if old else 0.0)

    def doc() -> dict:
        return {"kind": "estimate", "per_group": args.per_group, "devices": args.devices, "rows": rows,
                "verdicts": verdicts, "costs": costs, "wall_s": time.perf_counter() - t0}

    for label, group, text, entry, perf, check, spec in sample(args.per_group, not args.outside_only):
        if (only and label.split(":")[-1] not in only) or label in done:
            continue
        module = parse(text, label)
        t_ptxas = ptxas_cpu_s(text, "sm_89")
        base = {}
        for dev in devices:
            try:
                base[dev.name] = measure(text, dev, entry, perf, spec, None)
            except Exception as exc:  # noqa: BLE001 - a kernel the sim cannot take is a row, not a crash
                base[dev.name] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}
        for action in NEW_ACTIONS:
            (p,) = Pipeline.parse(action).passes
            c0 = time.process_time()
            out, rep = p.apply(module)
            t_pass = time.process_time() - c0
            if t_ptxas:
                costs.append({"kernel": label, "action": action, "ratio": t_pass / t_ptxas})
            if not rep.changed:
                why = sorted({fold(s.what) for s in rep.refused}) or ["no natural loop in the kernel"]
                verdicts.append({"kernel": label, "group": group, "action": action, "verdict": "refused",
                                 "reasons": why})
                continue
            cand = emit(out)
            c0 = time.perf_counter()
            try:
                dec = decide(module, out, entry, check, prove=True)
                verdict, note = dec.verdict.value, (dec.note or "")[:160]
            except Exception as exc:  # noqa: BLE001 - a check that cannot run is inconclusive, said so
                verdict, note = "inconclusive", f"{type(exc).__name__}: {str(exc)[:140]}"
            verdicts.append({"kernel": label, "group": group, "action": action, "verdict": verdict,
                             "note": note, "check_s": time.perf_counter() - c0})
            for dev in devices:
                b = base[dev.name]
                if "error" in b:  # the original could not be estimated: a row that says so
                    rows.append({"kernel": label, "group": group, "device": dev.name, "action": action,
                                 "error": f"original: {b['error']}"})
                    continue
                try:
                    a = measure(cand, dev, entry, perf, spec, text)
                except Exception as exc:  # noqa: BLE001
                    rows.append({"kernel": label, "group": group, "device": dev.name, "action": action,
                                 "error": f"{type(exc).__name__}: {str(exc)[:120]}"})
                    continue
                r = {"kernel": label, "group": group, "device": dev.name, "action": action, "verdict": verdict,
                     "gain": 1 - a["cycles"] / b["cycles"], "moved": moved(b, a), "before": b, "after": a}
                rows.append(r)
            print(f"{label:32s} {action:15s} {verdict:12s} " + "  ".join(
                f"{r['device']} {100 * r['gain']:+.1f}%" for r in rows[-len(devices):]
                if r.get("action") == action and r["kernel"] == label and "gain" in r), flush=True)
        if args.json:  # after each kernel: a long run can be stopped and resumed (kernels done are skipped)
            Path(args.json).write_text(json.dumps(doc(), indent=1) + "\n")
    return doc()


def cost_only(args) -> None:
    """Per kernel of the sample (``--per-group 0``: every corpus loop kernel): each new pass's CPU
    time over one ptxas run's of the original, measured in this run; the median and max per pass."""
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.ptx.parser import parse

    ratios: dict = collections.defaultdict(list)
    changed: collections.Counter = collections.Counter()
    n = 0
    for label, _, text, *_ in sample(args.per_group or 10**6, not args.outside_only):
        t_ptxas = ptxas_cpu_s(text, "sm_89")
        if not t_ptxas:
            continue
        n += 1
        module = parse(text, label)
        for action in NEW_ACTIONS:
            (p,) = Pipeline.parse(action).passes
            c0 = time.process_time()
            _, rep = p.apply(module)
            ratios[action].append((time.process_time() - c0) / t_ptxas)
            changed[action] += bool(rep.changed)
    print(f"pass CPU time / one ptxas run of the original (CPU time of the child), {n} kernels, one run:")
    for a in NEW_ACTIONS:
        r = ratios[a]
        if r:
            print(f"  {a:15s} changes {changed[a]:3d}  median {statistics.median(r):.3f}x  "
                  f"p90 {sorted(r)[int(0.9 * (len(r) - 1))]:.3f}x  max {max(r):.3f}x")


def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def markdown(doc: dict) -> str:
    rows, verdicts, costs = doc["rows"], doc["verdicts"], doc["costs"]
    ok = [r for r in rows if "error" not in r]
    kernels = sorted({v["kernel"] for v in verdicts})
    corpus = [k for k in kernels if not k.startswith("outside:")]
    out = ["# Latency-hiding actions: where they pay (ESTIMATES of the sim model, not measured)", "",
           "Written by `benchmarks/reports/latency_actions_table.py` (throughput objective, L2 cold, "
           "performance launches; "
           "H100 = the same PTX retargeted to sm_90). Every cycle figure and gain is an ESTIMATE.",
           f"Sample: {len(kernels) - len(corpus)} outside kernels and {len(corpus)} corpus loop kernels (the first "
           f"{doc['per_group']} with a natural loop per stratum of `throughput_audit.py`, strata in name order: "
           f"{', '.join(corpus) or 'none'}); {doc['wall_s']:.0f} s wall.", "",
           "## Verdicts per action (once per kernel; the evaluator's decision: proof first, then the interpreter)",
           "", "| action | kernels | refused | proved | equal | inconclusive | differ |",
           "|---|---|---|---|---|---|---|"]
    for a in NEW_ACTIONS:
        vs = collections.Counter(v["verdict"] for v in verdicts if v["action"] == a)
        out.append(f"| {a} | {sum(vs.values())} | {vs['refused']} | {vs['proved']} | {vs['equal']} | "
                   f"{vs['inconclusive']} | {vs['differ']} |")
    out += ["", "Top refusal reasons (kernels, per action; registers, labels and numbers folded to `#`):", ""]
    for a in NEW_ACTIONS:
        reasons = collections.Counter(r for v in verdicts if v["action"] == a and v["verdict"] == "refused"
                                      for r in v["reasons"])
        out.append(f"- **{a}**: " + "; ".join(f"{n} x `{why}`" for why, n in reasons.most_common(5)))
    notes = [v for v in verdicts if v["verdict"] not in ("refused", "proved")]
    if notes:
        out += ["", "Not proved (the decision's note):", ""]
        out += [f"- {v['kernel']} {v['action']}: {v['verdict']}: {v['note']}" for v in notes]
    out += ["", "## Gain per action and device (ESTIMATES)", "",
            "| device | action | rewritten | mean gain | median gain | best | gains >= 1% | losses <= -1% |",
            "|---|---|---|---|---|---|---|---|"]
    for dev in doc["devices"].split(","):
        for a in NEW_ACTIONS:
            g = [r["gain"] for r in ok if r["device"] == dev and r["action"] == a]
            if not g:
                out.append(f"| {dev} | {a} | 0 | | | | | |")
                continue
            best = max((r for r in ok if r["device"] == dev and r["action"] == a), key=lambda r: r["gain"])
            out.append(f"| {dev} | {a} | {len(g)} | {pct(sum(g) / len(g))} | {pct(statistics.median(g))} | "
                       f"{pct(best['gain'])} ({best['kernel']}) | {sum(x >= 0.01 for x in g)} | "
                       f"{sum(x <= -0.01 for x in g)} |")
    out += ["", "## Every rewrite (ESTIMATES)", "",
            "In flight: per warp at its first wait / per SM (`*`: at the device's ASSUMED per-SM cap).", "",
            "| kernel | device | action | verdict | gain | binding before -> after | bound moved | "
            "bytes-in-flight bound, cycles | in flight /warp B | in flight /SM B | registers | warps/SM |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in ok:
        b, a = r["before"], r["after"]
        out.append(f"| {r['kernel']} | {r['device']} | {r['action']} | {r['verdict']} | {pct(r['gain'])} | "
                   f"{b['binding']} -> {a['binding']} | {moved(b, a)} | "
                   f"{b['bounds'].get('bytes in flight', 0):,.0f} -> {a['bounds'].get('bytes in flight', 0):,.0f} | "
                   f"{b['inflight_per_warp']:.0f} -> {a['inflight_per_warp']:.0f} | "
                   f"{b['inflight_per_sm']:.0f}{'*' if b['capped'] else ''} -> "
                   f"{a['inflight_per_sm']:.0f}{'*' if a['capped'] else ''} | {b['registers']} -> {a['registers']} | "
                   f"{b['warps_per_sm']} -> {a['warps_per_sm']} |")
    errs = [r for r in rows if "error" in r]
    if errs:
        out += ["", "Estimates that failed: " + "; ".join(f"{r['kernel']} {r['device']} {r['action']}: {r['error']}"
                                                        for r in errs)]
    out += ["", "## Pass cost (CPU time of the pass / CPU time of one ptxas run of the original, same run)", "",
            "| action | kernels | median | max |", "|---|---|---|---|"]
    for a in NEW_ACTIONS:
        c = [x["ratio"] for x in costs if x["action"] == a]
        if c:
            out.append(f"| {a} | {len(c)} | {statistics.median(c):.3f}x | {max(c):.3f}x |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-group", type=int, default=1)
    ap.add_argument("--devices", default="L4,H100-SXM")
    ap.add_argument("--only", default=None, help="comma list of kernel names (a quick look)")
    ap.add_argument("--outside-only", action="store_true", help="only the outside kernels")
    ap.add_argument("--json", default=None, help="write the rows here, after each kernel; resumes from it")
    ap.add_argument("--md", default=None, help="write the Markdown table here")
    ap.add_argument("--from-json", default=None, help="only print/write the Markdown of a JSON this script wrote")
    ap.add_argument("--cost-only", action="store_true",
                    help="only the pass cost against ptxas (no estimates, no checks); --per-group 0: every loop kernel")
    args = ap.parse_args()
    if args.cost_only:
        cost_only(args)
        return 0
    doc = json.loads(Path(args.from_json).read_text()) if args.from_json else run(args)
    md = markdown(doc)
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
