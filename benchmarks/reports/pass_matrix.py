"""The whole-corpus pass matrix: sites changed per pass per kernel family, and
how long each pass takes.

Every pass runs on every corpus kernel; a changed output must re-parse, be
accepted by ptxas and verify equivalent in the interpreter (``broken`` cells
are bugs and make the script exit 1).
Run: ``python benchmarks/reports/pass_matrix.py [--json OUT] [--no-ptxas]``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from ptxopt.kernels.corpus import load_manifest
from ptxopt.testing.matrix import run_cell
from ptxopt.ptx.parser import parse
from ptxopt.passes import pass_names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--no-ptxas", action="store_true", help="skip compiling changed outputs")
    ap.add_argument("--verify-trials", type=int, default=2,
                    help="interpreter equivalence trials per changed cell (0: skip)")
    args = ap.parse_args()
    kernels = load_manifest()
    modules = {k.id: parse(k.ptx_text(), k.id) for k in kernels}
    families = sorted({k.family for k in kernels})
    cells = []
    for name in pass_names():
        for k in kernels:
            cells.append(run_cell(name, k, modules[k.id], compile_check=not args.no_ptxas,
                                  equivalence_trials=args.verify_trials))
    sites = defaultdict(int)
    outcome = defaultdict(lambda: defaultdict(int))
    seconds = defaultdict(float)
    for c in cells:
        sites[c.pass_name, c.family] += c.sites_changed
        outcome[c.pass_name][c.outcome] += 1
        seconds[c.pass_name] += c.seconds
    t = Table(title="sites changed per pass and kernel family", box=None)
    t.add_column("pass")
    for f in families:
        t.add_column(f, justify="right")
    t.add_column("kernels changed/unverified/refused/no-op/broken", justify="right")
    t.add_column("total ms", justify="right")
    for name in pass_names():
        o = outcome[name]
        t.add_row(name, *[str(sites[name, f]) for f in families],
                  f"{o['changed']}/{o['unverified']}/{o['refused']}/{o['no-op']}/{o['broken']}",
                  f"{seconds[name] * 1e3:.1f}")
    Console(width=220).print(t)
    broken = [c for c in cells if c.outcome == "broken"]
    for c in broken:
        print(f"BROKEN {c.pass_name} on {c.kernel}: {c.detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([c.__dict__ for c in cells], f, indent=1)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
