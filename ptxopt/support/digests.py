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
FRONT_SOURCES = ("passes", "analysis", "ptx", "kernels/inputs.py", "support/gc_pause.py", "support/bounded_memo.py",
                "support/session_state.py")


def source_digest(*packages_or_files: str) -> str:
    """sha256 (16 hex digits) of the source files of ptxopt subpackages/modules
    (paths relative to the ``ptxopt`` package: ``"sim"``, ``"verify.py"``; ``"."``: all of it)."""
    return _digest_of(packages_or_files, Path.read_bytes)


def _digest_of(names, read) -> str:
    h = hashlib.sha256()
    for name in names:
        p = _ROOT / name
        files = sorted(p.rglob("*.py")) + sorted(p.rglob("*.lark")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode())
            h.update(read(f))
    return h.hexdigest()[:16]


_CODE: dict = {}


def own_code_digests() -> dict:
    """Digests of ptxopt's own code: ``front`` (what decides the printed PTX
    of a kernel and pipeline) and ``evaluator`` (what decides the result once
    the PTX is fixed). Passes from outside ptxopt decide the printed PTX
    too: a cache key takes :func:`ptxopt.passes.registry.code_digests`,
    which folds their code into ``front``."""
    _snapshot()
    return {k: _CODE[k] for k in ("evaluator", "front")}


def _snapshot() -> None:
    """Take this process's digests once, from one read of each file: the ``evaluator`` and ``front``
    digests and the whole package's, so that they describe the same tree."""
    if _CODE:
        return
    read: dict = {}

    def once(f: Path) -> bytes:
        b = read.get(f)
        if b is None:
            b = read[f] = f.read_bytes()
        return b

    _CODE.update(evaluator=_digest_of(EVALUATOR_SOURCES, once), front=_digest_of(FRONT_SOURCES, once),
                 package=_digest_of((".",), once))


def evaluator_digest() -> str:
    """``own_code_digests()["evaluator"]``: a plugin pass changes the printed
    PTX (``front``), never the result of a fixed PTX, so this needs no look
    for plugins (which costs ``importlib.metadata``, ~25 ms of a one-off
    command's start-up)."""
    return own_code_digests()["evaluator"]


def package_digest() -> str:
    """sha256 (16 hex digits) of every source file of the ``ptxopt`` package, taken once per process
    (the first call) and remembered.

    Why: a worker computes the keys of what it evaluates from its own digests (the module keys,
    :mod:`ptxopt.evaluate.keys`); a worker that started after ptxopt's source changed -- a merge into
    the tree a long search runs from, an edit, another install on a cluster node -- runs other code
    than its driver, and its rows would carry other keys than the driver's for equal results.  The
    executor compares this digest of the worker with its driver's before every task
    (:func:`ptxopt.executor.interface.same_code_call`).  Taken with :func:`own_code_digests` (one
    snapshot), so a driver whose key digests are stale also has a stale package digest."""
    _snapshot()
    return _CODE["package"]


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


__all__ = ["source_digest", "own_code_digests", "evaluator_digest", "package_digest", "code_of", "EVALUATOR_SOURCES", "FRONT_SOURCES"]
