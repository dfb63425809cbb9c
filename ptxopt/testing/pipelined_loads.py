"""Random loops with global loads in the shapes that tempt ``swp_ld``, and
the oracle that runs them: the interpreter on the original and on each
``swp_ld`` result.

Every thread ``t`` runs ``m = n + t`` iterations (17 threads: trip counts
``n .. n+16`` in one launch, so 0, 1, d and d+1 are always among them) and
reads the *last* ``m`` words of its own row of ``src`` (or, counting down,
the first ``m``): a load issued for an iteration that does not run reads
past the row, and the last thread's row ends the buffer, so the interpreter
faults. Classes (drawn from a seeded ``random.Random``):

``stream``          ``acc += src[j]`` by an index IV (``mul.wide`` + ``add``); legal
``pointer_iv``      nvcc's form: a pointer IV stepped by an invariant register, a
                    down-counting exit test on another IV; legal
``two_loads``       two streams sharing the address arithmetic; legal
``store_alias``     a store into ``src`` itself (the next element) in the body: must
                    be refused (a prefetched value would be stale)
``store_other``     a store into ``dst`` (another pointer; may alias, no ``.noalias``):
                    must be refused
``barrier``         a ``bar.sync`` in the body: must be refused
``dependent``       ``src[idx[j]]``: the second load's address is a loaded value
                    (refused), the first may be pipelined
``guarded``         the load under ``@%p`` (odd iterations only, or ``@!%p``): legal;
                    its prefetch takes the guard of that iteration, the ``mov`` the
                    original guard (the destination keeps its old value elsewhere)
``guarded_loaded``  the guard is a value loaded from ``aux``: that load refused
                    (the ``aux`` load itself may be pipelined)
``while_loaded``    the exit test reads a loaded value (a sentinel loop): refused

The oracle (:func:`check_shape`): every ``swp_ld`` result that changes the
kernel must finish and store the same bytes as the original on every input
(:data:`INPUTS`); a difference or a fault is a *wrong pipelining*. The
classes that must be refused also count a change as wrong
(:data:`MUST_REFUSE`). With ``prove``/``mutants``, the prover
(:mod:`ptxopt.equivalence.prove.swp_sim`) is checked too: on every result,
and on :data:`MUTANTS`, hand-broken copies of the last one (the rotation
dropped or reordered, the prefetch unpredicated or predicated on the next
iteration only, the prologue's address moved); ``proved`` on anything the
interpreter tells apart is a *false proof*. ``tests/passes/test_pipelined_loads.py`` runs a few seeds
per class; ``benchmarks/reports/fuzz_pipelined_loads.py`` the campaign.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from ptxopt.testing.loop_shapes import HEAD, Shape  # one generated kernel: class, seed, what, text

CLASSES = ("stream", "pointer_iv", "two_loads", "store_alias", "store_other", "barrier", "dependent", "guarded",
           "guarded_loaded", "while_loaded")
#: classes whose every load must stay where it is
MUST_REFUSE = frozenset({"store_alias", "store_other", "barrier", "while_loaded"})
PIPELINES = ("swp_ld_1", "swp_ld_2")
THREADS = 17
ROW = 24  # words per thread's row (the largest trip count is n + 16 <= ROW)
INPUTS = (0, 3, 8)  # n
MAX_STEPS = 400_000


@dataclass
class ShapeResult:
    shape: Shape
    applied: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    wrong: list[tuple[str, int, str]] = field(default_factory=list)  # (pipeline, n, detail)
    verdicts: dict[str, str] = field(default_factory=dict)  # pipeline or "mutant NAME" -> the prover's verdict
    mutants_differ: list[str] = field(default_factory=list)  # mutants the interpreter tells apart


def _drop_rotation(t: str) -> str:
    return re.sub(r"\n\tmov\.b\d+ \t%swp\d+_r\d+, %swp\d+_r\d+;", "", t, count=1)


def _unpredicate(t: str) -> str:
    return re.sub(r"@%swp\d+_[ps]\d+ (ld\.global)", r"\1", t)


def _swap_rotation(t: str) -> str:
    lines = t.split("\n")
    rot = [i for i, s in enumerate(lines) if re.fullmatch(r"\tmov\.b\d+ \t%swp\d+_r\d+, %swp\d+_r\d+;", s)]
    if len(rot) < 2:
        return t
    lines[rot[0]], lines[rot[1]] = lines[rot[1]], lines[rot[0]]
    return "\n".join(lines)


def _shift_prologue(t: str) -> str:
    return re.sub(r"(ld\.global(?:\.\w+)* \t%swp\d+_r\d+, \[%swp\d+_\w+)\]", r"\1+4]", t, count=1)


def _first_iteration_only(t: str) -> str:
    """The prefetch predicated on the next iteration running, not iteration i+d (d = 2)."""
    m = re.search(r"and\.pred \t(%swp\d+_p\d+), (%swp\d+_\w+), %swp\d+_\w+;", t)
    return t if m is None else t.replace(m.group(0), f"mov.pred \t{m.group(1)}, {m.group(2)};")


#: hand-broken results of the pass (text edits of a correct one): the prover must not prove them
MUTANTS = {"rotation dropped": _drop_rotation, "prefetch unpredicated": _unpredicate,
           "rotation order swapped": _swap_rotation, "prologue address off by one word": _shift_prologue,
           "predicate of the next iteration only": _first_iteration_only}


def make_shape(cls: str, seed: int) -> Shape:
    """The kernel of class ``cls`` drawn from ``seed`` (module doc)."""
    rng = random.Random(f"swp:{cls}:{seed}")
    down = cls in ("stream", "two_loads", "dependent") and rng.random() < 0.3
    ty = rng.choice(("s32", "u32")) if not down else "s32"
    cmp = rng.choice(("lt", "ne")) if not down else rng.choice(("gt", "ne"))
    test_first = rng.random() < 0.3
    # %r3: trip count m = n + tid; %rd10: the row base (src + tid*ROW*4); %r4: first index
    pre = ["add.u32 %r3, %r20, %r22;", "setp.eq.u32 %p3, %r3, 0;", "@%p3 bra DONE;",
           f"mul.wide.u32 %rd9, %r22, {ROW * 4};", "add.s64 %rd10, %rd2, %rd9;", "add.s64 %rd13, %rd5, %rd9;"]
    if not down:
        pre += [f"sub.u32 %r4, {ROW}, %r3;", "add.u32 %r5, %r4, %r3;"]  # j from ROW-m up to ROW
        iv_init, bound, step = "%r4", "%r5", 1
    else:
        pre += ["add.s32 %r4, %r3, -1;", "mov.u32 %r5, -1;"]  # j from m-1 down to 0
        iv_init, bound, step = "%r4", "%r5", -1
    pre.append(f"mov.u32 %r1, {iv_init};")
    addr = ["mul.wide.s32 %rd6, %r1, 4;", "add.s64 %rd7, %rd10, %rd6;"]
    use = ["ld.global.u32 %r6, [%rd7];", "add.u32 %r10, %r10, %r6;", "mul.lo.u32 %r11, %r11, 3;",
           "xor.b32 %r11, %r11, %r6;"]
    upd = f"add.{ty} %r1, %r1, {step};"
    test = f"setp.{cmp}.{ty} %p1, %r1, {bound};"
    what = f"{ty} {cmp} step {step}"
    body: list[str]
    if cls == "pointer_iv":
        pre += ["mul.wide.s32 %rd6, %r4, 4;", "add.s64 %rd7, %rd10, %rd6;", "mov.u64 %rd12, 4;",
                "mov.u32 %r7, %r3;"]
        body = ["ld.global.u32 %r6, [%rd7];", "add.s64 %rd7, %rd7, %rd12;", "add.u32 %r10, %r10, %r6;",
                "add.s32 %r7, %r7, -1;", "add.u32 %r1, %r1, 1;", "setp.ne.s32 %p1, %r7, 0;"]
        what = "pointer IV by an invariant register, down-counter test"
    elif cls == "two_loads":
        body = addr + ["add.s64 %rd8, %rd13, %rd6;", "ld.global.u32 %r6, [%rd7];", "ld.global.u32 %r8, [%rd8];",
                       "mad.lo.u32 %r10, %r6, %r8, %r10;", upd, test]
        what += "; two loads"
    elif cls == "store_alias":
        body = addr + use + ["add.u32 %r9, %r6, 1;", f"add.{ty} %r13, %r1, {step};",
                             f"setp.ne.{ty} %p5, %r13, {bound};", f"@%p5 st.global.u32 [%rd7+{4 * step}], %r9;",
                             upd, test]
        what += "; st src[j+1] (the next load's word)"
    elif cls == "store_other":
        body = addr + ["add.s64 %rd8, %rd13, %rd6;"] + use + ["st.global.u32 [%rd8], %r10;", upd, test]
        what += "; st dst[j]"
    elif cls == "barrier":
        body = addr + use + ["bar.sync 0;", upd, test]
        what += "; bar.sync"
    elif cls == "dependent":
        body = addr + ["add.s64 %rd8, %rd13, %rd6;", "ld.global.u32 %r8, [%rd8];", "and.b32 %r8, %r8, 15;",
                       "mul.wide.u32 %rd11, %r8, 4;", "add.s64 %rd12, %rd10, %rd11;", "ld.global.u32 %r6, [%rd12];",
                       "add.u32 %r10, %r10, %r6;", upd, test]
        what += "; src[idx[j] & 15]"
    elif cls == "guarded":
        neg = rng.choice(("", "!"))
        body = addr + ["and.b32 %r9, %r1, 1;", "setp.eq.u32 %p2, %r9, 1;", f"@{neg}%p2 ld.global.u32 %r6, [%rd7];",
                       "add.u32 %r10, %r10, %r6;", upd, test]
        what += f"; @{neg}odd ld"
    elif cls == "guarded_loaded":
        body = addr + ["add.s64 %rd8, %rd13, %rd6;", "ld.global.u32 %r8, [%rd8];", "setp.gt.u32 %p2, %r8, 99;",
                       "@%p2 ld.global.u32 %r6, [%rd7];", "add.u32 %r10, %r10, %r6;", upd, test]
        what += "; @(aux[j] > 99) ld"
    elif cls == "while_loaded":
        body = addr + use + [upd, "setp.ne.u32 %p4, %r6, 0;", f"setp.{cmp}.{ty} %p6, %r1, {bound};",
                             "and.pred %p1, %p6, %p4;"]
        what += "; exit also on a loaded zero"
    else:
        body = addr + use + [upd, test]
    if test_first and cls in ("stream", "two_loads", "barrier", "store_alias"):
        # the test before the update: on i + step (the next index)
        body = [b for b in body if b != test]
        body.insert(0, f"add.{ty} %r12, %r1, {step};")
        body.insert(1, f"setp.{cmp}.{ty} %p1, %r12, {bound};")
        what += "; test before the update"
    text = (HEAD + "\n.visible .entry k(.param .u64 out, .param .u64 src, .param .u64 aux, .param .u32 n)\n{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b32 %r<24>;\n\t.reg .b64 %rd<16>;\n"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u64 %rd3, [src];\n\tld.param.u64 %rd4, [aux];\n"
            "\tld.param.u32 %r20, [n];\n\tcvta.to.global.u64 %rd2, %rd3;\n\tcvta.to.global.u64 %rd5, %rd4;\n"
            "\tcvta.to.global.u64 %rd14, %rd1;\n\tmov.u32 %r22, %tid.x;\n\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 1;\n\tmov.u32 %r6, 0;\n"
            + "".join(f"\t{l}\n" for l in pre) + "L:\n" + "".join(f"\t{l}\n" for l in body) + "\t@%p1 bra L;\n"
            "DONE:\n\tmul.wide.u32 %rd15, %r22, 8;\n\tadd.s64 %rd15, %rd14, %rd15;\n"
            "\tst.global.u32 [%rd15], %r10;\n\tst.global.u32 [%rd15+4], %r11;\n\tret;\n}\n")
    return Shape(cls, seed, what, text)


def _launch(module, n: int, seed: int):
    import numpy as np

    from ptxopt.interp import run_kernel

    rng = np.random.default_rng(seed)
    src = rng.integers(0, 1 << 32, THREADS * ROW, dtype=np.uint64).astype(np.uint32)
    aux = rng.integers(0, 1 << 32, THREADS * ROW, dtype=np.uint64).astype(np.uint32)
    src[rng.integers(0, len(src), 8)] = 0  # sentinels for the while loop
    out = np.zeros(THREADS * 2, dtype=np.uint32)
    r = run_kernel(module, "k", (1, 1, 1), (THREADS, 1, 1), {"out": out, "src": src, "aux": aux, "n": n},
                   max_steps=MAX_STEPS)
    return np.concatenate([r.buffers[0], r.buffers[1], r.buffers[2]])


def _differs(cand_text: str, ref: dict, seed: int) -> str | None:
    from ptxopt import parse
    from ptxopt.interp import InterpError

    cand = parse(cand_text)
    for n, want in ref.items():
        try:
            got = _launch(cand, n, seed)
        except InterpError as e:
            return f"n = {n}: fails: {e}"
        if (got != want).any():
            i = int((got != want).nonzero()[0][0])
            return f"n = {n}: word {i}: {int(want[i])} -> {int(got[i])}"
    return None


def check_shape(shape: Shape, pipelines=PIPELINES, keep_refusals: bool = False, prove: bool = False,
                mutants: bool = False) -> ShapeResult:
    """Run the original and every ``swp_ld`` result that changes it (module doc);
    ``keep_refusals``: also record the reasons of a pipeline that changed something;
    ``prove``: prove each result too (a proof of a result the interpreter tells apart is
    wrong); ``mutants``: also each of :data:`MUTANTS` of the last result (a proof of one the
    interpreter tells apart is wrong; one it does not is only recorded)."""
    from ptxopt import emit, parse
    from ptxopt.interp import InterpError
    from ptxopt.passes.pipeline import Pipeline

    res = ShapeResult(shape)
    original = parse(shape.text)
    ref = {n: _launch(original, n, shape.seed) for n in INPUTS}
    for pipe in pipelines:
        (p,) = Pipeline.parse(pipe).passes
        out, rep = p.apply(original)
        if not rep.changed or emit(out) == emit(original):
            res.refused[pipe] = [s.what for s in rep.refused]
            continue
        res.applied.append(pipe)
        if keep_refusals:
            res.refused[pipe] = [s.what for s in rep.refused]
        if shape.cls in MUST_REFUSE:
            res.wrong.append((pipe, -1, f"applied to a {shape.cls} loop: {rep.changed[0].what}"))
        cand = parse(emit(out))
        for n, want in ref.items():
            try:
                got = _launch(cand, n, shape.seed)
            except InterpError as e:
                res.wrong.append((pipe, n, f"the pipelined kernel fails: {e}"))
                continue
            if (got != want).any():
                i = int((got != want).nonzero()[0][0])
                res.wrong.append((pipe, n, f"word {i}: {int(want[i])} -> {int(got[i])}"))
        if prove or mutants:
            from ptxopt.equivalence.prove import prove as prove_

            text = emit(out)
            if prove:
                v = res.verdicts[pipe] = str(prove_(shape.text, text).verdict)
                if v == "proved" and any(w[0] == pipe for w in res.wrong):
                    res.wrong.append((pipe, -1, "false proof"))
            if mutants and pipe == pipelines[-1]:
                for name, mutate in MUTANTS.items():
                    bad = mutate(text)
                    if bad == text:
                        continue
                    diff = _differs(bad, ref, shape.seed)
                    if diff:
                        res.mutants_differ.append(name)
                    v = res.verdicts[f"mutant {name}"] = str(prove_(shape.text, bad).verdict)
                    if v == "proved" and diff:
                        res.wrong.append((f"mutant {name}", -1, f"false proof ({diff})"))
    return res


def campaign(classes=CLASSES, seeds=range(10)) -> dict[str, list[ShapeResult]]:
    return {cls: [check_shape(make_shape(cls, s)) for s in seeds] for cls in classes}


__all__ = ["CLASSES", "INPUTS", "MUST_REFUSE", "PIPELINES", "Shape", "ShapeResult", "campaign", "check_shape",
           "make_shape"]
