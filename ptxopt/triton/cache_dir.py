"""Read a Triton cache directory: every compiled kernel's PTX and what Triton knew.

Triton (3.9) keeps one folder per compiled kernel under its cache directory
(``$TRITON_CACHE_DIR``, default ``~/.triton/cache``)::

    CACHE/<key>/NAME.json     compile metadata: name, num_warps, shared, target, ...
    CACHE/<key>/NAME.ptx      the PTX the cubin was assembled from
    CACHE/<key>/NAME.source   the TTIR the compile started from (the signature)
    CACHE/<key>/NAME.ttir, .ttgir, .llir, .cubin, __grp__NAME.json

:func:`scan` returns a :class:`CachedKernel` per folder with a ``.ptx`` and
its metadata ``.json`` (other cache entries -- autotuner results, driver
builds -- are skipped), with the launch contracts derived from the metadata
(:mod:`ptxopt.triton.contract_from_triton`), so ``ptxopt search`` can verify rewrites of
Triton kernels without hand-written geometry.

A kernel compiled while ptxopt's hook was on and *rewritten* has ptxopt's
PTX in its ``.ptx`` (the metadata's ``ptxopt`` entry says so): it is
skipped, since a pipeline tuned for that text would never match Triton's
own PTX (the key of a pipelines file). Tune on a cache filled without the
hook, or with it on and nothing chosen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


class CacheDirError(ValueError):
    """A path that is not a readable Triton cache directory."""


@dataclass
class CachedKernel:
    name: str  # the kernel's entry name (Triton's metadata "name")
    ptx: str
    path: Path  # of the .ptx
    metadata: dict = field(repr=False)
    source_hash: str = ""
    args: list | None = field(default=None, repr=False)  # ptxopt.triton.signature.Arg, or None
    check_launch: str = ""  # the check launch a search of the cache estimated under, in words (set by the search)

    @property
    def label(self) -> str:
        """``NAME@KEY8``: unique across specialisations of one kernel."""
        return f"{self.name}@{self.path.parent.name[:8]}"

    def contracts(self) -> list:
        """The launch contract alternatives (:func:`ptxopt.triton.contract_from_triton.triton_contracts`)."""
        from ptxopt.ptx.parser import parse
        from ptxopt.triton.contract_from_triton import triton_contracts

        module = parse(self.ptx, str(self.path))
        fn = next((f for f in module.entries if f.name == self.name), None) or module.entries[0]
        params = [(p.name, p.dtype.lstrip(".")) for p in (fn.params or ())]
        return triton_contracts(fn.name, params, self.metadata, self.args)

    def runnable_contract(self):
        """The first contract alternative under which the *original* runs
        (two quick interpreter launches), else the first: a search has one
        launch per kernel, where :func:`ptxopt.optimize` tries them all."""
        from ptxopt.interp import InterpError
        from ptxopt.ptx.parser import parse
        from ptxopt.equivalence.interpret import verify

        alts = self.contracts()
        module = parse(self.ptx, str(self.path))
        for alt in alts:
            try:
                r = verify(module, module, alt.entry, seeds=(0,), trials=2, launch=alt,
                           layouts=False, min_coverage=0.0)
            except (InterpError, ValueError, RuntimeError):
                continue
            if r.status == "equal":
                return alt
        return alts[0]


def _metadata(path: Path, problems: list | None = None) -> dict | None:
    from ptxopt.support import jsontext

    try:
        doc = jsontext.loads(path.read_bytes())
    except jsontext.NestedTooDeeply as e:  # Triton never writes this: say so instead of ignoring the entry
        if problems is not None:
            problems.append(f"{path}: {e}; skipped")
        return None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or "triton_version" not in doc or not isinstance(doc.get("name"), str):
        return None
    return doc


def is_cache_dir(path: str | Path) -> bool:
    """A folder holding Triton cache entries (``*/NAME.json`` with Triton metadata and ``*/NAME.ptx``)."""
    p = Path(path)
    try:
        if not p.is_dir():
            return False
    except OSError:  # no folder can have this name (ENAMETOOLONG: a long corpus selector)
        return False
    for js in p.glob("*/*.json"):
        if not js.name.startswith("__grp__") and js.with_suffix(".ptx").is_file() and _metadata(js):
            return True
    return False


def scan(path: str | Path) -> tuple[list[CachedKernel], list[str]]:
    """``(kernels, skipped)``: the kernels of the cache at ``path`` (sorted by
    name, then folder) and one line per entry left out, with why."""
    from ptxopt.triton.pipelines import source_hash
    from ptxopt.triton.signature import parse_signature

    root = Path(path)
    if not root.is_dir():
        raise CacheDirError(f"{root}: not a directory")
    kernels, skipped = [], []
    for js in sorted(root.glob("*/*.json")):
        if js.name.startswith("__grp__"):
            continue
        ptx_path = js.with_suffix(".ptx")
        links = [q for q in (js.parent, js, ptx_path) if q.is_symlink()]
        if links:  # Triton writes plain files: a link may lead anywhere (another kernel, a file not PTX)
            skipped.append(f"{links[0]}: a symbolic link (to {os.readlink(links[0])}), not a cache entry Triton "
                           "wrote; skipped")
            continue
        md = _metadata(js, skipped)
        if md is None or not ptx_path.is_file():
            continue
        try:
            ptx = ptx_path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            skipped.append(f"{ptx_path}: unreadable ({e})")
            continue
        mark = md.get("ptxopt")
        if isinstance(mark, dict) and mark.get("changed"):
            skipped.append(f"{ptx_path}: compiled with ptxopt's hook and rewritten "
                           f"({mark.get('pipeline')}); its .ptx is not Triton's own")
            continue
        args = None
        for ext in (".source", ".ttir"):
            src = js.with_suffix(ext)
            if src.is_file():
                try:
                    args = parse_signature(src.read_text(errors="replace"), md["name"])
                except OSError:
                    args = None
                if args is not None:
                    break
        kernels.append(CachedKernel(md["name"], ptx, ptx_path, md, source_hash(ptx), args))
    kernels.sort(key=lambda k: (k.name, str(k.path)))
    return kernels, skipped


__all__ = ["CacheDirError", "CachedKernel", "is_cache_dir", "scan"]
