"""``ptxopt search --emit DIR``: what a search found, as artefacts a build can ship.

Per kernel: ``DIR/<name>.ptx`` (the best pipeline applied, printed in the
source's own layout, :mod:`ptxopt.ptx.layout`), ``DIR/<name>.cubin`` (that
exact text assembled by ptxas for the kernel's architecture), and one
``DIR/manifest.json`` recording for each kernel what was done and what was
checked: the source (relative to what was searched: a file's name, the path
inside a folder or a Triton cache, a corpus kernel's corpus path -- never
absolute, never ``..``) and its sha256, the pipeline, the verdict, the
objective, the check contract and the performance launch, the cycle figures
and whether they are estimates, the ptxas release, and the sha256 of the
canonical text the search evaluated (the PTX written is that text in the
source's layout, the same tokens).

``<name>`` is the source's path without ``.ptx`` (a corpus kernel: its id),
each component made of safe characters and, past :data:`MAX_COMPONENT`
bytes, shortened with a digest; two kernels that would share a name get a
digest each.

Writing is staged so that a manifest never describes files that are not
there: every artefact is written into a temporary folder inside DIR first,
then the old ``manifest.json`` is removed, the artefacts are renamed into
place, and the new manifest is written last. A kill in between leaves DIR
with no manifest, never a stale one (and a staging folder the next emit
removes). An artefact that cannot be written is
an error in its kernel's entry (its stale files are removed), the others
are still shipped, and the command exits 2 after its report is written.

The pipeline is re-applied the way the evaluator applied it (a pass that
depends on the launch gets the performance launch's block), so the text is
the one whose verdict the manifest reports. A kernel that failed, or that
no pipeline improved, gets its manifest entry (with ``"pipeline": ""`` or the
error) and the *source* PTX and cubin: a build can always take DIR as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import click

from ptxopt.equivalence.verdict import Verdict

SCHEMA = 1
MANIFEST = "manifest.json"
STAGE_PREFIX = ".ptxopt-emit-"
#: longest file-name component written (bytes; file systems take 255), the ``.cubin`` suffix included
MAX_COMPONENT = 200
#: longest kernel name recorded (characters)
MAX_KERNEL_NAME = 255


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _safe(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in label) or "kernel"


def short(name: str, limit: int) -> str:
    """``name`` when it fits in ``limit`` UTF-8 bytes, else a prefix and a digest of the whole."""
    if len(name.encode()) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    head = name.encode()[:limit - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}-{digest}"


def _component(part: str, limit: int = MAX_COMPONENT) -> str:
    part = _safe(part)
    return "_" + part if part in (".", "..") else short(part, limit)


@dataclass(frozen=True)
class Planned:
    """One kernel's names: ``kernel`` and ``source`` for the manifest, ``stem`` for its files."""

    kernel: str
    source: str
    stem: str

    @property
    def ptx(self) -> str:
        return self.stem + ".ptx"

    @property
    def cubin(self) -> str:
        return self.stem + ".cubin"


def source_name(cand, target: str, path: Path | None = None) -> str:
    """``cand``'s source relative to what was searched (``target``): a
    single file's name, the path inside a folder (``path``: the file of a
    Triton cache kernel), a corpus kernel's corpus path. Never absolute,
    never ``..``: a path that is not inside ``target`` keeps its name only."""
    if cand.spec is not None:
        return PurePosixPath(cand.spec.path).as_posix()
    where = Path(path) if path is not None else Path(cand.label)
    try:
        rel = where.relative_to(target) if target != "-" and Path(target).is_dir() else Path(where.name)
    except (ValueError, OSError):
        rel = Path(where.name)
    parts = [p for p in rel.parts if p not in ("", ".", "..", "/")]
    return "/".join(parts) or _safe(cand.label)


def emit_plan(kernels, target: str, paths: dict | None = None) -> dict[str, Planned]:
    """``{label: Planned}`` for ``kernels`` (``[(Candidate, family)]``);
    ``paths``: ``{label: file}`` of a Triton cache's kernels."""
    plan: dict[str, Planned] = {}
    used: set[str] = set()
    for cand, _ in kernels:
        source = source_name(cand, target, (paths or {}).get(cand.label))
        kernel = cand.spec.id if cand.spec is not None else (cand.label if paths else source)
        if cand.spec is not None or paths:
            parts = [kernel]
        else:
            parts = list(PurePosixPath(source[:-4] if source.endswith(".ptx") else source).parts)
        stem = "/".join(_component(p) for p in parts[:-1]) + ("/" if len(parts) > 1 else "")
        stem += _component(parts[-1], MAX_COMPONENT - len(".cubin"))
        if stem.lower() in used:  # two sources, one safe name: each keeps a digest of its own
            stem = short(stem + "-" + _sha(cand.label)[:12], MAX_COMPONENT)
        used.add(stem.lower())
        plan[cand.label] = Planned(short(kernel, MAX_KERNEL_NAME), source, stem)
    return plan


def planned_files(plan: dict[str, Planned]) -> list[str]:
    """Every file ``--emit`` writes in its folder (for the output rule, before any work)."""
    return [n for p in plan.values() for n in (p.ptx, p.cubin)] + [MANIFEST]


def artefact(cand, pipeline: str, arch: str):
    """``(ptx text, canonical text, CompileResult)`` of ``cand`` after ``pipeline``."""
    from ptxopt.ptx.emit import emit
    from ptxopt.evaluate.candidate import bind_launch, entry_of, performance_for
    from ptxopt.ptx.layout import preserve_layout
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.toolchain import compile_ptx

    module = parse(cand.ptx, cand.label)
    if pipeline:
        pl = bind_launch(Pipeline.parse(pipeline), performance_for(cand), entry_of(cand, module))
        module = PassManager(pl).run(module).module
    canonical = emit(module)
    text = preserve_layout(cand.ptx, module, filename=cand.label).text if pipeline else cand.ptx
    return text, canonical, compile_ptx(text, arch)


def _launches(cand) -> tuple[dict | None, dict | None]:
    """The check contract and the performance launch the search used (JSON; None: none given)."""
    from ptxopt.evaluate.candidate import performance_for

    perf = performance_for(cand)
    return (cand.launch.to_json() if cand.launch is not None else None,
            perf.to_json() if perf is not None else None)


def _entry(r, cand, planned: Planned, arch: str) -> tuple[dict, str]:
    better = (not r.error and r.pipeline and r.best_cycles is not None and r.baseline_cycles is not None
              and r.best_cycles < r.baseline_cycles)
    pipeline = r.pipeline if better else ""
    contract, performance = _launches(cand)
    entry = {"kernel": planned.kernel, "source": planned.source,
             "source_sha256": _sha(cand.ptx), "pipeline": pipeline,
             "verdict": (r.verdict if better else Verdict.IDENTICAL.value) if not r.error else None,
             "verdict_note": r.verdict_note if better else None,
             "objective": r.objective,
             "launch": r.launch or (cand.launch.describe() if cand.launch is not None else None),
             "contract": contract, "performance": r.performance, "performance_launch": performance,
             "estimates": {"baseline_cycles": r.baseline_cycles,
                           "best_cycles": r.best_cycles if better else r.baseline_cycles,
                           "cycles_kind": "ESTIMATE" if r.estimate else "MEASUREMENT"},
             "registers": {"before": r.registers_before,
                           "after": r.registers_after if better else r.registers_before},
             "error": r.error, "arch": arch}
    return entry, pipeline


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass


def _remove_dead_stages(out: Path) -> None:
    """Staging folders a killed run left in ``out`` (its pid no longer alive)."""
    for d in out.glob(STAGE_PREFIX + "*"):
        pid = d.name[len(STAGE_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not d.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that run is alive
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue


def _place(stage: Path, out: Path, rel: str) -> None:
    dest = out / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(stage / rel, dest)


def emit_writer(kernels, out_dir: str, config, plan: dict[str, Planned]):
    """``on_results`` for :func:`ptxopt.cli.search_report.run_and_report`.
    Raises :class:`~ptxopt.support.outputs.OutputNotWritable` (exit 2) after the
    manifest is written when some artefact could not be."""
    by_label = {c.label: c for c, _ in kernels}

    def write(results, interrupted) -> None:
        from ptxopt.support.outputs import OutputNotWritable, write_atomic
        from ptxopt.toolchain.arch import resolve_arch

        out = Path(out_dir)
        try:
            out.mkdir(parents=True, exist_ok=True)
            _remove_dead_stages(out)
            stage = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-", dir=out))
        except OSError as e:
            raise OutputNotWritable(out, e) from None
        entries, failed, stale = [], [], []
        try:
            for r in results:
                cand, planned = by_label.get(r.kernel), plan.get(r.kernel)
                if cand is None or planned is None:
                    continue
                arch = r.arch or resolve_arch(cand.ptx, config.options.arch)
                entry, pipeline = _entry(r, cand, planned, arch)
                entries.append(entry)
                try:
                    text, canonical, res = artefact(cand, pipeline, arch)
                except Exception as e:  # noqa: BLE001  (one kernel's artefact failing is reported, not fatal)
                    entry["error"] = entry["error"] or f"writing the artefacts failed: {type(e).__name__}: {e}"
                    stale += [planned.ptx, planned.cubin]
                    continue
                try:
                    for rel, data in ((planned.ptx, text), (planned.cubin, res.cubin)):
                        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                        write_atomic(stage / rel, data)
                except (OSError, OutputNotWritable) as e:
                    failed.append(f"{planned.ptx}: {e}")
                    entry["error"] = f"writing the artefacts failed: {e}"
                    stale += [planned.ptx, planned.cubin]
                    continue
                entry.update(ptx=planned.ptx, cubin=planned.cubin, ptx_sha256=_sha(text),
                             evaluated_sha256=_sha(canonical), ptxas_version=res.ptxas_version)
            try:  # from here on no manifest describes DIR until the new one is complete
                (out / MANIFEST).unlink(missing_ok=True)
            except OSError as e:
                raise OutputNotWritable(out / MANIFEST, e) from None
            for rel in stale:  # a kernel whose new artefacts could not be written ships no old ones
                _unlink(out / rel)
            for entry in entries:
                if "ptx" not in entry:
                    continue
                try:
                    _place(stage, out, entry["ptx"])
                    _place(stage, out, entry["cubin"])
                except OSError as e:
                    failed.append(f"{entry['ptx']}: {e.strerror or e}")
                    entry["error"] = f"writing the artefacts failed: {e.strerror or e}"
                    for key in ("ptx", "cubin"):  # stale files of this kernel are not shipped either
                        _unlink(out / entry[key])
                    for key in ("ptx", "cubin", "ptx_sha256", "evaluated_sha256", "ptxas_version"):
                        entry.pop(key, None)
            doc = {"schema": SCHEMA, "tool": "ptxopt search", "strategy": config.strategy,
                   "backend": config.options.backend, "interrupted": bool(interrupted), "kernels": entries}
            write_atomic(out / MANIFEST, json.dumps(doc, indent=2) + "\n")  # last: the files it names exist
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        shipped = sum(1 for e in entries if "ptx" in e)
        click.echo(f"ptxopt: wrote {shipped} kernels' PTX and cubin, and {MANIFEST}, to {out}", err=True)
        if failed:
            raise OutputNotWritable(out, f"{len(failed)} kernel(s)' artefacts could not be written "
                                         f"(their manifest entries say so): {failed[0]}")

    return write


__all__ = ["emit_writer", "emit_plan", "planned_files", "artefact", "source_name", "short", "SCHEMA", "MANIFEST"]
