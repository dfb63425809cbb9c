"""``ptxopt verify --prove``: the translation validator before the interpreter.

Kept apart from :mod:`ptxopt.cli.verify` so that the option's behaviour is in
one place: :func:`try_prove` runs :func:`ptxopt.equivalence.prove.prove` on the two parsed
modules (and ptxas on both, unless ``--no-ptxas``: a candidate ptxas rejects
is never reported as proved). ``proved`` ends the command (exit 0, the
interpreter is not run); any other verdict is reported next to the
interpreter's result, whose verdict and exit code stand.

JSON (``--json``): a proved pair prints ``{"original", "transformed",
"status": "proved", "verdict": "proved", "kernel", "prove": {...}}``; otherwise
the interpreter's JSON gets a ``"prove"`` object. ``prove`` is ``{"verdict",
"reason", "seconds"}`` (the prover's own wall time).
"""

from __future__ import annotations


import click

from ptxopt.equivalence.verdict import Verdict


def try_prove(mod_o, mod_t, kernel: str | None, *, assemble: bool, arch: str | None,
              text_o: str | None, text_t: str | None):
    """The prover's result for the pair, or None when ptxas rejects one
    of them (the interpreter path then reports it)."""
    from ptxopt.equivalence.prove import prove

    res = prove(mod_o, mod_t, entry=kernel)
    if res.verdict == Verdict.PROVED and assemble:
        from ptxopt.ptx.emit import emit
        from ptxopt.toolchain import PtxasError, ToolchainError, compile_ptx
        from ptxopt.toolchain.arch import resolve_arch

        target = resolve_arch(mod_o, arch)
        try:
            for m, text in ((mod_o, text_o), (mod_t, text_t)):
                compile_ptx(text if text is not None else emit(m), target)
        except (PtxasError, ToolchainError):
            return None
    return res


def summary(res) -> dict:
    return {"verdict": res.verdict, "reason": res.reason, "seconds": round(res.seconds, 6)}


def report_proved(orig: str, trans: str, res, as_json: bool, json_out: str | None = None) -> None:
    """A proved pair: the JSON document (``--json`` on stdout, ``--json-out FILE``) and/or the text line."""
    from ptxopt.cli.common import emit_json

    emit_json({"original": orig, "transformed": trans, "status": Verdict.PROVED, "verdict": Verdict.PROVED,
               "kernel": res.entry, "prove": summary(res)}, as_json, json_out)
    if not as_json:
        click.echo(f"{trans}: PROVED equivalent to {orig} for all inputs and launches "
                   f"({res.seconds:.3f} s): {res.reason}")


def report_unproved(res) -> None:
    """The prover's verdict before the interpreter's text report."""
    click.echo(f"prover: {res.verdict} ({res.seconds:.3f} s): {res.reason}; the interpreter decides")


__all__ = ["try_prove", "summary", "report_proved", "report_unproved"]
