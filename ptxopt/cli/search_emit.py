"""``ptxopt search --emit DIR``: what a search found, as artefacts a build can ship.

Per kernel: ``DIR/<kernel>.ptx`` (the best pipeline applied, printed in the
source's own layout, :mod:`ptxopt.layout`), ``DIR/<kernel>.cubin`` (that
exact text assembled by ptxas for the kernel's architecture), and one
``DIR/manifest.json`` recording for each kernel what was done and what was
checked: the source's sha256, the pipeline, the verdict, the objective and
launches, the cycle figures and whether they are estimates, the ptxas
release, and the sha256 of the canonical text the search evaluated (the PTX
written is that text in the source's layout, the same tokens).

The pipeline is re-applied the way the evaluator applied it (a pass that
depends on the launch gets the performance launch's block), so the text is
the one whose verdict the manifest reports. A kernel that failed, or that
no pipeline improved, gets its manifest entry (with ``"pipeline": ""`` or the
error) and the *source* PTX and cubin: a build can always take DIR as it is.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import click

from ptxopt.equivalence.verdict import Verdict

SCHEMA = 1


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _safe(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in label) or "kernel"


def artefact(cand, pipeline: str, arch: str):
    """``(ptx text, canonical text, CompileResult)`` of ``cand`` after ``pipeline``."""
    from ptxopt.emit import emit
    from ptxopt.evaluate.candidate import bind_launch, entry_of, performance_for
    from ptxopt.layout import preserve_layout
    from ptxopt.parser import parse
    from ptxopt.passmanager import PassManager
    from ptxopt.pipeline import Pipeline
    from ptxopt.toolchain import compile_ptx

    module = parse(cand.ptx, cand.label)
    if pipeline:
        pl = bind_launch(Pipeline.parse(pipeline), performance_for(cand), entry_of(cand, module))
        module = PassManager(pl).run(module).module
    canonical = emit(module)
    text = preserve_layout(cand.ptx, module, filename=cand.label).text if pipeline else cand.ptx
    return text, canonical, compile_ptx(text, arch)


def emit_writer(kernels, out_dir: str, config):
    """``on_results`` for :func:`ptxopt.cli.search_report.run_and_report`."""
    by_label = {c.label: c for c, _ in kernels}

    def write(results, interrupted) -> None:
        from ptxopt.outputs import write_atomic
        from ptxopt.toolchain.arch import resolve_arch

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        entries = []
        for r in results:
            cand = by_label.get(r.kernel)
            if cand is None:
                continue
            better = (not r.error and r.pipeline and r.best_cycles is not None and r.baseline_cycles is not None
                      and r.best_cycles < r.baseline_cycles)
            pipeline = r.pipeline if better else ""
            entry = {"kernel": r.kernel, "source": cand.spec.path if cand.spec is not None else cand.label,
                     "source_sha256": _sha(cand.ptx), "pipeline": pipeline,
                     "verdict": (r.verdict if better else Verdict.IDENTICAL.value) if not r.error else None,
                     "verdict_note": r.verdict_note if better else None,
                     "objective": r.objective, "launch": r.launch, "performance": r.performance,
                     "estimates": {"baseline_cycles": r.baseline_cycles,
                                   "best_cycles": r.best_cycles if better else r.baseline_cycles,
                                   "cycles_kind": "ESTIMATE" if r.estimate else "MEASUREMENT"},
                     "registers": {"before": r.registers_before,
                                   "after": r.registers_after if better else r.registers_before},
                     "error": r.error}
            arch = r.arch or resolve_arch(cand.ptx, config.options.arch)
            entry["arch"] = arch
            try:
                text, canonical, res = artefact(cand, pipeline, arch)
            except Exception as e:  # noqa: BLE001  (one kernel's artefact failing is reported, not fatal)
                entry["error"] = entry["error"] or f"writing the artefacts failed: {type(e).__name__}: {e}"
                entries.append(entry)
                continue
            name = _safe(r.kernel)
            write_atomic(out / f"{name}.ptx", text)
            write_atomic(out / f"{name}.cubin", res.cubin)
            entry.update(ptx=f"{name}.ptx", cubin=f"{name}.cubin", ptx_sha256=_sha(text),
                         evaluated_sha256=_sha(canonical), ptxas_version=res.ptxas_version)
            entries.append(entry)
        doc = {"schema": SCHEMA, "tool": "ptxopt search", "strategy": config.strategy,
               "backend": config.options.backend, "interrupted": bool(interrupted), "kernels": entries}
        write_atomic(out / "manifest.json", json.dumps(doc, indent=2) + "\n")  # last: the files it names exist
        click.echo(f"ptxopt: wrote {len(entries)} kernels' PTX, cubin and manifest.json to {out}", err=True)

    return write


__all__ = ["emit_writer", "artefact", "SCHEMA"]
