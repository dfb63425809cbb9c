"""The measurement backends (:mod:`ptxopt.measure`): flags instead of names,
the registry, and the cache keys' coverage of the code that decides a result."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ptxopt.support.digests import EVALUATOR_SOURCES, FRONT_SOURCES
from ptxopt.measure import backend as base, backend_registry as registry
from ptxopt.measure import sim as sim_mod
from ptxopt.measure.backend import Backend, Measurement, is_pipelined
from ptxopt.measure.gpu import GpuBackend
from ptxopt.measure.sim import SimBackend

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "ptxopt"

#: Reached from the evaluator but deciding nothing of a result: process plumbing (workers, fork
#: safety, stopping a run (cancel.py), atomic output files) and JSON reading (the launch a
#: contract file yields is in every key).
# Plumbing that moves results without deciding them: the worker set-up, the
# executors (they run a function and hand back its return value and cache
# rows) and the move memo (itself keyed by the front end's code digest).
# The host's state around a library call (host_state.py) and what a pass prints (pass_output.py)
# are kept apart from results: neither decides one.
NOT_RESULTS = {"support/workers.py", "support/forksafe.py", "support/cancel.py", "support/outputs.py", "support/jsontext.py", "evaluate/move_memo.py",
               "support/host_state.py", "support/pass_output.py",
               *(f"executor/{f.name}" for f in (PKG / "executor").glob("*.py"))}


def _module_file(mod: str) -> Path | None:
    p = REPO.joinpath(*mod.split("."))
    if (p / "__init__.py").exists():
        return p / "__init__.py"
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    return None


def _imports(mod: str) -> set[str]:
    """ptxopt modules ``mod`` imports anywhere (functions included)."""
    f = _module_file(mod)
    pkg = mod if f.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for n in ast.walk(ast.parse(f.read_text())):
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base_mod = n.module or ""
            if n.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                base_mod = ".".join(parts + ([base_mod] if base_mod else []))
            for a in n.names:
                sub = f"{base_mod}.{a.name}"
                out.add(sub if _module_file(sub) else base_mod)
    return {m for m in out if m.split(".")[0] == "ptxopt" and _module_file(m)}


def _reachable(*start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(_imports(m))
    return seen


def _covered(rel: Path) -> bool:
    sources = EVALUATOR_SOURCES + FRONT_SOURCES + sim_mod.SOURCES + ("gpu",)  # gpu: the gpu backend's version
    return any(rel == Path(s) or Path(s) in rel.parents for s in sources)


def test_every_module_deciding_a_result_is_in_a_code_digest():
    """A change in any module the evaluator reaches (imports inside functions
    included) must change a cache key: the evaluator's or the front end's code
    digest, or the version of the backend it belongs to."""
    files = {_module_file(m).relative_to(PKG) for m in _reachable("ptxopt.evaluate", "ptxopt.measure")}
    for sub in ("evaluate", "measure", "sim", "gpu"):
        files |= {f.relative_to(PKG) for f in (PKG / sub).rglob("*.py")}
    missing = sorted(str(f) for f in files if not _covered(f) and str(f) not in NOT_RESULTS)
    assert not missing, f"not in any code digest (ptxopt/support/digests.py): {missing}"


def test_measure_never_imports_the_evaluator():
    mods = {f"ptxopt.measure.{f.stem}" for f in (PKG / "measure").glob("*.py") if f.stem != "__init__"}
    for m in sorted(mods):
        assert not [i for i in _imports(m) if i.startswith("ptxopt.evaluate")], m


def test_no_backend_name_checks():
    """Callers decide by ``is_estimate`` / ``pipelined``, never by a backend's name."""
    pat = re.compile(r"""backend\w*\s*[!=]=\s*["'](sim|gpu)["']|["'](sim|gpu)["']\s*[!=]=\s*\w*backend"""
                     r"""|backend\w*\.startswith\(|backend\w*\s+(not\s+)?in\s+\(["']""")
    hits = []
    for d in ("ptxopt", "rl", "benchmarks"):
        for f in sorted((REPO / d).rglob("*.py")):
            for k, line in enumerate(f.read_text().splitlines(), 1):
                if pat.search(line):
                    hits.append(f"{f.relative_to(REPO)}:{k}: {line.strip()}")
    assert not hits, hits


def test_flags_of_the_built_in_backends():
    assert SimBackend.is_estimate is True and SimBackend.pipelined is True
    assert GpuBackend.is_estimate is False and GpuBackend.pipelined is False
    assert isinstance(SimBackend(), Backend)
    assert registry.is_estimate("sim") is True
    # read from the class: asking never makes (or probes for) a gpu backend
    assert registry.is_estimate("gpu") is False and not [k for k in registry._INSTANCES if k[0] == "gpu"]
    assert registry.is_estimate("no-such-backend") is False
    assert registry.backend_names() == ["gpu", "sim"]


class _Old:
    """A backend written before ``pipelined`` existed."""

    name = "old"

    def __init__(self, is_estimate):
        self.is_estimate = is_estimate


def test_is_pipelined_defaults_to_the_estimate_flag():
    assert is_pipelined(_Old(True)) and not is_pipelined(_Old(False))
    assert is_pipelined(SimBackend()) and not is_pipelined(GpuBackend.__new__(GpuBackend))


class _SerialSim(SimBackend):
    """The sim model, measured alone in the evaluating thread (as a hardware backend is)."""

    name = "serial-sim"
    pipelined = False


def test_a_backend_that_is_not_pipelined_gives_the_same_results(monkeypatch):
    from ptxopt.evaluate import Candidate, evaluate_many

    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))
    monkeypatch.setattr(registry, "_INSTANCES", {})
    registry.register_backend("serial-sim", _SerialSim)
    cands = [Candidate.from_corpus("gemm_tile_2x2x2", p) for p in ("", "vec_ld", "no_such_pass")]
    got = evaluate_many(cands, backend="serial-sim", cache=None, batch=2)
    want = evaluate_many(cands, backend="sim", cache=None, batch=2)
    assert [(r.status, r.cycles, r.estimate, r.equivalence) for r in got] == \
           [(r.status, r.cycles, r.estimate, r.equivalence) for r in want]
    assert got[0].ok and got[0].estimate and got[2].status == "illegal"


class _MeasureOnly:
    """A backend with ``measure`` alone: :func:`~ptxopt.measure.backend.measure_many` calls it per job."""

    name, is_estimate, pipelined = "m", True, True

    def measure(self, ptx_text, arch, spec=None):
        if not ptx_text:
            raise ValueError("empty")
        return Measurement(cycles=float(len(ptx_text)), estimate=True)


def test_measure_many_falls_back_to_measure():
    out = base.measure_many(_MeasureOnly(), [base.MeasureJob("abc", "sm_89"), base.MeasureJob("", "sm_89")])
    assert out[0].cycles == 3.0 and isinstance(out[1], ValueError)


def test_unknown_backend_is_a_value_error():
    with pytest.raises(ValueError, match="unknown backend"):
        registry.get_backend("no-such-backend")
