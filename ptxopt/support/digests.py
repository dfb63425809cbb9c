"""Digests of ptxopt's own source code, for cache keys.

A cached evaluation is only valid for the code that produced it, so the
evaluator's keys (:mod:`ptxopt.evaluate.keys`), the ``sim`` backend's
version (:mod:`ptxopt.measure.sim`), the Triton hook and the search's move
memo fold in a hash of the source files that decide their results.  The
lists of those files live here, in one leaf module that imports nothing of
ptxopt, so every one of those users can import it without an import cycle;
``tests/measure/test_measure.py`` checks that each module of the evaluation
stack is covered by one of them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: the ``ptxopt`` package: the lists below name paths relative to it
_ROOT = Path(__file__).resolve().parent.parent

#: What decides a result once the printed PTX is fixed (the backend adds its own version).
EVALUATOR_SOURCES = ("evaluate", "measure", "interp", "equivalence",
                     "kernels/corpus.py", "toolchain", "support/digests.py")

#: What decides the printed PTX for a (kernel, pipeline).
FRONT_SOURCES = ("passes", "analysis", "ptx", "kernels/inputs.py", "support/gc_pause.py", "support/bounded_memo.py")


def source_digest(*packages_or_files: str) -> str:
    """sha256 (16 hex digits) of the source files of ptxopt subpackages/modules
    (paths relative to the ``ptxopt`` package: ``"sim"``, ``"verify.py"``)."""
    h = hashlib.sha256()
    for name in packages_or_files:
        p = _ROOT / name
        files = sorted(p.rglob("*.py")) + sorted(p.rglob("*.lark")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


_CODE: dict = {}


def own_code_digests() -> dict:
    """Digests of ptxopt's own code: ``front`` (what decides the printed PTX
    of a kernel and pipeline) and ``evaluator`` (what decides the result once
    the PTX is fixed). Passes from outside ptxopt decide the printed PTX
    too: a cache key takes :func:`ptxopt.passes.registry.code_digests`,
    which folds their code into ``front``."""
    if not _CODE:
        _CODE.update(evaluator=source_digest(*EVALUATOR_SOURCES), front=source_digest(*FRONT_SOURCES))
    return dict(_CODE)


def evaluator_digest() -> str:
    """``own_code_digests()["evaluator"]``: a plugin pass changes the printed
    PTX (``front``), never the result of a fixed PTX, so this needs no look
    for plugins (which costs ``importlib.metadata``, ~25 ms of a one-off
    command's start-up)."""
    return own_code_digests()["evaluator"]


def code_of(obj) -> str:
    """sha256 (16 hex digits) of the code that defines *obj* (a plugin pass
    class): every ``.py`` file of its top-level package (its helpers decide
    its output too), or its module's file, or failing both its source text.
    Code with no source at all gets a digest of its own every process, so
    its results are never served from a cache written by other code."""
    import inspect
    import sys
    import uuid

    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    top = sys.modules.get((getattr(module, "__name__", "") or "").partition(".")[0])
    h = hashlib.sha256()
    files: list[Path] = []
    top_file = getattr(top, "__file__", None)
    if top_file and Path(top_file).name == "__init__.py":
        files = sorted(Path(top_file).parent.rglob("*.py"))
    elif getattr(module, "__file__", None):
        files = [Path(module.__file__)]
    try:
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        if not files:
            h.update(inspect.getsource(obj).encode())
    except (OSError, TypeError):
        h.update(uuid.uuid4().bytes)
    return h.hexdigest()[:16]


__all__ = ["source_digest", "own_code_digests", "evaluator_digest", "code_of", "EVALUATOR_SOURCES", "FRONT_SOURCES"]
