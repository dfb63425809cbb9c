"""What ``ptxopt eval``, ``search`` and ``train`` share: exit codes, the one
way to fail on bad input, the backend check, and the evaluator options.

One definition each, so the three commands cannot drift apart in wording,
defaults or exit status.
"""

from __future__ import annotations

import sys

import click

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
# nothing differed, but equivalence was not established (verify, run --verify-each)
EXIT_INCONCLUSIVE = 4


def fail(msg: str) -> None:
    """Report bad input on stderr and exit 2 (no traceback)."""
    click.echo(f"ptxopt: error: {msg}", err=True)
    sys.exit(EXIT_INPUT)


def check_backend(name: str) -> None:
    """Fail now, before any work, when backend ``name`` cannot run here."""
    from ptxopt.evaluate import BackendUnavailable, get_backend

    try:
        get_backend(name)
    except (BackendUnavailable, ValueError) as e:
        fail(str(e))


backend_option = click.option(
    "--backend", default="sim", show_default=True,
    help="Where cycles come from: sim (CPU estimate) or gpu (measured; needs CuPy and a GPU).")
cache_option = click.option(
    "--cache", "cache_path", default=None, metavar="PATH",
    help="Evaluation cache (SQLite) [default: $PTXOPT_CACHE or ~/.cache/ptxopt/eval.sqlite].")
timeout_option = click.option(
    "--timeout", default=600.0, show_default=True, type=click.FloatRange(min=0.1),
    help="Seconds one candidate may take.")
arch_option = click.option(
    "--arch", default=None, metavar="SM",
    help="Target architecture for ptxas and the model [default: each kernel's own .target, else sm_89].")
allow_unchecked_option = click.option(
    "--allow-unchecked", is_flag=True,
    help="Let a candidate whose equivalence with the original was not established (verdict 'inconclusive': "
         "the original cannot be interpreted under the launch, ...) be kept and reported as best. Off: such "
         "candidates are counted and never chosen.")
trials_option = click.option(
    "--trials", default=None, type=click.IntRange(1, 1000),
    help="Interpreter launches compared for equivalence [default: ptxopt.verify's].")

_CONTRACT_OPTIONS = (
    click.option("--contract", "contract_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                 help="Launch contract for the equivalence check of PTX files (JSON, a corpus manifest entry's "
                      "schema) [default: KERNEL.contract.json next to KERNEL.ptx when present, else one thread].")
    ,
    click.option("--grid", default=None, metavar="X,Y,Z", help="Contract: grid size."),
    click.option("--block", default=None, metavar="X,Y,Z", help="Contract: block size."),
    click.option("--shared-bytes", type=click.IntRange(0), default=None, metavar="N",
                 help="Contract: dynamic shared memory in bytes."),
    click.option("--scalar", "scalars", multiple=True, metavar="NAME=VALUE",
                 help="Contract: value of a scalar parameter (repeatable)."),
)


def contract_options(f):
    """``--contract FILE --grid --block --shared-bytes --scalar NAME=V`` (see :mod:`ptxopt.contract`)."""
    for opt in reversed(_CONTRACT_OPTIONS):
        f = opt(f)
    return f


def with_contract(cand, path: str, contract: dict):
    """``cand`` (a PTX file's :class:`~ptxopt.evaluate.Candidate`) launched under
    its contract: ``contract`` holds the :func:`contract_options` values; the
    file ``path.contract.json`` is used when present. Unchanged when there is
    none (the evaluator then guesses, and says so). Fails (exit 2) on a bad
    contract or one given for a corpus kernel."""
    from dataclasses import replace

    from ptxopt.contract import ContractError, resolve_contracts

    given = any(v for v in contract.values())
    if cand.spec is not None:
        if given:
            fail(f"{cand.label}: launch contract options apply to PTX files; a corpus kernel's launch is "
                 "its manifest entry")
        return cand
    try:
        contracts = resolve_contracts(path, **contract)
    except ContractError as e:
        fail(str(e))
    if not contracts:
        return cand
    from ptxopt.evaluate.core import _original

    module = _original(cand.ptx, cand.label).module
    entries = {f.name: f for f in module.entries}
    entry = cand.entry or next(iter(entries), None)
    c = contracts.for_entry(entry) if entry in entries else None
    if c is None:
        return cand
    names = [it.name for d in entries[entry].params or () for it in d.items]
    try:
        c = c.fit(names)
    except ContractError as e:
        fail(f"{cand.label}: {e}")
    return replace(cand, entry=entry, spec=c.spec, geometry=None if c.spec is not None else c.geometry)


__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_INPUT", "EXIT_INTERRUPTED", "fail", "check_backend", "backend_option",
           "cache_option", "timeout_option", "trials_option", "arch_option", "allow_unchecked_option",
           "contract_options", "with_contract"]
