"""Resolving what a user names on the command line into PTX texts.

A TARGET is a PTX file, ``-`` (standard input), a folder (every ``*.ptx``
under it), or ``corpus:SELECTOR`` (a kernel id, family, compiler, template group or ``all``;
see :func:`ptxopt.kernels.corpus.select`). Every failure is an :class:`InputError`
with a message fit for the user, never a traceback.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


class InputError(Exception):
    """A target that cannot be read."""


@dataclass(frozen=True)
class Source:
    name: str  # what error messages call it (a path or corpus:id)
    data: bytes


def read_one(spec: str) -> Source:
    """Exactly one PTX text (a file, ``-`` or ``corpus:ID``)."""
    sources = read_targets([spec])
    if len(sources) != 1:
        raise InputError(f"{spec}: names {len(sources)} kernels; give one file or corpus id")
    return sources[0]


def read_targets(specs: list[str] | tuple[str, ...]) -> list[Source]:
    out: list[Source] = []
    for spec in specs:
        if spec == "-":
            out.append(Source("<stdin>", sys.stdin.buffer.read()))
        elif spec.startswith("corpus:"):
            out.extend(_corpus(spec[len("corpus:"):]))
        else:
            out.extend(_path(Path(spec)))
    return out


def _path(p: Path) -> list[Source]:
    try:
        if p.is_dir():
            files = sorted(p.rglob("*.ptx"))
            if not files:
                raise InputError(f"{p}: folder holds no .ptx files")
            return [Source(str(f), f.read_bytes()) for f in files]
        return [Source(str(p), p.read_bytes())]
    except FileNotFoundError:
        raise InputError(f"{p}: no such file or folder (corpus kernels are named corpus:ID)") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a folder") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except OSError as e:
        raise InputError(f"{p}: {e.strerror or e}") from None


def _corpus(selector: str) -> list[Source]:
    from ptxopt.kernels.corpus import CorpusError, select

    try:
        specs = select(selector or "all")
        return [Source(f"corpus:{k.id}", k.ptx_path.read_bytes()) for k in specs]
    except CorpusError as e:
        raise InputError(str(e)) from None
