"""Before/after comparison of two throughput audits (``benchmarks/reports/throughput_audit.py`` tables).

Why: the audit's point is which gains a model change removed and which remain;
two separate tables make the reader pair rows by hand.  This joins them by
kernel: gain, pipeline and binding bounds (before and after the pipeline) from
each run, and the greedy mean per group over the kernels both runs hold (so the
means compare) and over each run's own rows.

An ``after`` run can come in shards (several ``throughput_audit.py --only ...
--merge`` runs over copies of the before table, one process each): ``--after
FILE:K1,K2,...`` takes only those kernels' rows from FILE.  Every cycle figure
is an ESTIMATE of the sim model (throughput: uncalibrated).

Usage: ``python benchmarks/reports/throughput_audit_compare.py --before B.json --after A.json [--after A2.json:k1,k2]
[--out STEM] [--judge judgements.json] [--note @NOTE.md]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def load_after(specs: list[str]) -> dict:
    """The after rows (by kernel) from ``FILE`` or ``FILE:K1,K2`` specs, and the first file's header."""
    rows, head = {}, None
    for spec in specs:
        path, _, keep = spec.partition(":")
        doc = json.loads(Path(path).read_text())
        head = head or {k: v for k, v in doc.items() if k not in ("kernels", "groups", "mean_gain_pct")}
        wanted = set(keep.split(",")) if keep else None
        for r in doc["kernels"]:
            if wanted is None or r["kernel"] in wanted:
                rows[r["kernel"]] = r
    return {"head": head, "rows": rows}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _pct(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def compare(before: dict, after_rows: dict, judge: dict) -> dict:
    """Rows joined by kernel (before order first, then kernels only the after run has) and group means."""
    brows = {r["kernel"]: r for r in before["kernels"]}
    order = [r["kernel"] for r in before["kernels"] if r["kernel"] in after_rows]
    order += [k for k in after_rows if k not in brows]
    rows = []
    for k in order:
        b, a = brows.get(k), after_rows[k]
        rows.append({"kernel": k, "group": a["group"],
                     "gain_before": None if b is None else b["gain_pct"], "gain_after": a["gain_pct"],
                     "pipeline_before": None if b is None else b["pipeline"], "pipeline_after": a["pipeline"],
                     "binding_before": None if b is None else [b.get("binding_before"), b.get("binding_after")],
                     "binding_after": [a.get("binding_before"), a.get("binding_after")],
                     "mechanism_before": None if b is None else b.get("mechanism"),
                     "mechanism_after": a.get("mechanism"), "error_after": a.get("error"),
                     **judge.get(k, {})})
    groups: dict[str, dict] = {}
    for g in sorted({r["group"] for r in rows}):
        gr = [r for r in rows if r["group"] == g]
        both = [r for r in gr if r["gain_before"] is not None and r["gain_after"] is not None]
        groups[g] = {"kernels": len(gr), "paired": len(both),
                     "mean_before": _mean([r["gain_before"] for r in both]),
                     "mean_after_paired": _mean([r["gain_after"] for r in both]),
                     "mean_after_all": _mean([r["gain_after"] for r in gr if r["gain_after"] is not None])}
    both = [r for r in rows if r["gain_before"] is not None and r["gain_after"] is not None]
    return {"rows": rows, "groups": groups, "paired": len(both),
            "mean_before": _mean([r["gain_before"] for r in both]),
            "mean_after_paired": _mean([r["gain_after"] for r in both]),
            "mean_after_all": _mean([r["gain_after"] for r in rows if r["gain_after"] is not None])}


def markdown(c: dict, head: dict, note: str) -> str:
    lines = ["# Throughput audit, before/after: greedy under `--objective throughput`",
             "", "Every cycle figure is an ESTIMATE of the sim model (throughput: uncalibrated). "
             "Written by `benchmarks/reports/throughput_audit_compare.py` from the two `throughput_audit.py` tables.",
             "", note, "",
             f"Greedy mean over the {c['paired']} kernels in both runs: {_pct(c['mean_before'])}% -> "
             f"{_pct(c['mean_after_paired'])}%; after, over all {len(c['rows'])} kernels: {_pct(c['mean_after_all'])}%.",
             "", "| group | kernels (paired) | mean before % | mean after % (paired) | mean after % (all) |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {g} | {s['kernels']} ({s['paired']}) | {_pct(s['mean_before'])} | {_pct(s['mean_after_paired'])} "
              f"| {_pct(s['mean_after_all'])} |" for g, s in c["groups"].items()]
    lines += ["", "Binding = the binding bound of the kernel before -> after the pipeline (given for gains >= 5%).",
              "", "| kernel | group | gain before % | gain after % | pipeline before | pipeline after | binding before "
              "| binding after | mechanism after | physically possible? |", "|---|---|---:|---:|---|---|---|---|---|---|"]

    def bind(x):
        return "" if not x or not x[0] else f"{x[0]} -> {x[1]}"

    for r in c["rows"]:
        lines.append(f"| {r['kernel']} | {r['group']} | {_pct(r['gain_before'])} | {_pct(r['gain_after'])} | "
                     f"{r['pipeline_before'] or '-'} | {r['pipeline_after'] or '-'} | {bind(r['binding_before'])} | "
                     f"{bind(r['binding_after'])} | {r['mechanism_after'] or r['error_after'] or ''} | "
                     f"{r.get('verdict', '')} |")
    judged = [r for r in c["rows"] if r.get("why")]
    if judged:
        lines += ["", "## Gains >= 5% after: mechanism and whether it is physically possible", ""]
        lines += [f"- **{r['kernel']}** ({_pct(r['gain_after'])}%, `{r['pipeline_after']}`): "
                  f"{r['verdict']}. {r['why']}" for r in judged]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=str(ROOT / "benchmarks" / "results" / "throughput_audit.json"))
    ap.add_argument("--after", action="append", required=True, help="FILE or FILE:K1,K2 (rows of those kernels)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "throughput_audit_after"))
    ap.add_argument("--judge", default=None, help="JSON {kernel: {verdict, why}}: a reader's judgement of each gain")
    ap.add_argument("--note", default="", help="text for the table's head (the sample, the run); @FILE reads FILE")
    ap.add_argument("--search-wall-s", type=float, default=None, help="the after run's wall time (shards in parallel)")
    args = ap.parse_args()

    from throughput_audit import markdown as audit_markdown, summarise

    before = json.loads(Path(args.before).read_text())
    after = load_after(args.after)
    note = Path(args.note[1:]).read_text().strip() if args.note.startswith("@") else args.note
    judge = json.loads(Path(args.judge).read_text()) if args.judge else {}
    out = Path(args.out)
    head = {**after["head"], "label": "after"}
    if args.search_wall_s is not None:
        head["search_wall_s"] = args.search_wall_s
    c = compare(before, after["rows"], judge)
    doc = summarise({**head, "kernels": [after["rows"][r["kernel"]] for r in c["rows"]]})  # the before's order
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(audit_markdown(doc))
    cmp = out.with_name(out.name + "_vs_before")
    cmp.with_suffix(".json").write_text(json.dumps(c, indent=1) + "\n")
    cmp.with_suffix(".md").write_text(markdown(c, head, note))
    print(f"paired {c['paired']}: {_pct(c['mean_before'])}% -> {_pct(c['mean_after_paired'])}%; "
          f"all after {_pct(c['mean_after_all'])}%")


if __name__ == "__main__":
    main()
