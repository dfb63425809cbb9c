"""An SMT decision procedure beside the structural prover.

The structural prover (:mod:`ptxopt.equivalence.prove`) shows two blocks equal when they
build the same value graph; it cannot see that ``mul.lo.s32 %r2, %r1, 128``
and ``shl.b32 %r2, %r1, 7`` are the same function. This package asks a
bit-vector solver instead, for one pair of matched blocks at a time.

What is independent and what is shared:

* **new code** (no line shared with the prover's :mod:`~ptxopt.equivalence.prove.symexec`,
  :mod:`~ptxopt.equivalence.prove.values`, :mod:`~ptxopt.equivalence.prove.memory_versions`): the meaning of
  every instruction (:mod:`.encode`: bit-vector semantics at declared widths,
  the carry flag, addresses modulo the space's width, memory as byte arrays
  per state space, floating point as uninterpreted functions keyed by the
  exact operator) and the obligations checked per block (:mod:`.check`);
* **shared** with the prover: the CFG (:mod:`ptxopt.analysis.cfg`) and the
  block-by-block matching of the two CFGs (same blocks, labels and
  successors), liveness (:mod:`ptxopt.analysis.defuse`), the operand facts
  (:mod:`ptxopt.ptx.operand_facts`: destinations, address base/offset/space) and
  the parser. The encoding uses no alias facts of its own: two accesses are
  disjoint only when the solver shows their addresses differ, and pointers
  from different parameters may always alias, so the prover's alias rules
  (:mod:`ptxopt.equivalence.prove.memory_versions`, tested separately against the interpreter in
  ``tests/equivalence/test_smt.py``) are not trusted here.

Two uses: :func:`ptxopt.equivalence.prove.match.prove_function` calls :func:`.check.check_block`
when its own comparison of a block fails (a ``proved`` it then returns says
which blocks the solver showed equal), and :func:`.check.recheck` re-checks a
whole ``proved`` pair independently (the slow tier's pass-matrix and fuzzer
re-checks). The solver (:mod:`.solver`) is bitwuzla or z3, chosen by
``benchmarks/studies/smt_solvers.py``.
"""

from ptxopt.equivalence.prove.smt.check import (
    BlockCheck,
    Recheck,
    check_block,
    check_function,
    recheck,
)

__all__ = ["BlockCheck", "Recheck", "check_block", "check_function", "recheck"]
