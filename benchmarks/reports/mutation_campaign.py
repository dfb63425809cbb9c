"""Mutation campaign: does the verifier notice a kernel that was changed?

    python benchmarks/reports/mutation_campaign.py [SELECTOR ...] [--per-operator 3] [--json runs/mutation.json]

For every nvcc and Triton corpus kernel (or the selectors given), up to
``--per-operator`` mutants per operator (ptxopt.testing.mutants: change a
constant, drop a store, swap operands, shift an address, drop a barrier)
are verified against the original under the kernel's manifest launch.
Prints mutants x verdicts per operator and lists every ``equal`` (a mutant
the verifier could not tell apart: either an equivalent mutant or a hole).
Targets: no ``equal`` on a non-equivalent mutant; ``differ`` on
at least 90% of mutants.

``--loops F`` adds the loop mutants (ptxopt.testing.loop_mutants: the kernel
unrolled by ``unroll{factor=F}``, then a wrong remainder bound, a dropped
guard, an off-by-one step or a dropped copy), checked against the original
with the interpreter's launches at the loops' boundary trip counts.

``--masked-tails N`` adds N random loops whose extra iterations see only
masked values (ptxopt.testing.masked_tails: a cp.async zero-fill, a guarded
load or copy; the flash-attention causal hole's class), each against its
mutant under a one-thread launch: ``equal`` there is a hole whenever the
case has a witness input (one where the two really differ), and is
counted and listed like any other.

``equal`` on a mutant reviewed by hand as equivalent (``--reviewed``,
default ``benchmarks/mutation_reviewed.json``: kernel, line, description and
a one-line justification) is the correct verdict: it is counted and listed
as ``equivalent (reviewed)``, with its justification, never silently. Every
other ``equal`` is a hole; one the file explains under ``holes`` is listed
with that explanation but still counts as ``equal``. A reviewed entry whose
mutant is now ``differ`` or no longer generated is reported as stale; a
reviewed equivalent the check calls ``inconclusive`` (extra iterations that
see only masked values: the check cannot vary them, so it no longer says
``equal``) is counted as inconclusive and listed with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from ptxopt import parse
from ptxopt.kernels.corpus import select
from ptxopt.testing.loop_mutants import LOOP_OPERATORS, loop_mutants
from ptxopt.testing.mutants import OPERATORS, mutants
from ptxopt.equivalence.interpret import verify

VERDICTS = ("differ", "inconclusive", "equivalent", "equal")  # equivalent: equal on a reviewed equivalent mutant
REVIEWED = Path(__file__).resolve().parents[1] / "mutation_reviewed.json"


def load_reviewed(path: Path | None) -> tuple[dict, dict, set, dict]:
    """``(equivalent, holes, loop, counts)``: (kernel, line, what) ->
    justification, the keys of loop mutants (``"operator": "loop"``), and
    key -> the ``--per-operator`` count that generates the mutant
    (``"per_operator"``, default 2: the sites sampled depend on the count)."""
    if path is None or not path.exists():
        return {}, {}, set(), {}
    d = json.loads(path.read_text())

    def key(e):
        return e["kernel"], int(e["line"]), e["what"]

    return ({key(e): e["why"] for e in d.get("equivalent", ())}, {key(e): e["why"] for e in d.get("holes", ())},
            {key(e) for k in ("equivalent", "holes") for e in d.get(k, ()) if e.get("operator") == "loop"},
            {key(e): int(e.get("per_operator", 2)) for k in ("equivalent", "holes") for e in d.get(k, ())})


def verdict(res) -> str:
    if res.status in ("mismatch", "error"):
        return "differ"
    return res.status  # equal / inconclusive


def masked_tail_rows(n: int, table: dict) -> list[dict]:
    """Verify ``n`` masked-tail cases (seeds 0..n-1) and tally them under ``masked_tail``."""
    from ptxopt.equivalence.interpret import Geometry
    from ptxopt.testing.masked_tails import masked_tail_case

    rows = []
    for seed in range(n):
        case = masked_tail_case(seed)
        res = verify(parse(case.original), parse(case.mutant), "masked_tail", geometry=Geometry(buffer_bytes=1024))
        v = verdict(res)
        why = None
        if v == "equal" and case.witness is None:
            v, why = "equivalent", "no witness: the masked value is neutral for this operation"
        table["masked_tail"][v] += 1
        rows.append({"kernel": f"masked_tail/{seed}", "operator": "masked_tail", "line": 0, "what": case.what,
                     "verdict": v, "detail": (res.error or "")[:200], "reviewed": why})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selectors", nargs="*", default=None,
                    help="corpus selectors (default: nvcc triton; none with --per-operator 0 --masked-tails N)")
    ap.add_argument("--per-operator", type=int, default=3,
                    help="mutants per operator of ptxopt.testing.mutants (0: none, e.g. with --loops)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--loops", type=int, default=0, choices=(0, 2, 4, 8),
                    help="also the loop mutants of unroll{factor=F} (0: none)")
    ap.add_argument("--masked-tails", type=int, default=0,
                    help="also N random masked-tail loops (ptxopt.testing.masked_tails; 0: none)")
    ap.add_argument("--reviewed", type=Path, default=REVIEWED,
                    help="hand-reviewed mutants (JSON: 'equivalent' and 'holes' lists)")
    a = ap.parse_args()
    equivalent, holes, loop_keys, counts = load_reviewed(a.reviewed)
    if a.selectors is None:
        a.selectors = [] if a.masked_tails and a.per_operator <= 0 and not a.loops else ["nvcc", "triton"]
    specs = [s for sel in a.selectors for s in select(sel)]
    table: dict[str, Counter] = defaultdict(Counter)
    rows = []
    t0 = time.perf_counter()
    for spec in specs:
        module = parse(spec.ptx_text(), spec.path)
        generated = mutants(module, spec.entry, a.per_operator) if a.per_operator > 0 else []
        if a.loops:
            generated += loop_mutants(module, spec.entry, a.loops)
        for mu in generated:
            try:
                res = verify(module, mu.module, spec.entry, spec=spec)
                v, detail = verdict(res), (res.error or (str(res.mismatch.buffer) if res.mismatch else ""))
            except Exception as e:  # noqa: BLE001 - the original cannot run: nothing was compared
                v, detail = "inconclusive", f"{type(e).__name__}: {e}"
            why = None
            if v == "equal" and (spec.id, mu.line, mu.what) in equivalent:
                v, why = "equivalent", equivalent[(spec.id, mu.line, mu.what)]
            elif v == "equal":
                why = holes.get((spec.id, mu.line, mu.what))
            elif v == "inconclusive" and (spec.id, mu.line, mu.what) in equivalent:
                why = equivalent[(spec.id, mu.line, mu.what)]  # a weaker verdict on an equivalent mutant: sound
            table[mu.operator][v] += 1
            rows.append({"kernel": spec.id, "operator": mu.operator, "line": mu.line,
                         "what": mu.what, "verdict": v, "detail": detail[:200], "reviewed": why})
        print(f"{spec.id}: {sum(1 for r in rows if r['kernel'] == spec.id)} mutants, "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    if a.masked_tails:
        rows += masked_tail_rows(a.masked_tails, table)
    total = Counter()
    print(f"{'operator':<14}" + "".join(f"{v:>14}" for v in VERDICTS) + f"{'total':>8}")
    for op in (OPERATORS if a.per_operator > 0 else ()) + (LOOP_OPERATORS if a.loops else ()) \
            + (("masked_tail",) if a.masked_tails else ()):
        c = table[op]
        total.update(c)
        print(f"{op:<14}" + "".join(f"{c[v]:>14}" for v in VERDICTS) + f"{sum(c.values()):>8}")
    n = sum(total.values())
    print(f"{'all':<14}" + "".join(f"{total[v]:>14}" for v in VERDICTS) + f"{n:>8}")
    if n:
        print(f"differ: {100 * total['differ'] / n:.1f}% of {n} mutants on {len(specs)} kernels; "
              f"equal (not reviewed equivalent): {total['equal']}; equivalent (reviewed): "
              f"{total['equivalent']}; {time.perf_counter() - t0:.0f} s")
    for r in rows:
        if r["verdict"] == "equivalent":
            print(f"  equivalent (reviewed): {r['kernel']}:{r['line']} {r['what']} -- {r['reviewed']}")
    for r in rows:
        if r["verdict"] == "inconclusive" and r["reviewed"]:
            print(f"  inconclusive, reviewed equivalent: {r['kernel']}:{r['line']} {r['what']} -- {r['detail'][:120]}")
    for r in rows:
        if r["verdict"] == "equal":
            print(f"  equal: {r['kernel']}:{r['line']} {r['what']}"
                  + (f" -- known hole: {r['reviewed']}" if r["reviewed"] else " -- not reviewed"))
    seen = {(r["kernel"], r["line"], r["what"]): r["verdict"] for r in rows}
    kernels = {s.id for s in specs}
    for k in list(equivalent) + list(holes):
        # the kind of mutant this run generates, at the count that samples it (a review of a mutant
        # another count samples is not exercised here, not stale)
        ran = bool(a.loops) if k in loop_keys else (a.per_operator > 0 and (k in seen or counts[k] == a.per_operator))
        # a reviewed equivalent now inconclusive is not stale: the review holds, the check is weaker
        fine = ("equal", "equivalent") + (("inconclusive",) if k in equivalent else ())
        if ran and k[0] in kernels and seen.get(k, "not generated") not in fine:
            print(f"  stale review: {k[0]}:{k[1]} {k[2]} is {seen.get(k, 'not generated')} now")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"table": {k: dict(v) for k, v in table.items()}, "mutants": rows},
                                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
