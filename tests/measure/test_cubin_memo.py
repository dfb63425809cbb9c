"""SASS and sim estimates keyed by cubin digest: an identical cubin
runs neither nvdisasm nor the model again and gets the same numbers; another
objective, launch or device does not share the entry."""

from __future__ import annotations

import dataclasses

import pytest

import ptxopt.sim
from ptxopt.kernels.corpus import get
from ptxopt.evaluate import Candidate
from ptxopt.measure import cubin_memo
from ptxopt.measure.backend import MeasureJob, Measurement
from ptxopt.measure.sim import SimBackend
from ptxopt.toolchain import compile_ptx, find_nvdisasm, process


@pytest.fixture
def counts(monkeypatch):
    """nvdisasm runs and model runs (ptxopt.sim.simulate calls)."""
    find_nvdisasm()  # its --version probe done before counting
    n = {"nvdisasm": 0, "model": 0}
    run_once, simulate = process._run_once, ptxopt.sim.simulate

    def counted_run(argv, tool, timeout, cwd):
        if not any(a.startswith("--") for a in argv[1:]):  # a disassembly, not the locator's --version probe
            n[tool] = n.get(tool, 0) + 1
        return run_once(argv, tool, timeout, cwd)

    def counted_sim(*a, **k):
        n["model"] += 1
        return simulate(*a, **k)

    monkeypatch.setattr(process, "_run_once", counted_run)
    monkeypatch.setattr(ptxopt.sim, "simulate", counted_sim)
    cubin_memo.clear()
    yield n
    cubin_memo.clear()


@pytest.fixture(scope="module")
def kernel():
    spec = get("gemm_tile_2x2x2")
    text = Candidate.from_corpus(spec).ptx
    # another text, the same cubin: a comment changes the PTX, not the code
    other = text + "\n// a comment ptxas ignores\n"
    a, b = compile_ptx(text, "sm_89"), compile_ptx(other, "sm_89")
    assert a.cubin == b.cubin and text != other
    return spec, text, other, a, b


def _job(text, compiled, spec, **kw) -> MeasureJob:
    return MeasureJob(text, compiled.arch, None, spec.entry, compiled, profile_loops=False, **kw)


def _numbers(m: Measurement) -> tuple:
    return (m.cycles, m.registers, m.spill_store_bytes, m.spill_load_bytes, m.sass_instructions, m.notes,
            m.extra)


def test_identical_cubin_runs_nothing_again(counts, kernel):
    spec, text, other, a, b = kernel
    sim = SimBackend()
    first = sim.measure_many([_job(text, a, spec)])[0]
    assert isinstance(first, Measurement)
    assert counts["nvdisasm"] == 1 and counts["model"] == 1
    second = sim.measure_many([_job(other, b, spec)])[0]
    assert counts["nvdisasm"] == 1 and counts["model"] == 1  # neither ran again
    assert _numbers(second) == _numbers(first)
    # the same numbers as a cold evaluation
    cubin_memo.clear()
    cold = sim.measure_many([_job(other, b, spec)])[0]
    assert counts["nvdisasm"] == 2 and counts["model"] == 2
    assert _numbers(cold) == _numbers(first)


def test_identical_cubins_in_one_batch_disassembled_once(counts, kernel, monkeypatch):
    spec, text, other, a, b = kernel
    seen = []
    import ptxopt.measure.disasm as disasm

    many = disasm.disassemble_many

    def spy(cubins, **kw):
        seen.append(len(cubins))
        return many(cubins, **kw)

    monkeypatch.setattr(disasm, "disassemble_many", spy)
    out = SimBackend().measure_many([_job(text, a, spec), _job(other, b, spec)])
    assert seen == [1]  # one distinct cubin went to nvdisasm
    assert counts["model"] == 1
    assert _numbers(out[0]) == _numbers(out[1])
    assert out[0].extra is not out[1].extra  # each candidate its own copy


def test_objective_launch_and_device_do_not_share(counts, kernel):
    spec, text, other, a, b = kernel
    sim = SimBackend()
    base = sim.measure_many([_job(text, a, spec)])[0]
    variants = [
        _job(text, a, spec, objective="throughput", check_block=(32, 1, 1), blocks=1),
        _job(text, a, spec, objective="throughput", check_block=(32, 1, 1), blocks=4096),  # another launch
        _job(text, a, spec, objective="throughput", check_block=(64, 1, 1), blocks=4096),
    ]
    out = [sim.measure_many([j])[0] for j in variants]
    assert counts["model"] == 1 + len(variants)  # each its own entry
    assert counts["nvdisasm"] == 1  # the SASS is the cubin's alone
    assert all(isinstance(m, Measurement) for m in out)
    assert out[0].extra["performance"] != out[1].extra["performance"] != out[2].extra["performance"]
    assert base.extra["objective"] == "latency" and out[0].extra["objective"] == "throughput"
    # the device: the same bytes measured for another architecture is another entry
    sim.measure_many([dataclasses.replace(_job(text, a, spec), arch="sm_90")])
    assert counts["model"] == 2 + len(variants)
    # and asking again for each is free
    for j in variants:
        sim.measure_many([j])
    assert counts["model"] == 2 + len(variants)


def test_failures_are_not_remembered(counts, kernel, monkeypatch):
    spec, text, other, a, b = kernel

    def boom(*a, **k):
        counts["model"] += 1
        raise RuntimeError("model bug")

    monkeypatch.setattr(ptxopt.sim, "simulate", boom)
    sim = SimBackend()
    assert isinstance(sim.measure_many([_job(text, a, spec)])[0], RuntimeError)
    assert isinstance(sim.measure_many([_job(text, a, spec)])[0], RuntimeError)
    assert counts["model"] == 2


def test_sass_counts_for_a_backend_without_them_take_one_run(counts, kernel):
    """A backend that reports no SASS count (the GPU's) gets it filled in from
    one batched nvdisasm run per chunk, not one run per candidate."""
    from types import SimpleNamespace

    from ptxopt.evaluate.batch import _with_sass_counts

    spec, text, other, a, b = kernel
    c = compile_ptx(Candidate.from_corpus(get("gemm_tile_4x4x4")).ptx, "sm_89")
    works = [SimpleNamespace(compiled=x, entry=e) for x, e in ((a, spec.entry), (b, spec.entry),
                                                               (c, "gemm_tile_4x4x4"))]
    out = _with_sass_counts([Measurement(100.0, False)] * 3, works, [0, 1, 2])
    assert counts["nvdisasm"] == 1
    assert out[0].sass_instructions == out[1].sass_instructions > 0
    assert out[2].sass_instructions > out[0].sass_instructions


def test_another_nvdisasm_does_not_reuse_a_remembered_listing(kernel, tmp_path, monkeypatch):
    """The memo is keyed by the decoder too: pointing ``PTXOPT_NVDISASM`` at
    another binary mid-process (a crash-injecting wrapper here) must run it,
    not serve the listing the first nvdisasm made."""
    cubin = kernel[3].cubin
    cubin_memo.clear()
    assert not isinstance(cubin_memo.listings([cubin])[0], Exception)
    fake = tmp_path / "nvdisasm"
    real = find_nvdisasm().path
    fake.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then exec {real} "$@"; fi\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PTXOPT_NVDISASM", str(fake))
    assert isinstance(cubin_memo.listings([cubin])[0], Exception)
    cubin_memo.clear()
