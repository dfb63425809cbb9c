"""What remembering the original's whole paths saves when many candidates are proved against it.

    python benchmarks/speed/prove_original_paths.py [KERNEL ...] [--per-operator 3] [--repeats 3]

A search, and the corpus mutant sweep, prove many candidates against one
original. When the block matcher fails (a CFG that differs, a mutant), the
path proof (:mod:`ptxopt.equivalence.prove.loop_paths`) runs the original's
paths first; they depend on the original alone and are kept with it
(``original_memo.Original.paths``). This script proves every mutant
(:mod:`ptxopt.testing.mutants`) of each kernel against its original twice
per repeat, interleaved: with the memo, and with the kept paths dropped
before each proof (what every proof did before). It prints both best-of
times, their ratio, and checks that the verdicts and reasons are identical.
"""

from __future__ import annotations

import argparse
import sys
import time

from ptxopt.equivalence.prove import clear_memo, loop_paths, prove
from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.testing.mutants import mutants


def _sweep(text: str, entry: str, candidates: list[str], keep: bool) -> tuple[float, list[tuple[str, str]]]:
    clear_memo()
    real = loop_paths.prove_paths

    def forgetting(*args, memo=None, **kw):  # the original's paths run again for every candidate
        return real(*args, memo=None, **kw)

    if not keep:
        loop_paths.prove_paths = forgetting
    try:
        t = time.perf_counter()
        out = []
        for c in candidates:
            r = prove(text, c, entry=entry)
            out.append((str(r.verdict), r.reason))
        return time.perf_counter() - t, out
    finally:
        loop_paths.prove_paths = real
        clear_memo()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="*", default=["cuda_attention_small", "triton_flash_attn_fwd", "gen_gemv_00"])
    ap.add_argument("--per-operator", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    print(f"{'kernel':28s} {'mutants':>7s} {'kept s':>8s} {'each s':>8s} {'ratio':>6s}  same verdicts")
    for kid in a.kernels:
        spec = get(kid)
        m = parse(spec.ptx_text())
        text = emit(m)
        cands = [emit(mu.module) for mu in mutants(m, spec.entry, per_operator=a.per_operator)]
        kept, each, same = [], [], True
        for _ in range(a.repeats):
            tk, vk = _sweep(text, spec.entry, cands, keep=True)
            te, ve = _sweep(text, spec.entry, cands, keep=False)
            kept.append(tk)
            each.append(te)
            same = same and vk == ve
        k, e = min(kept), min(each)
        print(f"{kid:28s} {len(cands):7d} {k:8.2f} {e:8.2f} {e / k:6.2f}  {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
