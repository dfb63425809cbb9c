"""The ``swp_ld`` fuzzer campaign (:mod:`ptxopt.testing.pipelined_loads`):
per class, how many shapes each distance changed or refused, the prover's
verdicts on the results, the mutants the interpreter and the prover each
catch, and every wrong pipelining or false proof (seed and detail).

    python benchmarks/reports/fuzz_pipelined_loads.py [SEEDS]
"""

from __future__ import annotations

import collections
import sys

from ptxopt.testing.pipelined_loads import CLASSES, MUTANTS, PIPELINES, check_shape, make_shape


def main(seeds: int = 10) -> int:
    wrong = []
    print("| class | example | changed d=1/d=2 | proved/inconclusive | mutants: interpreter differs / proved |")
    print("|---|---|---|---|---|")
    for cls in CLASSES:
        applied = collections.Counter()
        verdicts = collections.Counter()
        caught = proved_m = tried_m = 0
        what = make_shape(cls, 0).what
        for s in range(seeds):
            r = check_shape(make_shape(cls, s), prove=True, mutants=True)
            applied.update(r.applied)
            for k, v in r.verdicts.items():
                if k.startswith("mutant"):
                    tried_m += 1
                    proved_m += v == "proved"
                else:
                    verdicts[v] += 1
            caught += len(r.mutants_differ)
            wrong += [(cls, s, *w) for w in r.wrong]
        print(f"| {cls} | {what} | {applied[PIPELINES[0]]}/{applied[PIPELINES[1]]} of {seeds} | "
              f"{verdicts['proved']}/{verdicts['inconclusive']} | {caught}/{proved_m} of {tried_m} |")
    print(f"\nmutants: {', '.join(MUTANTS)}")
    print(f"wrong pipelinings or false proofs: {len(wrong)}")
    for w in wrong[:20]:
        print("  ", w)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
