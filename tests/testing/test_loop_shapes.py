"""The loop-shape fuzzer (ptxopt.testing.loop_shapes): every class draws
kernels that run, and no unroll of them changes what they store."""

import pytest

from ptxopt import parse
from ptxopt.analysis.loops import loops_of
from ptxopt.testing.loop_shapes import CLASSES, check_shape, make_shape


@pytest.mark.parametrize("cls", CLASSES)
def test_shapes_parse_and_have_a_loop(cls):
    for seed in range(3):
        sh = make_shape(cls, seed)
        _, info = loops_of(parse(sh.text).entries[0])
        assert info.loops, sh.what
        assert make_shape(cls, seed).text == sh.text  # seeded: the same kernel again


@pytest.mark.slow
@pytest.mark.parametrize("cls", CLASSES)
def test_no_wrong_unroll(cls):
    applied = 0
    for seed in range(2):
        r = check_shape(make_shape(cls, seed))
        assert not r.wrong, (cls, seed, r.shape.what, [(w.pipeline, w.inputs, w.detail) for w in r.wrong])
        applied += len(r.applied)
    assert applied or cls == "previous_value"  # the shapes are unrolled, not all refused
