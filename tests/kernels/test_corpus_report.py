"""``benchmarks/reports/corpus_report.py``: the whole-corpus greedy plan (stratified
sample first, every kernel once) and the per-group tables, on fake search
rows (no search is run here)."""

from __future__ import annotations

import json

from ptxopt.kernels.corpus import select
from tests.scripts import load_script


def _load():
    return load_script("benchmarks/reports/corpus_report.py")


def test_sample_is_evenly_spread_and_plan_covers_every_kernel_once():
    cr = _load()
    ids = [f"k{i}" for i in range(10)]
    assert cr.sample(ids, 3) == ["k0", "k4", "k9"]  # first, middle, last: not the first three
    assert cr.sample(ids[:2], 3) == ids[:2]
    specs = select("all")
    steps = cr.plan(specs, 3)
    passes = [p for p, _, _ in steps]
    assert passes == sorted(passes, key=lambda p: p != "sample")  # every group's sample before any rest
    planned = [i for _, _, ids in steps for i in ids]
    assert sorted(planned) == sorted(k.id for k in specs)  # each kernel exactly once
    assert {g for p, g, _ in steps if p == "sample"} == {k.group for k in specs}


def test_greedy_table_extrapolates_per_group_and_says_so(tmp_path):
    cr = _load()
    specs = select("all")
    groups = cr.groups_of(specs)
    g0, g1 = list(groups)[:2]
    rows = {k.id: {"kernel": k.id, "wall_s": 10.0, "improvement_pct": 20.0, "evaluations": 30,
                   "pipeline": "maxnreg_255", "objective": "latency", "error": None} for k in groups[g0][:2]}
    rows[groups[g1][0].id] = {"kernel": groups[g1][0].id, "wall_s": 4.0, "improvement_pct": 0.0, "evaluations": 12,
                              "pipeline": "", "objective": "latency", "error": None}
    lines, doc = cr.greedy_tables("latency", rows, groups)
    assert doc["groups"][g0]["group_s_extrapolated"] == 10.0 * len(groups[g0])
    assert doc["groups"][g1]["s_per_kernel"] == 4.0 and doc["groups"][g1]["improved"] == 0
    # a group nobody searched takes the mean over all searched kernels, marked as such
    g2 = list(groups)[2]
    assert doc["groups"][g2]["searched"] == 0 and doc["groups"][g2]["group_s_extrapolated"] == 8.0 * len(groups[g2])
    assert doc["searched"] == 3 and any("ESTIMATE from the searched kernels" in line for line in lines)
    assert any("maxnreg_255 x2" in line for line in lines)
    (tmp_path / "sample_x.json").write_text(json.dumps({"kernels": list(rows.values())}))
    objective, loaded = cr.load_runs(tmp_path)
    assert objective == "latency" and loaded == rows
