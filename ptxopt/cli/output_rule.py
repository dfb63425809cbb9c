"""The one rule for what a command writes: no output path may be one of its
inputs, the evaluation cache (and the files SQLite keeps beside it), the
move memo or the Triton hook's store. A path that would is refused with
exit 2 before any work, naming the option and what it would overwrite.

Each command declares with :func:`writes` which of its parameters name
outputs and which name inputs; commands whose outputs are only known later
(``search --emit``: one file per kernel) call :func:`check_outputs` once
they know them. ``run FILE -o FILE`` is the one exception (``in_place``):
it rewrites FILE atomically, after the ptxas check.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ptxopt.support.outputs import Protected, same_file

#: the files SQLite may keep beside a database
_SQLITE_SIDECARS = ("", "-wal", "-shm", "-journal")


def _values(value):
    if value is None or isinstance(value, bool):
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(v for v in value if isinstance(v, str))
    return (value,) if isinstance(value, str) else ()


def _input_paths(value: str) -> list[tuple[str, Path, bool]]:
    """What reading the input ``value`` (a path, a folder, a Triton cache, a
    corpus selector) protects: ``(what, path, is_folder)``."""
    if value == "-":
        return []
    p = Path(value)
    try:
        is_dir, exists = p.is_dir(), p.exists()
    except OSError:
        return []
    if is_dir:
        from ptxopt.triton.cache_dir import is_cache_dir

        if is_cache_dir(p):
            return [(f"inside the input Triton cache {value}", p, True)]
        found = [(f"the input {f}", f, False) for f in p.rglob("*.ptx")]
        return found + [(f"the input {f}", f, False) for f in p.rglob("*.contract.json")]
    if exists:
        return [(f"the input {value}", p, False),
                (f"the input {p.with_suffix('.contract.json')}", p.with_suffix(".contract.json"), False)]
    from ptxopt.kernels.corpus import CorpusError, select

    try:
        specs = select(value.removeprefix("corpus:") or "all")
    except (CorpusError, OSError, ValueError):
        return []
    return [(f"the input corpus:{s.id} ({s.ptx_path})", s.ptx_path, False) for s in specs]


def protected_paths(inputs=(), cache: str | None = None) -> list[tuple[str, Path, bool]]:
    """Every ``(what, path, is_folder)`` no output may overwrite: the inputs,
    the evaluation cache (``cache``, and the default one), its move memo,
    the Triton hook's store."""
    from ptxopt.evaluate.cache import default_cache_path

    out: list[tuple[str, Path, bool]] = []
    for value in inputs:
        for v in _values(value):
            out.extend(_input_paths(v))
    default = default_cache_path()
    for c in {str(default), *(_values(cache))}:
        for tail in _SQLITE_SIDECARS:
            out.append((f"the evaluation cache {c}", Path(c + tail), False))
            out.append((f"the move memo {c}.moves.sqlite", Path(c + ".moves.sqlite" + tail), False))
    out.append((f"inside the Triton hook's store {default.parent / 'triton-hook'}", default.parent / "triton-hook",
                True))
    return out


def output_problem(outputs: dict, inputs=(), cache: str | None = None,
                   allowed: dict | None = None) -> str | None:
    """Why the ``{option: path}`` ``outputs`` break the rule, or None.
    ``allowed``: ``{option: path}`` an output may equal (an in-place rewrite)."""
    given = [(opt, v) for opt, value in outputs.items() for v in _values(value) if v != "-"]
    if not given:
        return None
    entries = protected_paths(inputs, cache)
    protected = Protected(entries)
    for opt, path in given:
        ok = (allowed or {}).get(opt)
        what = protected.hit(path)
        if what and ok is not None and same_file(ok, path):  # run FILE -o FILE: only FILE's own name is allowed
            what = Protected([t for t in entries if t[2] or not same_file(ok, t[1])]).hit(path)
        if what:
            return (f"{opt} {path}: is {what}; an output never overwrites an input, the evaluation cache "
                    "or a store: give another path")
    seen = Protected()
    for opt, path in given:
        other = seen.hit(path)
        if other:
            return f"{other} and {opt} {path} name the same file: give each output its own path"
        seen.add(f"{opt} {path}", path)
    return None


def check_outputs(outputs: dict, inputs=(), cache: str | None = None, allowed: dict | None = None) -> None:
    """:func:`output_problem`, failing with exit 2 (one line) when there is one."""
    why = output_problem(outputs, inputs, cache, allowed)
    if why:
        from ptxopt.cli.common import fail

        fail(why)


def writes(outputs: dict[str, str], inputs: tuple[str, ...] = (), *, cache: str | None = "cache_path",
           in_place: dict[str, str] | None = None, folder_files: dict[str, tuple[str, ...]] | None = None):
    """A command decorator (below the click options): before the body runs,
    apply the rule to the parameters named in ``outputs`` (``{parameter:
    option as the user writes it}``) against the parameters named in
    ``inputs`` and the ``cache`` parameter. ``in_place``: ``{output
    parameter: input parameter}`` that may be the same file.
    ``folder_files``: ``{folder parameter: names the command writes in it}``
    (or a function of the parameters giving them)."""

    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kw):
            outs = {label: kw.get(name) for name, label in outputs.items()}
            for name, names in (folder_files or {}).items():
                folder, names = kw.get(name), names(kw) if callable(names) else names
                if isinstance(folder, str):
                    outs.update({f"{outputs.get(name, name)} ({n})": str(Path(folder) / n) for n in names})
                    outs.pop(outputs.get(name, name), None)
            allowed = {outputs[o]: kw.get(i) for o, i in (in_place or {}).items() if isinstance(kw.get(i), str)}
            check_outputs(outs, [kw.get(n) for n in inputs], kw.get(cache) if cache else None, allowed)
            return f(*args, **kw)

        return wrapper

    return deco


__all__ = ["writes", "check_outputs", "output_problem", "protected_paths"]
