"""The independent SMT re-check of ``proved`` pairs (slow tier): a second,
independent way to the same verdict.

Every pair the prover calls ``proved`` -- pass-matrix cells (every pass on a
sample of the corpus: every 3rd kernel, so the tier stays within budget;
test_prove_corpus's sweep leaves these kernels to this test) and
every pass on seeded random kernels of the fuzzer -- is re-checked block by
block by :func:`ptxopt.equivalence.prove.smt.recheck`, whose value semantics share no
code with the prover. A counterexample to a ``proved`` pair fails and is
printed; timeouts and unsupported constructs are counted and printed, not
failures."""

import pytest
from corpus_tiers import SMT_RECHECK_EVERY, smt_recheck_kernels

from ptxopt.kernels.corpus import load_manifest
from ptxopt.equivalence.prove.smt import solver
from ptxopt.testing.smt_recheck import fuzz_pairs, matrix_pairs, recheck_pairs

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not solver.available(), reason="no SMT solver installed")]



def _report(what, t):
    print(f"\n{what}: {t.line()}; re-check {sum(t.seconds):.1f} s")
    for k, n in t.unsupported.most_common(8):
        print(f"  unsupported x{n}: {k}")
    for c in t.counterexamples:
        print(f"  COUNTEREXAMPLE {c}")


def test_pass_matrix_proofs_survive_the_solver():
    """Also the prover's check of test_prove_corpus.py's sweep on these
    kernels (which leaves them to this test): every changed pair is
    ``proved`` or ``inconclusive``, with a reason."""
    t = recheck_pairs(matrix_pairs(smt_recheck_kernels(load_manifest())))  # generated: their slow slice
    _report(f"pass matrix (every {SMT_RECHECK_EVERY}rd corpus kernel)", t)
    assert not t.unexplained, "\n".join(t.unexplained)
    assert t.proved > 100
    assert not t.counterexamples, "\n".join(t.counterexamples)
    assert t.status["equal"] >= 0.8 * t.proved  # the re-check is not mostly "unsupported"


def test_fuzzer_proofs_survive_the_solver():
    t = recheck_pairs(fuzz_pairs(range(12)))
    _report("random kernels (12 seeds, every pass)", t)
    assert t.proved > 20
    assert not t.counterexamples, "\n".join(t.counterexamples)
