"""The schema of a ``search --emit`` manifest, checked before ``apply`` reads it.

A manifest is input like any other: a damaged one (a field missing, of the
wrong type, too long; ``true`` where a number is due) is refused with one
line naming the field (``kernels[3].pipeline: expected a string, got
int``), exit 2 -- never an internal error. Hand-written (a table of fields,
no schema library): apply reads only the fields below, and each is bounded.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the largest manifest read (bytes) and the most kernels in one
MAX_BYTES = 64 << 20
MAX_KERNELS = 100_000

_SHA256 = re.compile(r"[0-9a-f]{64}")
_ARCH = re.compile(r"sm_[0-9]{2,3}[a-z]?")


class ManifestError(ValueError):
    """The manifest does not have the schema ``apply`` reads; the message names the field."""


def _text(limit: int, pattern: re.Pattern | None = None, what: str = "a string"):
    def check(value, where: str) -> None:
        if type(value) is not str:
            raise ManifestError(f"{where}: expected {what}, got {_kind(value)}")
        if len(value) > limit:
            raise ManifestError(f"{where}: {len(value)} characters, at most {limit}")
        if "\0" in value:
            raise ManifestError(f"{where}: contains a NUL character")
        if pattern is not None and not pattern.fullmatch(value):
            raise ManifestError(f"{where}: {value[:80]!r} is not {what}")
    return check


def _relative(limit: int):
    """A relative path inside the folder: no ``..``, not absolute, each component at most 255 bytes."""
    base = _text(limit, what="a relative path")

    def check(value, where: str) -> None:
        base(value, where)
        parts = value.replace("\\", "/").split("/")
        if not value or value.startswith("/") or ".." in parts or any(len(p.encode()) > 255 for p in parts):
            raise ManifestError(f"{where}: {value[:80]!r} is not a relative path inside the folder")
    return check


def _source(value, where: str) -> None:
    """A source: relative (what this ptxopt writes) or an old manifest's absolute path (its name is used)."""
    _text(4096, what="a path")(value, where)
    if not value or any(len(p.encode()) > 255 for p in value.split("/")):
        raise ManifestError(f"{where}: {value[:80]!r} is not a file path")


def _optional(check):
    def opt(value, where: str) -> None:
        if value is not None:
            check(value, where)
    return opt


def _kind(value) -> str:
    return "null" if value is None else {bool: "a boolean", int: "a number", float: "a number", str: "a string",
                                         list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _dims(value, where: str, limit: int) -> None:
    if type(value) is not list or len(value) != 3 or any(type(v) is not int or not 1 <= v <= limit for v in value):
        raise ManifestError(f"{where}: expected three whole numbers from 1 to {limit}")


def _launch(value, where: str) -> None:
    """A performance launch as ``search --emit`` records it (what apply binds launch-dependent passes to)."""
    if type(value) is not dict:
        raise ManifestError(f"{where}: expected an object, got {_kind(value)}")
    if value.get("grid") is not None:
        _dims(value["grid"], f"{where}.grid", 2**31 - 1)
    if "block" not in value:
        raise ManifestError(f"{where}.block: missing")
    _dims(value["block"], f"{where}.block", 1024)
    shared = value.get("shared_bytes", 0)
    if type(shared) is not int or not 0 <= shared <= 1 << 31:
        raise ManifestError(f"{where}.shared_bytes: expected a whole number of bytes, at most 2 GiB")
    scalars = value.get("scalars", {})
    if type(scalars) is not dict or len(scalars) > 1024 or any(
            type(k) is not str or len(k) > 255 or type(v) not in (int, float) for k, v in scalars.items()):
        raise ManifestError(f"{where}.scalars: expected an object of at most 1024 name: number pairs")
    for key in ("source", "origin"):
        if key in value:
            _text(4096)(value[key], f"{where}.{key}")


#: per kernel: field -> (required, check)
ENTRY = {
    "kernel": (True, _text(255, what="a kernel name")),
    "source": (True, _source),
    "source_sha256": (True, _text(64, _SHA256, "a sha256 in hex")),
    "pipeline": (True, _text(4096, what="a pipeline string")),
    "arch": (True, _text(16, _ARCH, "an architecture such as sm_89")),
    "error": (False, _optional(_text(65536))),
    "verdict": (False, _optional(_text(64))),
    "evaluated_sha256": (False, _text(64, _SHA256, "a sha256 in hex")),
    "ptx": (False, _relative(4096)),
    "cubin": (False, _relative(4096)),
    "performance_launch": (False, _optional(_launch)),
}


def validate(doc) -> list[dict]:
    """The kernel entries of ``doc`` (a parsed manifest); raises :class:`ManifestError`."""
    from ptxopt.cli.search_emit import SCHEMA

    if type(doc) is not dict:
        raise ManifestError(f"expected an object at the top, got {_kind(doc)}")
    if "schema" not in doc:
        raise ManifestError("schema: missing")
    if type(doc["schema"]) is not int:  # true is not 1
        raise ManifestError(f"schema: expected a number, got {_kind(doc['schema'])}")
    if doc["schema"] != SCHEMA:
        raise ManifestError(f"schema: {doc['schema']}, this ptxopt reads {SCHEMA}")
    kernels = doc.get("kernels")
    if type(kernels) is not list:
        raise ManifestError(f"kernels: expected a list, got {_kind(kernels) if 'kernels' in doc else 'nothing'}")
    if len(kernels) > MAX_KERNELS:
        raise ManifestError(f"kernels: {len(kernels)} entries, at most {MAX_KERNELS}")
    for i, k in enumerate(kernels):
        where = f"kernels[{i}]"
        if type(k) is not dict:
            raise ManifestError(f"{where}: expected an object, got {_kind(k)}")
        for name, (required, check) in ENTRY.items():
            if name not in k:
                if required:
                    raise ManifestError(f"{where}.{name}: missing")
                continue
            check(k[name], f"{where}.{name}")
        if "evaluated_sha256" in k and not ("ptx" in k and "cubin" in k):
            raise ManifestError(f"{where}: evaluated_sha256 without the ptx and cubin names")
    return kernels


def load(path: str | Path) -> list[dict]:
    """The validated kernel entries of the manifest at ``path``; raises
    :class:`ManifestError` (unreadable, too large, not JSON, not the schema)."""
    from ptxopt.support import jsontext

    p = Path(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ManifestError(f"cannot be read: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise ManifestError(f"larger than {MAX_BYTES >> 20} MiB")
    try:
        doc = jsontext.loads(raw)
    except (ValueError, RecursionError) as e:
        raise ManifestError(f"not JSON: {e}") from None
    return validate(doc)


__all__ = ["ManifestError", "validate", "load", "ENTRY", "MAX_BYTES", "MAX_KERNELS"]
