"""``python -m ptxopt.sim KERNEL.ptx``: estimated cycles of a PTX kernel (no GPU needed).

Options: ``--arch sm_89``, ``--kernel NAME`` (default: the first entry),
``--trips OFFSET=VALUE`` (repeatable; see :func:`ptxopt.sim.simulate`),
``--loop-trips N`` (static fallback), ``--warps W``, ``--grid G --block B
[--shared BYTES] [--footprint BYTES]`` (the many-warp model: occupancy and
throughput bounds), ``--explain [N]``
(per-instruction timeline, first N steps), ``--branches`` (list the branch
sites that take trip counts), ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys

from ptxopt.toolchain import ToolchainError
from ptxopt.toolchain.arch import DEFAULT_ARCH


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptxopt.sim", description=__doc__.splitlines()[0])
    ap.add_argument("ptx", help="PTX file ('-' for stdin)")
    ap.add_argument("--arch", default=DEFAULT_ARCH)
    ap.add_argument("--kernel")
    ap.add_argument("--trips", action="append", default=[], metavar="OFFSET=VALUE",
                    help="branch outcome: byte offset of the SASS branch (hex or decimal) = value")
    ap.add_argument("--loop-trips", type=int, default=8, metavar="N")
    ap.add_argument("--warps", type=int, default=1)
    ap.add_argument("--grid", type=int, help="blocks in the grid (turns on the many-warp model)")
    ap.add_argument("--block", type=int, help="threads per block (with --grid)")
    ap.add_argument("--shared", type=int, default=0, help="dynamic shared memory per block, bytes")
    ap.add_argument("--footprint", type=int, help="distinct global bytes the launch touches (the DRAM bound)")
    ap.add_argument("--l2", choices=("cold", "warm"), default=None,
                    help="L2 at the start: cold (first touches from DRAM; the default with --grid) or warm "
                         "(the single-warp calibration's state; the default without)")
    ap.add_argument("--explain", nargs="?", const=-1, type=int, metavar="N")
    ap.add_argument("--branches", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from ptxopt.sim import branch_sites, simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    text = sys.stdin.read() if args.ptx == "-" else open(args.ptx, encoding="utf-8").read()
    trips = {}
    for item in args.trips:
        key, _, value = item.partition("=")
        trips[int(key, 0)] = float(value)
    try:
        compiled = compile_ptx(text, args.arch)
        listing = disassemble(compiled.cubin)
    except ToolchainError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.branches:
        for site in branch_sites(listing, args.kernel or next(iter(compiled.kernels), None)):
            print(f"{site.function}+{site.offset:#x}  {site.kind:10s} depth {site.depth}  {site.text}")
        return 0
    try:
        result = simulate(listing, compiled, trips or None, kernel=args.kernel, warps=args.warps,
                          explain=args.explain is not None, loop_trips=args.loop_trips,
                          launch=(args.grid, args.block, args.shared) if args.grid and args.block else None,
                          footprint_bytes=args.footprint,
                          l2=args.l2 or ("cold" if args.grid and args.block else "warm"))
    except (KeyError, ValueError) as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        limit = None if args.explain in (None, -1) else args.explain
        print(result.explain(limit=limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
