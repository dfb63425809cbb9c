"""Triton softmax cross-entropy loss, one row per program.

loss[r] = logsumexp(logits[r, :]) - logits[r, label[r]] for 32 rows of 100
classes (BLOCK = 128, masked).  The target logit is a single scalar gather
through the label, as in fused cross-entropy kernels (e.g. Liger).
"""

import triton
import triton.language as tl


@triton.jit
def cross_entropy(logits_ptr, labels_ptr, loss_ptr, stride, classes, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    z = tl.load(logits_ptr + row * stride + offs, mask=offs < classes, other=-float("inf"))
    m = tl.max(z, axis=0)
    lse = tl.log(tl.sum(tl.exp(z - m), axis=0)) + m
    label = tl.load(labels_ptr + row)
    target = tl.load(logits_ptr + row * stride + label)
    tl.store(loss_ptr + row, lse - target)


CORPUS = [
    dict(
        name="cross_entropy",
        performance=dict(
            grid=(131072, 1, 1),
            scalars={"stride": 100, "classes": 100},
            counts={"logits_ptr": 13107200, "labels_ptr": 131072, "loss_ptr": 131072},
            problem="131072 rows x 100 classes f32 (BLOCK=128 compiled in: at most 128 classes), one row per program",
        ),
        kernel=cross_entropy,
        family="loss",
        grid=(32, 1, 1),
        num_warps=1,
        constexprs={"BLOCK": 128},
        params=[
            ("logits_ptr", "input", "f32", 3200),
            ("labels_ptr", "input", "s32", 32, {"range": [0, 100]}),
            ("loss_ptr", "output", "f32", 32),
            ("stride", "scalar", "s32", 100),
            ("classes", "scalar", "s32", 100),
        ],
        shape={"rows": 32, "classes": 100},
    ),
]
