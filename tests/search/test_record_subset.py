"""The stratified subset ``benchmarks/studies/record_trajectories.py`` records (no search is run)."""

from __future__ import annotations

import pytest

from ptxopt.kernels.corpus import load_manifest
from tests.scripts import load_script


def _script():
    return load_script("benchmarks/studies/record_trajectories.py")


def test_more_variants_of_a_family_come_after_the_subset_it_extends():
    """``--family conv1d=16`` records every conv1d variant; the kernels of the plain subset keep their places
    (so a recording made without it resumes into the larger one) and the new ones follow them."""
    rt = _script()
    family = {k.id: k.family for k in load_manifest()}
    base = rt.subset(4)
    more = rt.subset(4, more={"conv1d": 16, "ew_chain": 6})
    assert more[:len(base)] == base and len(set(more)) == len(more)
    added = more[len(base):]
    assert sum(family[k] == "conv1d" for k in more) == 16 and sum(family[k] == "ew_chain" for k in more) == 6
    assert {family[k] for k in added} == {"conv1d", "ew_chain"}
    assert rt.subset(4, more={"conv1d": 2}) == base  # fewer than --per-family already holds: nothing added
    with pytest.raises(SystemExit, match="no generated family"):
        rt.subset(4, more={"no_such_family": 3})


def test_a_family_given_twice_grows_from_its_first_picks():
    """Evenly spaced picks of 40 are not a superset of those of 16: a recording made with ``gemm_tile=16``
    resumes into ``gemm_tile=16, gemm_tile=40`` without losing a kernel."""
    rt = _script()
    family = {k.id: k.family for k in load_manifest()}
    sixteen = rt.subset(4, more=[("gemm_tile", 16)])
    forty = rt.subset(4, more=[("gemm_tile", 40)])
    grown = rt.subset(4, more=[("gemm_tile", 16), ("gemm_tile", 40)])
    assert not set(sixteen) <= set(forty)  # the reason for steps
    assert grown[:len(sixteen)] == sixteen and sum(family[k] == "gemm_tile" for k in grown) == 40
