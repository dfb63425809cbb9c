"""The front end's contract over the whole corpus, SASS comparison included.

(a) parse(emit(m)) == m; (b) ptxas compiles the printed PTX to the same SASS
as the committed PTX, for sm_89 and sm_90; (c) printing is idempotent.
"""

from dataclasses import replace

import pytest

from ptxopt.kernels.corpus import load_manifest
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.toolchain.roundtrip import check_text, compare_sass

from corpus_tiers import corpus_params

KERNELS = load_manifest()


@pytest.mark.parametrize("spec", corpus_params(KERNELS))
def test_corpus_kernel_round_trips_to_identical_sass(spec):
    res = check_text(spec.ptx_text(), spec.id, archs=("sm_89", "sm_90"))
    assert not res.error, res.error
    assert res.ir_equal
    assert res.idempotent
    for a in res.archs:
        assert a.status == "same", f"{a.arch}: {a.status} {a.detail}"


def test_sass_comparison_detects_a_real_change():
    """The SASS check must be able to fail: one FMA reads a different register."""
    text = next(k for k in KERNELS if k.id == "gemm_tile_2x2x2").ptx_text()
    m = parse(text)
    body = m.entries[0].body.items
    i = next(n for n, s in enumerate(body) if getattr(s, "opcode", None) == "fma")
    d, a, b, c = body[i].operands
    body[i] = replace(body[i], operands=(d, a, a, c))
    res = compare_sass(text, emit(m), "sm_89")
    assert res.status == "different", res


def test_printing_normalises_layout_only():
    """Re-indenting and squeezing whitespace (outside comments) changes nothing."""
    spec = next(k for k in KERNELS if k.compiler == "nvcc")
    text = spec.ptx_text()
    squeezed = "\n".join(line if "//" in line else " ".join(line.split()) for line in text.splitlines())
    assert squeezed != text
    assert parse(squeezed) == parse(text)
    assert emit(parse(squeezed)) == emit(parse(text))
