"""CFG.dominators (its own Cooper-Harvey-Kennedy iteration, so the CFG needs no
networkx) equals networkx's immediate_dominators on random control flow."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from ptxopt.analysis.cfg import CFG
from ptxopt.ptx.parser import parse


def _random_kernel(rng: random.Random, n: int) -> str:
    body = [".reg .pred %p<2>;", ".reg .b32 %r<2>;"]
    for i in range(n):
        body.append(f"L{i}:")
        body.append("add.s32 %r1, %r1, 1;")
        kind = rng.random()
        j = rng.randrange(n)
        if kind < 0.35:
            body.append(f"@%p1 bra L{j};")  # two successors
        elif kind < 0.6:
            body.append(f"bra L{j};")  # one, maybe backwards
        elif kind < 0.7:
            body.append("ret;")
    body.append("ret;")
    return ".version 8.8\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n" + "\n".join(body) + "\n}\n"


@pytest.mark.parametrize("seed", range(30))
def test_dominators_match_networkx(seed):
    rng = random.Random(seed)
    cfg = CFG(parse(_random_kernel(rng, rng.randrange(1, 14))).entries[0])
    assert cfg.dominators() == nx.immediate_dominators(cfg.graph, 0)
