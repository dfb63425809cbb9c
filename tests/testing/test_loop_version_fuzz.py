"""The vector-row loop fuzzer (ptxopt.testing.vector_loops): loop_version's
results equal the original on every input, and the oracle catches a rewrite
whose runtime test misses its alignment or store-window part."""

import pytest

from ptxopt.testing.vector_loops import campaign, drop_guard_line, make_vector_loop


def test_draws_parse_and_have_one_loop():
    from ptxopt import parse
    from ptxopt.analysis.loops import loops_of

    for s in range(6):
        lp = make_vector_loop(s)
        _, info = loops_of(parse(lp.text).entries[0])
        assert len(info.loops) == 1, lp.what


def test_no_wrong_version_on_a_few_seeds():
    rs = campaign(range(8))
    assert sum(len(r.applied) for r in rs) >= 3  # the class is not all refusals
    assert [(r.loop.seed, r.wrong[0]) for r in rs if r.wrong] == []


@pytest.mark.slow
def test_no_wrong_version_and_broken_tests_are_caught():
    rs = campaign(range(40))
    assert [(r.loop.seed, r.wrong[0]) for r in rs if r.wrong] == []
    reasons = " ".join(x for r in rs for v in r.refused.values() for x in v)
    for why in ("not uniform across the block", "within one trip", "are not 2 consecutive elements"):
        assert why in reasons  # the tempting cases are drawn, and refused
    assert "does not advance by one element" in reasons or "not an affine function" in reasons  # strides, u32
    no_align = campaign(range(40), rewrite=drop_guard_line("align"))
    assert sum(bool(r.wrong) for r in no_align) >= 5
    no_window = campaign(range(70, 95), rewrite=drop_guard_line("window"))  # 73, 92: a store, then its alias loaded
    assert any(r.wrong for r in no_window)


@pytest.mark.slow
def test_a_shared_ring_in_the_loop_is_versioned_in_order():
    """Draws whose loop reads and stages a per-thread shared ring: versioned (the shared accesses
    are another state space, kept in place), equal on every input; staging before reading in the
    fast copy is caught by the oracle."""
    from ptxopt.testing.vector_loops import swap_shared

    seeds = [s for s in range(40) if "shared ring" in make_vector_loop(s).what]
    rs = campaign(seeds)
    assert sum(bool(r.applied) for r in rs) >= 2, [(r.loop.seed, r.refused) for r in rs]
    assert [(r.loop.seed, r.wrong[0]) for r in rs if r.wrong] == []
    swapped = campaign(seeds, rewrite=swap_shared)
    assert all(r.wrong for r in swapped if r.applied)


def test_an_mma_in_the_loop_is_never_versioned(monkeypatch):
    """Draws with an ``mma.sync.aligned`` in the loop (a whole warp, rows that leave every other thread
    misaligned): refused, as a loop holding an instruction the warp must run together. With the loop
    analysis blind to ``.sync.aligned`` (the rule before), the pass versions some of them and the oracle
    catches each one: the warp's threads split between the two copies of the mma."""
    from ptxopt.analysis import loops
    from ptxopt.ptx import operand_facts

    seeds = [s for s in range(120) if "mma" in make_vector_loop(s).what]
    rs = {r.loop.seed: r for r in campaign(seeds)}
    assert len(seeds) >= 10 and not any(r.applied for r in rs.values())
    monkeypatch.setattr(loops, "needs_whole_warp", lambda ins: operand_facts.facts(ins).role == "collective")
    versioned = [r for r in campaign(seeds) if r.applied]
    assert versioned and all(r.wrong and "mma.sync.aligned" in r.wrong[0].detail for r in versioned)
    for r in versioned:  # refused because of the mma, and nothing else
        reasons = " ".join(x for v in rs[r.loop.seed].refused.values() for x in v)
        assert ".sync.aligned instruction in the loop" in reasons, reasons
