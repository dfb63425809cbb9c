"""Houdini's loop in the pipelined-loop proof: one query checked under
assumptions (:class:`ptxopt.equivalence.prove.smt.solver.Incremental`, what
the prover runs) against a fresh query per step (what it ran before).

Every Houdini call the prover makes while proving ``swp_ld_1``/``swp_ld_2``
on the given corpus kernels is run both ways on the same claims: the script
prints each call's claims, checks, the seconds of each way and their ratio,
and exits 1 if the two ways ever drop different claims (Houdini's answer --
the claims that hold on every path -- does not depend on the order of drops,
so they must agree); a call where only one way ran out of time (a query's
limit: ``unknown``, never a verdict) is named.

Usage: ``python benchmarks/studies/houdini_incremental.py [KERNEL ...]``
(default: the corpus kernels whose pipelined loops exercise it most).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.equivalence.prove import prove  # noqa: E402
from ptxopt.equivalence.prove import swp_sim  # noqa: E402
from ptxopt.equivalence.prove.loop_sim import QUERY_TIMEOUT_MS, _Timeout, refute_all  # noqa: E402
from ptxopt.equivalence.prove.smt import solver as solvers  # noqa: E402
from ptxopt.kernels.corpus import load_manifest  # noqa: E402
from ptxopt.passes.pipeline import changed_output  # noqa: E402
from ptxopt.ptx.emit import emit  # noqa: E402
from ptxopt.ptx.parser import parse  # noqa: E402

DEFAULT = ("gen_conv2d_00", "gen_conv1d_00")


def fresh_houdini(q, conds, claims: dict, where: str) -> set:
    """The loop as it was: a new query of the claims still held at every step."""
    dropped: set = set()
    while True:
        live = [(k, c) for k, c in claims.items() if k not in dropped]
        if not live:
            return dropped
        ans = solvers.solve(refute_all(q, conds, [c for _, c in live], "hb"), QUERY_TIMEOUT_MS)
        if ans.status == "unsat":
            return dropped
        if ans.status != "sat":
            raise _Timeout(f"{where}: {ans.note}")
        dropped.update(k for i, (k, _) in enumerate(live) if ans.model.get(f"hb.{i}", 1) == 0)


def main(argv=None) -> int:
    kernels = list(argv if argv is not None else sys.argv[1:]) or list(DEFAULT)
    specs = {k.id: k for k in load_manifest()}
    rows, bad = [], 0
    real = swp_sim._SwpProof._houdini

    def both(self, q, conds, claims, where):
        t = time.perf_counter()
        try:
            old, old_err = fresh_houdini(q, conds, claims, where), None
        except _Timeout as e:
            old, old_err = None, str(e)
        t_old = time.perf_counter() - t
        calls = self.solver_calls
        t = time.perf_counter()
        self.t0 += t_old  # the fresh run's time does not count against the proof's budget
        try:
            new, new_err = real(self, q, conds, claims, where), None
        except _Timeout as e:
            new, new_err = None, str(e)
        t_new = time.perf_counter() - t
        if old_err is None and new_err is None:
            outcome = "same" if old == new else "DIFFERENT DROPS"
        else:
            outcome = "same" if (old_err is None) == (new_err is None) else \
                f"only the {'fresh' if old_err else 'incremental'} way ran out of time"
        rows.append((where, len(claims), self.solver_calls - calls, t_old, t_new, outcome))
        if new_err is not None:
            raise _Timeout(new_err)
        return new

    swp_sim._SwpProof._houdini = both
    for kid in kernels:
        spec = specs[kid]
        m = parse(spec.ptx_text(), kid)
        for p in ("swp_ld_1", "swp_ld_2"):
            out = changed_output(p, m)
            if out is None:
                continue
            n0 = len(rows)
            r = prove(emit(m), emit(out), entry=spec.entry)
            for where, n, checks, t_old, t_new, outcome in rows[n0:]:
                bad += outcome == "DIFFERENT DROPS"
                print(f"{kid} {p}: {n} claims, {checks} checks: fresh {t_old:.2f} s, incremental {t_new:.2f} s "
                      f"({t_old / max(t_new, 1e-9):.1f}x){'' if outcome == 'same' else '  ' + outcome}")
            print(f"{kid} {p}: {r.verdict}")
    t_old = sum(r[3] for r in rows)
    t_new = sum(r[4] for r in rows)
    print(f"\n{len(rows)} Houdini calls: fresh queries {t_old:.1f} s, incremental {t_new:.1f} s "
          f"({t_old / max(t_new, 1e-9):.1f}x); {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
