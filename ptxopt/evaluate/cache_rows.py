"""Reading one stored result back: a cache row is trusted only when every field has its declared type.

Why: :meth:`EvalResult.from_json` takes whatever the JSON holds. A row that
a bit flip, a hand edit or another program left with ``cycles`` a string,
``status`` null or ``notes`` a number was a cache *hit* that crashed later
(``TypeError`` in a comparison: exit 3) or reported a failure that never
happened. :func:`decode_result` checks each field against the annotation of
:class:`EvalResult` and the vocabularies (status, verdict), and raises
``ValueError`` otherwise; the cache treats that as a miss, so the candidate
is recomputed and its row rewritten.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, fields

from ptxopt.equivalence.verdict import Verdict

from .result import STATUSES, VERDICTS, EvalResult

#: annotation part -> Python types JSON gives for it
_KINDS = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "None": (type(None),),
          "dict": (dict,), "tuple[str, ...]": (list,)}

#: field -> accepted types (a KeyError here at import: a new field type needs an entry in _KINDS)
_TYPES = {f.name: sum((_KINDS[p.strip()] for p in str(f.type).split("|")), ()) for f in fields(EvalResult)}
_REQUIRED = {f.name for f in fields(EvalResult) if f.default is MISSING and f.default_factory is MISSING}


def decode_result(text, key: str | None = None) -> EvalResult:
    """The :class:`EvalResult` stored as ``text`` (under row key ``key``); ValueError when it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"stored as {type(text).__name__}, not text")
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    missing = _REQUIRED - doc.keys()
    if missing:
        raise ValueError(f"lacks {', '.join(sorted(missing))}")
    for name, value in doc.items():
        kinds = _TYPES.get(name)
        if kinds is None:
            continue  # derived fields (verdict, spill_bytes, cycles_kind) and ones this ptxopt does not know
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ValueError(f"{name} is {type(value).__name__}")
    if doc["status"] not in STATUSES or doc.get("equivalence", Verdict.INCONCLUSIVE.value) not in VERDICTS:
        raise ValueError("unknown status or verdict")
    if doc["status"] == "ok" and not (isinstance(doc.get("cycles"), (int, float)) and math.isfinite(doc["cycles"])):
        raise ValueError("an ok result without finite cycles")
    if not all(isinstance(n, str) for n in doc.get("notes") or ()):
        raise ValueError("notes are not text")
    if not all(isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
               for k, v in (doc.get("timings") or {}).items()):
        raise ValueError("timings are not seconds")
    if key is not None and doc.get("key") != key:
        raise ValueError("stored under another key")
    return EvalResult.from_json(doc)


__all__ = ["decode_result"]
