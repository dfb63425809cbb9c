"""What modelling approximate float results costs the interpreter check.

    python benchmarks/speed/precision_cost.py [--kernels cuda_softmax_row,triton_bias_gelu] [--pass reorder_cp]

For corpus kernels that compute approximate float forms (``ex2.approx``,
``rcp.approx``, ``div.full``...), the check of one pass result (default
``reorder_cp``: it moves instructions, keeps every form) is timed twice on
the kernel's manifest launch: with the interpreter's modelled approximate
bits (:func:`ptxopt.interp.fp.model_error`, what every check runs now) and
with the plain correctly rounded stand-in (:func:`ptxopt.interp.fp.exact_approximations`,
what the interpreter computed before). Prints both times (the best of
``--repeat``, interleaved), their ratio, the share of the modelled check's
time spent in the model (cProfile), both verdicts (they must agree on a rewrite that
keeps every form), and the time of the static precision rule
(:func:`ptxopt.equivalence.assumptions.precision_change`). Process CPU times
on this machine (steadier than wall-clock on a shared one), not a model estimate.
"""

from __future__ import annotations

import argparse
import sys
import time

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.assumptions import precision_change
from ptxopt.equivalence.interpret import verify
from ptxopt.interp import fp
from ptxopt.passes.passmanager import PassManager

KERNELS = ("cuda_softmax_row", "cuda_gelu_tanh", "cuda_layernorm_row", "triton_softmax_row", "triton_bias_gelu",
           "cuda_cross_entropy")


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def _share(fn) -> float:
    """The fraction of ``fn``'s CPU time spent in :func:`ptxopt.interp.fp.model_error`."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    st = pstats.Stats(prof)
    total = max(st.total_tt, 1e-9)
    own = sum(v[3] for k, v in st.stats.items() if k[2] == "model_error")
    return own / total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--pass", dest="pass_name", default="reorder_cp")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    ratios = []
    print(f"{'kernel':24s} {'modelled cpu s':>14s} {'stand-in cpu s':>14s} {'ratio':>6s}  {'model':>6s}  verdicts        static rule")
    for kid in a.kernels.split(","):
        spec = get(kid)
        text = spec.ptx_text()
        cand = emit(PassManager(a.pass_name).run(parse(text)).module)
        if cand == emit(parse(text)):
            print(f"{kid:24s} {a.pass_name} changes nothing: skipped")
            continue
        mo, mc = parse(text), parse(cand)
        t_rule = min(_cpu(lambda: precision_change(mo, mc))[0] for _ in range(5))
        why = precision_change(mo, mc)

        def modelled():
            return verify(text, cand, spec.entry, spec=spec)

        def plain():
            with fp.exact_approximations():
                return verify(text, cand, spec.entry, spec=spec)

        t_model = t_plain = None
        for _ in range(a.repeat):  # interleaved, the best of each: the machine's load drifts
            dt, r_model = _cpu(modelled)
            t_model = dt if t_model is None else min(t_model, dt)
            dt, r_plain = _cpu(plain)
            t_plain = dt if t_plain is None else min(t_plain, dt)
        share = _share(modelled)
        ratios.append(t_model / t_plain)
        print(f"{kid:24s} {t_model:14.3f} {t_plain:14.3f} {t_model / t_plain:6.2f}  "
              f"{share:6.1%}  {r_model.status:7s}/{r_plain.status:7s} {t_rule * 1e3:6.2f} ms ({'flags' if why else 'none'})")
    if ratios:
        print(f"mean ratio modelled / stand-in: {sum(ratios) / len(ratios):.2f} over {len(ratios)} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
