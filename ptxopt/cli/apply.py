"""``ptxopt apply MANIFEST SRC_DIR OUT_DIR``: re-apply what ``search --emit`` recorded.

A build keeps the manifest, not the search: for each kernel it names, the
source under SRC_DIR (the manifest's ``source`` path, else its file name) must
be byte for byte the one searched (``source_sha256``), or the kernel is
refused -- a changed source was never checked. The pipeline is re-applied as
the search applied it, and the result must print to exactly the text the
search evaluated (``evaluated_sha256``), or it is refused too; then
the manifest's ``ptx`` and ``cubin`` names under OUT_DIR (the source's
layout) are written.

Sources are found only inside SRC_DIR: the manifest's relative ``source``
(a path that climbs out with ``..`` or through a symlink is refused); an old
manifest's absolute ``source`` is looked up by its file name in SRC_DIR. An
OUT_DIR whose files would overwrite a source or the manifest (the same
resolved path, a symlink or a hard link to it) is refused before anything is
written, as is a manifest that does not have the schema
(:mod:`ptxopt.cli.manifest_schema`).
Exit 0: every kernel written; 2: a bad manifest or OUT_DIR, or some kernel
refused (each named on its own line; the others are still written).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import click

from ptxopt.cli.common import fail
from ptxopt.cli.exitcodes import BAD_INPUT


def _performance(doc: dict | None):
    """The performance launch the manifest recorded (validated by the schema), or None."""
    if doc is None:
        return None
    from ptxopt.equivalence.launch import Launch, Origin, Role

    try:
        origin = Origin(doc.get("origin", "contract"))
    except ValueError:
        origin = Origin.CONTRACT
    grid = doc.get("grid")
    return Launch(grid=tuple(grid) if grid is not None else None, block=tuple(doc["block"]),
                  shared_bytes=doc.get("shared_bytes", 0), scalars=dict(doc.get("scalars", {})), origin=origin,
                  role=Role.PERFORMANCE, source=doc.get("source", "the manifest"))


def _candidate(kernel: str, text: str, performance: dict | None = None):
    """The kernel as the search saw it: a corpus kernel's entry and launches,
    else the performance launch the manifest recorded (passes that use the
    launch are bound to it, as they were in the search)."""
    from ptxopt.kernels.corpus import CorpusError, get
    from ptxopt.evaluate import Candidate

    try:
        spec = get(kernel)
    except CorpusError:
        spec = None
    if spec is not None and spec.ptx_text() == text:  # a corpus kernel: its entry and performance launch
        return Candidate(text, name=kernel, entry=spec.entry, spec=spec)
    return Candidate(text, name=kernel, performance=_performance(performance))


def _source_file(src_dir: Path, source: str) -> tuple[Path | None, str]:
    """``(the file under src_dir, "")`` for the manifest's ``source``, or ``(None, why)``."""
    from ptxopt.support.outputs import inside

    if source.startswith("/"):  # an old manifest: the absolute path searched; only its name counts
        tries = [PurePosixPath(source).name]
    elif ".." in source.split("/"):
        return None, f"its source {source} is outside SRC_DIR ('..')"
    else:
        tries = [source, PurePosixPath(source).name]
    outside = None
    for rel in dict.fromkeys(tries):
        p = src_dir / rel
        try:
            if not p.is_file():
                continue
        except OSError:
            continue
        if not inside(p, src_dir):
            outside = f"{p} leads outside SRC_DIR"
            continue
        return p, ""
    return None, outside or f"no {source} under {src_dir}"


@click.command("apply")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.argument("src_dir", type=click.Path(file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
def apply_cmd(manifest, src_dir, out_dir):
    """Re-apply a `search --emit` MANIFEST to the same sources in SRC_DIR; write OUT_DIR."""
    from ptxopt.support.outputs import write_atomic

    from .manifest_schema import ManifestError, load
    from .output_rule import check_outputs
    from .search_emit import _sha, artefact

    try:
        kernels = load(manifest)
    except ManifestError as e:
        fail(f"{manifest}: not a search --emit manifest: {e}")
    out, src_root = Path(out_dir), Path(src_dir)
    refused = 0
    work = []
    for k in kernels:
        name = k["kernel"]
        if k.get("error") or "evaluated_sha256" not in k:
            click.echo(f"ptxopt: {name}: skipped: the search wrote no artefact for it ({k.get('error')})", err=True)
            refused += 1
            continue
        src, why = _source_file(src_root, k["source"])
        if src is None:
            click.echo(f"ptxopt: {name}: refused: {why}", err=True)
            refused += 1
            continue
        work.append((k, src))
    # nothing is written when one file would overwrite a source or the manifest
    check_outputs({f"OUT_DIR ({k[f]})": str(out / k[f]) for k, _ in work for f in ("ptx", "cubin")},
                  [manifest, *(str(src) for _, src in work)])
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"{out_dir}: cannot be written: {e.strerror or e}")
    for k, src in work:
        name = k["kernel"]
        try:
            text = src.read_text()
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"ptxopt: {name}: refused: {src}: cannot be read ({e})", err=True)
            refused += 1
            continue
        if _sha(text) != k["source_sha256"]:
            click.echo(f"ptxopt: {name}: refused: {src} is not the source searched (sha256 differs): "
                       "search it again", err=True)
            refused += 1
            continue
        try:
            ptx, canonical, res = artefact(_candidate(name, text, k.get("performance_launch")), k["pipeline"],
                                           k["arch"])
        except Exception as e:  # noqa: BLE001  (one kernel that cannot be rebuilt is refused, not fatal)
            click.echo(f"ptxopt: {name}: refused: re-applying {k['pipeline'] or '(nothing)'} failed: "
                       f"{type(e).__name__}: {e}", err=True)
            refused += 1
            continue
        if _sha(canonical) != k["evaluated_sha256"]:
            click.echo(f"ptxopt: {name}: refused: re-applying {k['pipeline'] or '(nothing)'} does not give the "
                       "module the search evaluated (a different ptxopt or plugin pass?)", err=True)
            refused += 1
            continue
        for rel, data in ((k["ptx"], ptx), (k["cubin"], res.cubin)):
            try:
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                fail(f"{out / rel}: cannot be written: {e.strerror or e}")
            write_atomic(out / rel, data)
        click.echo(f"ptxopt: {name}: {k['pipeline'] or '(unchanged)'} -> {out / k['ptx']}, "
                   f"{k['cubin']} (ptxas {res.ptxas_version}, {k['arch']}; verdict {k.get('verdict')})", err=True)
    if refused:
        raise SystemExit(BAD_INPUT)


__all__ = ["apply_cmd"]
