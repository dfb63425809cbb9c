"""Random loops whose extra iterations see only masked values.

An unrolled loop whose guard is dropped runs up to ``F - 1`` iterations past
the trip count. In a Triton kernel those iterations' loads are masked (a
false guard keeps the register's default, a ``cp.async`` zero-fills), so
they read no element: the read footprint cannot show them and a spike
cannot vary them. Whether the result changes depends on the fixed value
alone: ``max(m, -inf)`` and ``x * 1`` are identities, but ``s + 0.0`` turns a
``-0.0`` sum into ``+0.0`` (the flash-attention causal hole), ``max(m,
+0.0)`` lifts a negative maximum and ``p * 0.0`` zeroes a product (the last
two show on ordinary inputs too).

:func:`masked_tail_case` draws one such pair from a seed: a one-thread loop
``acc = acc OP x[i]`` over ``i < n`` whose read of ``x[i]`` is masked by ``i
< n`` (:data:`FORMS`), and a mutant whose bound is ``n`` rounded up to a
multiple of ``F``. ``witness`` is an input on which the two differ, when the
operation and the masked value make one (None: the pair is equivalent).
The oracle (``tests/equivalence/test_read_footprint.py``,
``benchmarks/reports/mutation_campaign.py --masked-tails``): the check never says
``equal`` of such a pair -- the masked-read counts differ
(:func:`ptxopt.equivalence.footprint.masked_difference`) -- and a witness
really shows a difference.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

#: how the loop's read of x[i] is masked
FORMS = ("cp_zero_fill", "cp_guarded", "ld_guarded", "ld_guarded_v2")
#: the accumulation: (name, initial value bits, instruction, masked default for guarded loads)
ACCUMULATORS = {
    "add_from_neg_zero": ("0f80000000", "add.f32 %f1, %f1, %f2;", "0f00000000"),
    "add_from_pos_zero": ("0f00000000", "add.f32 %f1, %f1, %f2;", "0f00000000"),
    "max_from_neg_inf": ("0fFF800000", "max.f32 %f1, %f1, %f2;", "0fFF800000"),
    "mul_from_one": ("0f3F800000", "mul.rn.f32 %f1, %f1, %f2;", "0f3F800000"),
}

_KERNEL = """.version 8.0
.target sm_80
.address_size 64

.visible .entry masked_tail(.param .u64 px, .param .u64 pout, .param .u32 pn)
{{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 sm[16];
	ld.param.u64 %rd1, [px];
	ld.param.u64 %rd2, [pout];
	ld.param.u32 %r5, [pn];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, sm;
	add.s32 %r6, %r5, {up};
	and.b32 %r6, %r6, {mask};
	mov.f32 %f1, {init};
	mov.u32 %r2, 0;
$L_loop:
	setp.lt.u32 %p2, %r2, %r5;
	mul.wide.u32 %rd3, %r2, {stride};
	add.s64 %rd4, %rd1, %rd3;
{read}
	{acc}
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, {bound};
	@%p1 bra $L_loop;
	st.global.f32 [%rd2], %f1;
	ret;
}}
"""


def _read(form: str, default: str) -> tuple[str, int]:
    """The masked read of x[i] into %f2, and the loop's stride in bytes."""
    if form == "cp_zero_fill":
        return ("\tselp.b32 %r3, 4, 0, %p2;\n\tcp.async.ca.shared.global [%r1], [%rd4], 4, %r3;\n"
                "\tcp.async.wait_all;\n\tld.shared.f32 %f2, [%r1];"), 4
    if form == "cp_guarded":
        return (f"\tst.shared.f32 [%r1], {default};\n\t@%p2 cp.async.ca.shared.global [%r1], [%rd4], 4;\n"
                "\tcp.async.wait_all;\n\tld.shared.f32 %f2, [%r1];"), 4
    if form == "ld_guarded":
        return f"\tmov.f32 %f2, {default};\n\t@%p2 ld.global.f32 %f2, [%rd4];", 4
    if form == "ld_guarded_v2":  # the pair's first element counts, the second is read and dropped
        return f"\tmov.f32 %f2, {default};\n\tmov.f32 %f3, {default};\n\t@%p2 ld.global.v2.f32 {{%f2, %f3}}, [%rd4];", 8
    raise ValueError(form)


@dataclass
class MaskedTail:
    seed: int
    form: str
    accumulator: str
    factor: int
    original: str
    mutant: str
    #: ``(x, n)`` on which the two kernels store different bits, or None (equivalent)
    witness: tuple | None

    @property
    def what(self) -> str:
        return f"{self.form}, {self.accumulator}, bound rounded up to {self.factor}"


def masked_tail_case(seed: int) -> MaskedTail:
    """The case for ``seed`` (deterministic; module doc)."""
    rng = random.Random(seed)
    form = rng.choice(FORMS)
    acc = rng.choice(sorted(ACCUMULATORS))
    factor = rng.choice((2, 4, 8))
    init, op, default = ACCUMULATORS[acc]
    fill = "0f00000000" if form == "cp_zero_fill" else default  # what a masked iteration sees
    read, stride = _read(form, default)
    text = _KERNEL.format(up=factor - 1, mask=-factor, init=init, stride=stride, read=read, acc=op,
                          bound="{bound}")
    x = np.zeros(16 if stride == 8 else 8, np.float32)
    witness = None
    if acc == "add_from_neg_zero":  # -0.0 + -0.0 = -0.0, then + masked +0.0 = +0.0
        x[0] = -0.0
        witness = (x, 1)
    elif acc == "max_from_neg_inf" and fill == "0f00000000":  # a negative maximum lifted to +0.0
        x[0] = -1.0
        witness = (x, 1)
    elif acc == "mul_from_one" and fill == "0f00000000":  # a product times a zero-filled 0.0
        x[0] = 2.0
        witness = (x, 1)
    return MaskedTail(seed, form, acc, factor, text.replace("{bound}", "%r5"), text.replace("{bound}", "%r6"),
                      witness)


def witness_differs(case: MaskedTail) -> bool:
    """Whether the witness input makes the two kernels store different bits."""
    from ptxopt.interp import run_kernel
    from ptxopt.ptx.parser import parse

    x, n = case.witness
    outs = [run_kernel(parse(t), "masked_tail", 1, 1, [x.copy(), np.ones(1, np.float32), n]).buffers[1]
            for t in (case.original, case.mutant)]
    return outs[0].view(np.uint32)[0] != outs[1].view(np.uint32)[0]


__all__ = ["ACCUMULATORS", "FORMS", "MaskedTail", "masked_tail_case", "witness_differs"]
