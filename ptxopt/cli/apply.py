"""``ptxopt apply MANIFEST SRC_DIR OUT_DIR``: re-apply what ``search --emit`` recorded.

A build keeps the manifest, not the search: for each kernel it names, the
source under SRC_DIR (the manifest's ``source`` path, else its file name) must
be byte for byte the one searched (``source_sha256``), or the kernel is
refused -- a changed source was never checked. The pipeline is re-applied as
the search applied it, and the result must print to exactly the text the
search evaluated (``evaluated_sha256``), or it is refused too; then
``OUT_DIR/<kernel>.ptx`` (the source's layout) and its cubin are written.
Exit 0: every kernel written; 2: a bad manifest, or some kernel refused
(each named on its own line; the others are still written).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ptxopt.cli.common import fail
from ptxopt.cli.exitcodes import BAD_INPUT


def _candidate(kernel: str, source: Path, text: str):
    from ptxopt.corpus import CorpusError, get
    from ptxopt.evaluate import Candidate

    try:
        spec = get(kernel)
    except CorpusError:
        spec = None
    if spec is not None and spec.ptx_text() == text:  # a corpus kernel: its entry and performance launch
        return Candidate(text, name=kernel, entry=spec.entry, spec=spec)
    return Candidate(text, name=kernel)


@click.command("apply")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.argument("src_dir", type=click.Path(file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
def apply_cmd(manifest, src_dir, out_dir):
    """Re-apply a `search --emit` MANIFEST to the same sources in SRC_DIR; write OUT_DIR."""
    from ptxopt.outputs import write_atomic

    from .search_emit import SCHEMA, _safe, _sha, artefact

    try:
        doc = json.loads(Path(manifest).read_text())
        kernels = doc["kernels"]
        if doc.get("schema") != SCHEMA:
            fail(f"{manifest}: schema {doc.get('schema')!r}, expected {SCHEMA}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{manifest}: not a search --emit manifest: {e}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    refused = 0
    for k in kernels:
        name, rel = k.get("kernel", "?"), k.get("source") or k.get("kernel", "")
        if k.get("error") or "evaluated_sha256" not in k:
            click.echo(f"ptxopt: {name}: skipped: the search wrote no artefact for it ({k.get('error')})", err=True)
            refused += 1
            continue
        src = next((p for p in (Path(src_dir) / rel, Path(src_dir) / Path(rel).name) if p.is_file()), None)
        if src is None:
            click.echo(f"ptxopt: {name}: refused: no {rel} under {src_dir}", err=True)
            refused += 1
            continue
        text = src.read_text()
        if _sha(text) != k["source_sha256"]:
            click.echo(f"ptxopt: {name}: refused: {src} is not the source searched (sha256 differs): "
                       "search it again", err=True)
            refused += 1
            continue
        ptx, canonical, res = artefact(_candidate(name, src, text), k["pipeline"], k["arch"])
        if _sha(canonical) != k["evaluated_sha256"]:
            click.echo(f"ptxopt: {name}: refused: re-applying {k['pipeline'] or '(nothing)'} does not give the "
                       "module the search evaluated (a different ptxopt or plugin pass?)", err=True)
            refused += 1
            continue
        stem = _safe(name)
        write_atomic(out / f"{stem}.ptx", ptx)
        write_atomic(out / f"{stem}.cubin", res.cubin)
        click.echo(f"ptxopt: {name}: {k['pipeline'] or '(unchanged)'} -> {out / (stem + '.ptx')}, "
                   f"{stem}.cubin (ptxas {res.ptxas_version}, {k['arch']}; verdict {k.get('verdict')})", err=True)
    if refused:
        raise SystemExit(BAD_INPUT)


__all__ = ["apply_cmd"]
