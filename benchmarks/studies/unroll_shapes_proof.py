"""What the prover says about ``unroll`` on random counted-loop shapes, checked by the interpreter.

    python benchmarks/studies/unroll_shapes_proof.py [--cases 40] [--seed 0] [--factors 2,4]

Each case is one loop of one block: a step of 1, 2, 3, -1 or -2, a signed or
unsigned ``lt/le/ne`` (``gt/ge/ne`` going down) test that reads the IV after
its update, before it, through a copy (``x = i + s; i = x; test x``) or one
ahead of it (``x = i + s + 1; i += s; test x``) or the previous iteration's
copy (``test x; x = i + s; i += s``, ``x`` 0 before the loop), with the start
and the bound from parameters or (40%) both constant. The pass (:class:`ptxopt.passes.unroll.Unroll`) rewrites it
or refuses; the prover judges the rewrite; the interpreter then runs both at
starts 0, 2**31-8, 2**32-8 with bounds a few steps around them (launches
whose original runs past 3,000 steps are skipped). Counts: refused by the
pass, proved, not proved; and per verdict, how many rewrites the interpreter
shows wrong. A ``proved`` rewrite that the interpreter shows wrong is a false
proof (must be 0).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n\n.visible .entry k(.param .u64 out, .param .u32 a, " \
       ".param .u32 n)\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<2>;\n"
PRE = ["ld.param.u64 %rd1, [out];", "ld.param.u32 %r1, [a];", "ld.param.u32 %r2, [n];", "mov.u32 %r3, 0;",
       "mov.u32 %r4, 0;"]
FORMS = ("after", "before", "copy", "ahead", "previous")


def shape(rng: random.Random):
    step = rng.choice([1, 2, 3, -1, -2])
    ty = rng.choice(["s32", "u32"])
    cmp = rng.choice(["lt", "le", "ne"] if step > 0 else ["gt", "ge", "ne"])
    form = rng.choice(FORMS)
    const = rng.random() < 0.4  # a constant start and bound: a constant trip count (the pass's exact form)
    bound = str(rng.choice([8, 9, 12, 13])) if const else "%r2"
    if const and step < 0:
        bound = str(-int(bound))
    upd, acc, test = f"add.s32 %r1, %r1, {step};", "add.s32 %r3, %r3, %r1;", f"setp.{cmp}.{ty} %p1, "
    body = {"after": [acc, upd, test + f"%r1, {bound};"],
            "before": [acc, test + f"%r1, {bound};", upd],
            "copy": [acc, f"add.s32 %r4, %r1, {step};", "mov.u32 %r1, %r4;", test + f"%r4, {bound};"],
            "ahead": [acc, f"add.s32 %r4, %r1, {step + 1};", upd, test + f"%r4, {bound};"],
            "previous": [acc, test + f"%r4, {bound};", f"add.s32 %r4, %r1, {step};", upd]}[form]
    tail = ["@%p1 bra L_top;", "st.global.u32 [%rd1], %r3;", "st.global.u32 [%rd1+4], %r1;", "ret;"]
    pre = PRE if not const else [x.replace("ld.param.u32 %r1, [a];", "mov.u32 %r1, 0;") for x in PRE]
    text = HEAD + "".join(x + "\n" if x.endswith(":") else f"\t{x}\n" for x in pre + ["L_top:"] + body + tail)
    return f"step {step:+d} {ty} {cmp} {form}{' const ' + bound if const else ''}", step, text + "}\n"


def wrong_somewhere(orig: str, cand: str, step: int) -> bool | None:
    """True: the interpreter finds a launch where they differ; None: no launch ran."""
    from ptxopt.equivalence.interpret import verify
    from ptxopt.equivalence.launch import Launch, Origin

    ran = False
    for a0 in (0, 0x7FFFFFF8, 0xFFFFFFF8):
        for d in (-3, 0, 1, 2, 3, 4, 5, 7, 8, 9, 17):
            n = (a0 + d * (1 if step > 0 else -1)) % (1 << 32)
            launch = Launch((1, 1, 1), (1, 1, 1), scalars={"a": a0, "n": n}, origin=Origin.CONTRACT, source="bench")
            try:
                res = verify(orig, cand, "k", launch=launch, extra_launches=False, trials=1, max_steps=3000)
            except Exception:  # noqa: BLE001 - the original runs too long here: no evidence
                continue
            if res.status == "mismatch":
                return True
            ran = ran or res.status == "equal"
    return False if ran else None


def main() -> int:
    from ptxopt import emit, parse
    from ptxopt.equivalence.prove import clear_memo, prove
    from ptxopt.passes.unroll import Unroll

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--factors", default="2,4")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts: Counter = Counter()
    t0 = time.perf_counter()
    for _ in range(a.cases):
        what, step, text = shape(rng)
        for f in (int(x) for x in a.factors.split(",")):
            out, rep = Unroll(factor=f).apply(parse(text))
            if not rep.changed:
                counts["refused by the pass"] += 1
                continue
            cand = emit(out)
            clear_memo()
            r = prove(text, cand)
            bad = wrong_somewhere(text, cand, step)
            key = f"{r.verdict}, interpreter {'WRONG' if bad else 'no launch' if bad is None else 'agrees'}"
            counts[key] += 1
            print(f"{what:<24} factor {f}: {key}: {r.reason[:110]}", flush=True)
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"false proofs: {counts['proved, interpreter WRONG']}")
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
