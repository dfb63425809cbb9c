"""The corpus in numbers: what it holds, what it costs, and what
greedy search and the committed policy make of each template group.

Two steps, so that the long part can run in the background and be resumed:

``run``     greedy search (``ptxopt search``, the CLI itself, one process per
            group and pass) over the corpus under one objective, one JSON per
            group and pass in OUT (the CLI's ``--json`` format), plus
            OUT/times.txt (wall time of each call) and OUT/cpu.txt (its CPU
            time, children included). ``--sample N`` first
            searches N kernels per group (evenly spaced in manifest order:
            first, middle, last), then the rest; a run cut short still has
            every group's sample, from which the whole-corpus time is
            extrapolated (said so in the report). Give it a fresh ``--cache``
            to time cold evaluations.

``report``  reads run folders (one per objective) and optionally
            ``benchmarks/reports/rl_report.py --parts groups --json`` output, and
            prints (and writes as Markdown/JSON): kernels per group and
            compiler; generation record; repository size (``du -sk corpus``,
            ``git count-objects -vH``); greedy time per group (measured per
            kernel, extrapolated to the group's count where not every kernel
            was searched); per group and objective: searched kernels,
            mean/median/best improvement, kernels improved, most common best
            pipelines; the policy per group (held-out groups first).

Cycles are the sim model's ESTIMATE (``--backend sim``); improvements are
estimated cycles saved, % of the baseline, at the objective's launch.

Usage::

    nice -n 10 python benchmarks/reports/corpus_report.py run --objective latency --out runs/greedy_latency \\
        --cache /tmp/lat.sqlite --sample 3 --workers 1
    nice -n 10 python benchmarks/reports/corpus_report.py run --objective throughput --out runs/greedy_throughput ...
    python benchmarks/reports/corpus_report.py report runs/greedy_latency runs/greedy_throughput \\
        --rl rl_groups.json --md benchmarks/results/corpus_report.md --json benchmarks/results/corpus_report.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.kernels.corpus import select  # noqa: E402


def groups_of(specs) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for k in specs:
        out[k.group].append(k)
    return dict(sorted(out.items()))


def sample(ids: list[str], n: int) -> list[str]:
    """*n* ids evenly spaced over *ids* (first, ..., last): a stratified sample
    that neither favours the hand-written kernels listed first nor the biggest last."""
    if len(ids) <= n:
        return list(ids)
    if n == 1:
        return [ids[0]]
    return list(dict.fromkeys(ids[round(i * (len(ids) - 1) / (n - 1))] for i in range(n)))


def plan(specs, n_sample: int) -> list[tuple[str, str, list[str]]]:
    """(pass, group, ids): every group's sample first, then every group's rest."""
    groups = {g: [k.id for k in ks] for g, ks in groups_of(specs).items()}
    first = {g: sample(ids, n_sample) if n_sample else ids for g, ids in groups.items()}
    out = [("sample" if n_sample else "all", g, ids) for g, ids in first.items()]
    out += [("rest", g, [i for i in ids if i not in first[g]]) for g, ids in groups.items()]
    return [p for p in out if p[2]]


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for pass_, group, ids in plan(select(args.select), args.sample):
        target = out / f"{pass_}_{group}.json"
        if target.exists():  # resumable: a finished call is not repeated
            continue
        cmd = [sys.executable, "-m", "ptxopt.cli", "search", ",".join(ids), "-j", str(args.workers), "-q",
               "--objective", args.objective, "--json", str(target)] + (["--cache", args.cache] if args.cache else [])
        t0, c0 = time.perf_counter(), os.times()
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        wall, c1 = time.perf_counter() - t0, os.times()
        cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
        with open(out / "times.txt", "a") as f:
            f.write(f"{pass_} {group} {len(ids)} {wall:.1f} rc={rc}\n")
        with open(out / "cpu.txt", "a") as f:
            f.write(f"{pass_} {group} wall={wall:.2f} user={cpu:.2f} sys=0\n")


# --------------------------------------------------------------------------
# report


def load_runs(folder: Path) -> tuple[str, dict[str, dict]]:
    """(objective, kernel id -> its row) from every ``*.json`` of a run folder."""
    rows, objective = {}, None
    for f in sorted(folder.glob("*.json")):
        doc = json.loads(f.read_text())
        for r in doc.get("kernels", []):
            rows[r["kernel"]] = r
            objective = objective or r.get("objective")
    return objective or folder.name, rows


def cpu_per_group(folder: Path) -> dict[str, tuple[float, int]]:
    """group -> (CPU s, kernels) over the calls OUT/cpu.txt timed (their JSON
    ``PASS_GROUP[.CHUNK].json`` gives the kernel count): CPU time does not
    grow with the machine's load the way wall time does."""
    f = folder / "cpu.txt"
    out: dict[str, tuple[float, int]] = {}
    if not f.is_file():
        return out
    for line in f.read_text().splitlines():
        words = line.split()
        kv = dict(w.split("=", 1) for w in words if "=" in w)
        js = folder / f"{words[0]}_{words[1]}.json" if len(words) > 1 else None
        if not ({"user", "sys"} <= set(kv) and js and js.is_file()):
            continue
        n = len(json.loads(js.read_text()).get("kernels", []))
        group = words[1].split(".")[0]
        cpu, k = out.get(group, (0.0, 0))
        out[group] = (cpu + float(kv["user"]) + float(kv["sys"]), k + n)
    return out


def cpu_ratio(folder: Path) -> tuple[float, float] | None:
    """(CPU s, wall s) summed over the calls that ``/usr/bin/time`` recorded in
    OUT/cpu.txt (``PASS GROUP wall=S user=S sys=S``; user + sys include the
    ptxas children): on a loaded machine, CPU / wall scales wall time to what an
    idle core would take (one process, ``-j 1``)."""
    f = folder / "cpu.txt"
    if not f.is_file():
        return None
    cpu = wall = 0.0
    for line in f.read_text().splitlines():
        kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if {"wall", "user", "sys"} <= set(kv):
            cpu += float(kv["user"]) + float(kv["sys"])
            wall += float(kv["wall"])
    return (cpu, wall) if wall else None


def repo_size() -> dict:
    du = subprocess.run(["du", "-sk", str(ROOT / "corpus")], capture_output=True, text=True).stdout.split()
    ptx = sum(p.stat().st_size for p in (ROOT / "corpus" / "families").rglob("*.ptx"))
    git = subprocess.run(["git", "-C", str(ROOT), "count-objects", "-vH"], capture_output=True, text=True).stdout
    return {"corpus_kib": int(du[0]) if du else None, "families_ptx_bytes": ptx,
            "git_count_objects": dict(line.split(": ", 1) for line in git.splitlines() if ": " in line)}


def _top(pipelines: list[str], n: int = 3) -> str:
    c = Counter(p or "(none)" for p in pipelines)
    return "; ".join(f"{p} x{k}" for p, k in c.most_common(n))


def greedy_tables(objective: str, rows: dict, groups: dict, cpu: tuple[float, float] | None = None,
                  cpu_groups: dict | None = None) -> tuple[list[str], dict]:
    lines = [f"### greedy, objective `{objective}` (ESTIMATE, sim model; max 6 steps)", "",
             "| group | kernels | searched | s/kernel | group s (extrap.) | mean % | median % | best % | improved "
             "| evals/k | most common best pipelines |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    doc, total_s, total_measured, searched_all = {}, 0.0, 0.0, 0
    done = [r for r in rows.values() if not r.get("error")]
    overall = statistics.fmean(r["wall_s"] for r in done) if done else 0.0
    for g, ks in groups.items():
        got = [rows[k.id] for k in ks if k.id in rows and not rows[k.id].get("error")]
        errors = [k.id for k in ks if k.id in rows and rows[k.id].get("error")]
        if not got:  # no kernel of the group searched yet: the corpus-wide mean s/kernel, marked
            total_s += overall * len(ks)
            doc[g] = {"kernels": len(ks), "searched": 0, "group_s_extrapolated": overall * len(ks)}
            lines.append(f"| {g} | {len(ks)} | 0 | ({overall:.1f}) | ({overall * len(ks):.0f}) | | | | | | |")
            continue
        walls = [r["wall_s"] for r in got]
        imps = [r["improvement_pct"] or 0.0 for r in got]
        per_k = statistics.fmean(walls)
        extrap = per_k * len(ks)
        total_s += extrap
        total_measured += sum(walls)
        searched_all += len(got)
        d = {"kernels": len(ks), "searched": len(got), "errors": errors, "s_per_kernel": per_k,
             "group_s_extrapolated": extrap, "mean_pct": statistics.fmean(imps), "median_pct": statistics.median(imps),
             "best_pct": max(imps), "improved": sum(i > 0 for i in imps),
             "evals_per_kernel": statistics.fmean(r["evaluations"] for r in got),
             "top_pipelines": Counter(r["pipeline"] or "" for r in got).most_common(3)}
        doc[g] = d
        lines.append(f"| {g} | {len(ks)} | {len(got)}{' (+%d err)' % len(errors) if errors else ''} | {per_k:.1f} | "
                     f"{extrap:.0f} | {d['mean_pct']:.1f} | {d['median_pct']:.1f} | {d['best_pct']:.1f} | "
                     f"{d['improved']}/{len(got)} | {d['evals_per_kernel']:.0f} | "
                     f"{_top([r['pipeline'] for r in got])} |")
    n = sum(len(ks) for ks in groups.values())
    lines += ["", f"Whole corpus ({n} kernels), `-j 1`: {searched_all} searched in {total_measured / 60:.1f} min of "
              f"per-kernel wall time; extrapolated by group (group count x its mean s/kernel; a group with "
              f"none searched: the mean over all, in parentheses): "
              f"**{total_s / 3600:.2f} h**" + (" (measured, every kernel searched)" if searched_all == n else
                                                " (ESTIMATE from the searched kernels)"), ""]
    if cpu:
        lines += [f"CPU time (user + sys, ptxas included) was {cpu[0] / cpu[1]:.2f} of wall time over "
                  f"{cpu[1] / 60:.0f} min of timed calls: on an idle core the whole corpus would take about "
                  f"**{total_s * cpu[0] / cpu[1] / 3600:.2f} h** (ESTIMATE; the ratio varies with the load).", ""]
    cpu_total = None
    if cpu_groups:
        all_cpu = sum(c for c, _ in cpu_groups.values())
        all_k = sum(k for _, k in cpu_groups.values())
        cpu_total = sum((cpu_groups[g][0] / cpu_groups[g][1] if cpu_groups.get(g, (0, 0))[1] else all_cpu / all_k)
                        * len(ks) for g, ks in groups.items())
        per = ", ".join(f"{g} {c / k:.1f}" for g, (c, k) in sorted(cpu_groups.items()) if k)
        lines += [f"CPU s per kernel (calls timed with CPU: {all_k} kernels, process start included): {per}. "
                  f"Group count x CPU s/kernel (a group without: the mean): **{cpu_total / 3600:.2f} h** of CPU "
                  f"for the whole corpus, about the wall time on an idle core (ESTIMATE).", ""]
    return lines, {"groups": doc, "searched": searched_all, "kernels": n, "measured_s": total_measured,
                   "extrapolated_s": total_s, "cpu_over_wall": cpu and cpu[0] / cpu[1],
                   "cpu_s_per_group": cpu_groups, "cpu_extrapolated_s": cpu_total}


def policy_table(rl: dict) -> tuple[list[str], dict]:
    groups = rl.get("groups", {})
    samples = next((v.get("samples") for v in groups.values()), 8)
    lines = [f"### committed policy per template group (`{rl.get('checkpoint')}`; ESTIMATE)", "",
             "| group | held out | kernels | greedy % (evals) | policy % (evals) | "
             f"policy@{samples} % (evals) | random@policy % | greedy@policy % |", "|---|---|---|---|---|---|---|---|"]
    def cell(s, m):
        v = s.get(m) or {}
        return f"{v.get('mean_improvement_pct') or 0:.1f} ({v.get('mean_evaluations') or 0:.0f})"

    for g, res in groups.items():
        s = res["summary"]
        held = "yes" if res.get("held_out") else "no"
        lines.append(f"| {g} | {held} | {len(res['kernels'])} | {cell(s, 'greedy')} | "
                     f"{cell(s, 'policy')} | {cell(s, f'policy@{samples}')} | "
                     f"{(s.get('random@policy') or {}).get('mean_improvement_pct') or 0:.1f} | "
                     f"{(s.get('greedy@policy') or {}).get('mean_improvement_pct') or 0:.1f} |")
    return lines + [""], {g: res["summary"] for g, res in groups.items()}


def report(args) -> None:
    specs = select("all")
    groups = groups_of(specs)
    lines = ["# Corpus report (issue 30)", "", "## Kernels per template group and compiler", "",
             "| group | kernels | nvcc | triton | ptxopt-gen | generated | families |", "|---|---|---|---|---|---|---|"]
    doc: dict = {"kernels": len(specs), "groups": {}}
    for g, ks in groups.items():
        c = Counter(k.compiler for k in ks)
        fams = sorted({k.family for k in ks})
        doc["groups"][g] = {"kernels": len(ks), **c, "generated": sum(k.generated for k in ks), "families": fams}
        lines.append(f"| {g} | {len(ks)} | {c['nvcc']} | {c['triton']} | {c['ptxopt-gen']} | "
                     f"{sum(k.generated for k in ks)} | {', '.join(fams)} |")
    gen = json.loads((ROOT / "corpus" / "families" / "GENERATION.json").read_text())
    size = repo_size()
    doc["generation"], doc["size"] = gen, size
    gco = size["git_count_objects"]
    lines += ["", f"{len(specs)} kernels, {len(groups)} groups; generated: {gen['kernels']} "
              f"({len(gen['families'])} Triton {gen['triton']} families, {len(gen.get('cuda_families', {}))} "
              f"CUDA C families, nvcc {gen.get('nvcc')} `{gen.get('nvcc_flags', '')}`), seed {gen['seed']}, "
              f"{gen['per_family']} per family.", "",
              f"Size: `du -sk corpus` {size['corpus_kib'] / 1024:.1f} MiB; generated PTX "
              f"{size['families_ptx_bytes'] / 2**20:.1f} MiB; `git count-objects -vH`: size-pack "
              f"{gco.get('size-pack')}, loose {gco.get('size')} ({gco.get('count')} objects).", ""]
    if args.generation_note:
        lines += [f"Generation time: {args.generation_note}", ""]
    lines += ["## Greedy search per template group", ""]
    doc["greedy"] = {}
    for folder in args.runs:
        objective, rows = load_runs(Path(folder))
        t, d = greedy_tables(objective, rows, groups, cpu_ratio(Path(folder)), cpu_per_group(Path(folder)))
        lines += t
        d["rows"] = {kid: {key: r.get(key) for key in ("pipeline", "baseline_cycles", "best_cycles", "improvement_pct",
                                                      "evaluations", "wall_s", "verdict", "error")}
                     for kid, r in sorted(rows.items())}
        doc["greedy"][objective] = d
    if args.rl:
        lines += ["## Policy", ""]
        rl: dict = {}
        for f in args.rl:
            doc_rl = json.loads(Path(f).read_text())
            rl = {**rl, **{k: v for k, v in doc_rl.items() if k != "groups"},
                  "groups": {**rl.get("groups", {}), **doc_rl.get("groups", {})}}
        t, d = policy_table(rl)
        lines += t
        doc["policy"] = d
    text = "\n".join(lines)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="greedy over the corpus, one JSON per group and pass")
    r.add_argument("--objective", choices=["latency", "throughput"], required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--select", default="all")
    r.add_argument("--sample", type=int, default=3, help="kernels per group searched first (0: no sample pass)")
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--cache", default=None)
    p = sub.add_parser("report", help="tables from run folders (and rl_report.py --parts groups --json)")
    p.add_argument("runs", nargs="*")
    p.add_argument("--rl", action="append", default=[],
                   help="rl_report.py --parts groups --json output (repeatable: a later file's groups "
                        "replace an earlier's)")
    p.add_argument("--generation-note", default=None, help="how long generation took (measured by hand)")
    p.add_argument("--md", default=None)
    p.add_argument("--json", default=None)
    args = ap.parse_args()
    (run if args.cmd == "run" else report)(args)


if __name__ == "__main__":
    main()
