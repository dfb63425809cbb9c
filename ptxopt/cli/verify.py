"""``ptxopt verify ORIGINAL TRANSFORMED``: are two kernels equivalent?

Assembles both with ptxas (``--arch``, default: the original's ``.target``;
``--no-ptxas`` skips it), then runs both through the interpreter on identical
inputs (see :mod:`ptxopt.equivalence.interpret`) and compares every parameter buffer and
every ``.global`` variable bit for bit. Exit 0 when all match and the
launches covered enough of the output (``--min-coverage``), 1 on a mismatch
(the first differing element and both values are printed), 2 on an error:
unreadable input, PTX that does not parse, a kernel the interpreter cannot
run, one that faults, a transformed module ptxas rejects (a fault or
rejection of the transformed kernel alone is reported as such, since it
shows the two are not equivalent); 4 when inconclusive: nothing differed,
but an instruction the transformed module changed never ran in any launch
(named), the launches stored less than ``--min-coverage`` of the output
bytes, or the original failed under the default scalars.

Every result states the launch contract it used: grid, block, shared bytes
and, per launch, every scalar parameter's value (text and ``--json``), and
which launches were extra ones (descending inputs, boundary scalars, the
thread-serial schedule: see :mod:`ptxopt.equivalence.interpret`); and the coverage,
including how many of the changed instructions ran.

Geometry: from the manifest when ORIGINAL is ``corpus:ID`` or when
``--manifest-entry ID`` is given; else the launch contract, as in ``run`` and
``eval`` (:func:`ptxopt.equivalence.launch_contract.resolve_contracts`): ``--contract
FILE``, else ``ORIGINAL.contract.json`` next to a PTX file, with
``--grid``/``--block``/``--shared-bytes``/``--scalar`` overriding its fields
(alone they need both ``--grid`` and ``--block``); else the manifest entry
whose kernel name and parameter names match exactly one. Without a contract
file every 64-bit parameter gets a buffer of
``--buffer-bytes`` random float32 values, and scalars take
``--scalar NAME=VALUE`` or default to 1.0 (floats) or, for integers, a value
that varies by launch: the buffers' element count, the launch's thread count,
a small odd number (:data:`ptxopt.equivalence.interpret.SCALAR_PLAN`).
"""

from __future__ import annotations

import sys

import click

from ptxopt.cli.common import FiniteFloat, emit_json, interp_memory_option, json_options, json_target, stdin_once
from ptxopt.cli.output_rule import writes
from ptxopt.cli.exitcodes import BAD_INPUT, CHECK_FAILED, INCONCLUSIVE, OK
from ptxopt.kernels.inputs import InputError, read_one
from ptxopt.ptx.parser import ParseError, parse_bytes

DEFAULT_MIN_COVERAGE_TEXT = 0.5  # ptxopt.equivalence.interpret.DEFAULT_MIN_COVERAGE (not imported: keeps --help fast)


def _dim3(text: str | None, what: str):
    from ptxopt.equivalence.launch_contract import ContractError, parse_dim3

    try:
        return parse_dim3(text, what)
    except ContractError as e:
        raise click.BadParameter(str(e)) from None


def _scalars(items) -> dict:
    from ptxopt.equivalence.launch_contract import ContractError, parse_scalars

    try:
        return parse_scalars(items)
    except ContractError as e:
        raise click.BadParameter(str(e)) from None


@click.command("verify")
@click.argument("original")
@click.argument("transformed")
@interp_memory_option
@click.option("--kernel", default=None, help="Kernel entry to compare (default: the only one).")
@click.option("--seed", default=0, show_default=True, type=int, help="Base seed for the inputs.")
@click.option("--trials", default=4, show_default=True, type=click.IntRange(1, 1000),
              help="Launches per seed; they cycle through random, edge and multi-scale inputs "
                   "and lockstep, warp-serial and reversed warp-serial schedules (the memory-layout "
                   "launches of --layouts come on top).")
@click.option("--manifest-entry", default=None, metavar="ID",
              help="Take geometry and arguments from this corpus kernel's manifest entry.")
@click.option("--grid", default=None, metavar="X,Y,Z", help="Grid size (kernels outside the corpus).")
@click.option("--block", default=None, metavar="X,Y,Z", help="Block size (kernels outside the corpus).")
@click.option("--shared-bytes", default=None, type=click.IntRange(0),
              help="Dynamic shared memory (kernels outside the corpus) [default: the contract's, else 0].")
@click.option("--buffer-bytes", default=None, type=click.IntRange(4),
              help="Bytes per pointer argument, at least one float32 (kernels outside the corpus) "
                   "[default: the contract's, else 65536].")
@click.option("--contract", "contract_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Launch contract (JSON, a corpus manifest entry's schema; as in run and eval) [default: "
                   "ORIGINAL.contract.json next to ORIGINAL when present]; --grid/--block/--shared-bytes/"
                   "--scalar override its fields.")
@click.option("--scalar", "scalars", multiple=True, metavar="NAME=VALUE",
              help="Value of a scalar parameter (kernels outside the corpus); repeatable.")
@click.option("--arch", default=None, metavar="SM",
              help="Architecture ptxas assembles both for (default: the original's .target).")
@click.option("--no-ptxas", "no_ptxas", is_flag=True, help="Do not assemble the modules with ptxas.")
@click.option("--layouts/--no-layouts", default=True, show_default=True,
              help="Also launch with aliasing, overlapping and less-aligned buffers where legal.")
@click.option("--min-coverage", default=DEFAULT_MIN_COVERAGE_TEXT, show_default=True, type=FiniteFloat(0, max=1),
              help="Below this fraction of output bytes stored by the launches, the result is "
                   "inconclusive (exit 4) instead of equivalent; 0 turns it off.")
@json_options(what="the result")
@click.option("--prove", "prove", is_flag=True,
              help="First try to prove the two equivalent for all inputs (translation validation, "
                   "ptxopt.equivalence.prove): 'proved' exits 0 without running the interpreter; otherwise the "
                   "prover's reason is shown and the interpreter decides as usual.")
@writes({"json_out": "--json-out"}, ("original", "transformed", "contract_file"))
def verify_cmd(original, transformed, kernel, seed, trials, manifest_entry, grid, block, shared_bytes,
               buffer_bytes, scalars, arch, no_ptxas, layouts, min_coverage, as_json, prove=False,
               contract_file=None, json_out=None):
    """Check that TRANSFORMED computes exactly what ORIGINAL does (files or corpus:ID).

    Both are assembled by ptxas, then run in the PTX interpreter on the same
    inputs; every buffer and .global variable is compared bit for bit.
    Exit 0: equivalent; 1: a mismatch (the first differing element is
    printed); 2: an error (unreadable or unparsable input, a fault, an
    unsupported instruction, ptxas rejects a module, no launch geometry);
    4: inconclusive (a changed instruction never ran, too little of the
    output exercised, or the original fails under the default scalars).
    """
    from ptxopt.kernels.corpus import CorpusError
    from ptxopt.interp import InterpError
    from ptxopt.equivalence.interpret import verify

    stdin_once(original, transformed)
    as_json, json_out = json_target(as_json, json_out)
    try:
        src_o = read_one(original)
        src_t = read_one(transformed)
        mod_o = parse_bytes(src_o.data, src_o.name)
        mod_t = parse_bytes(src_t.data, src_t.name)
        _check_scalar_names(mod_o, kernel, _scalars(scalars))
        # new .nc loads no analysis proves read-only are never equivalent on their own: prove() and verify()
        # cap them ("assumes noalias", exit 4)
        proof = None
        if prove:
            from ptxopt.cli.prove import report_proved, try_prove

            proof = try_prove(mod_o, mod_t, kernel, assemble=not no_ptxas, arch=arch,
                              text_o=_text(src_o.data), text_t=_text(src_t.data))
            if proof is not None and proof.proved:
                report_proved(src_o.name, src_t.name, proof, as_json, json_out)
                sys.exit(OK)
        spec, launch = _launch(src_o.name, mod_o, kernel, manifest_entry, contract_file, grid, block,
                               shared_bytes, buffer_bytes, scalars)
        result = verify(mod_o, mod_t, kernel, seeds=(seed,), trials=trials, spec=spec, launch=launch,
                        layouts=layouts, assemble=not no_ptxas, arch=arch,
                        min_coverage=min_coverage or None, original_text=_text(src_o.data),
                        transformed_text=_text(src_t.data))
    except ParseError as e:
        click.echo(str(e), err=True)
        sys.exit(BAD_INPUT)
    except (InputError, CorpusError, InterpError) as e:
        click.echo(f"ptxopt: error: {e}", err=True)
        sys.exit(BAD_INPUT)
    extra = {}
    if proof is not None:
        from ptxopt.cli.prove import report_unproved, summary

        extra = {"prove": summary(proof)}
        if not as_json:
            report_unproved(proof)
    emit_json({"original": src_o.name, "transformed": src_t.name, **result.to_json(), **extra}, as_json, json_out)
    if not as_json:
        _print(src_o.name, src_t.name, result)
    if result.status == "equal":
        sys.exit(OK)
    if result.status == "mismatch":
        sys.exit(CHECK_FAILED)
    if result.status == "inconclusive":
        sys.exit(INCONCLUSIVE)
    sys.exit(BAD_INPUT)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _check_scalar_names(module, kernel: str | None, scalars: dict) -> None:
    """``--scalar NAME=V`` for a parameter the kernel lacks is a usage error,
    not a value to drop silently: the launch would then run on defaults the
    user meant to replace. Checked against ``--kernel`` (else the only entry,
    else every entry's parameters)."""
    if not scalars:
        return
    entries = [f for f in module.entries if kernel is None or f.name == kernel]
    if not entries:
        return  # an unknown --kernel: verify() says so
    names = [n for f in entries for n in f.param_names()]
    unknown = [n for n in scalars if n not in names]
    if unknown:
        who = f"{entries[0].name} has no" if len(entries) == 1 else "no entry has a"
        raise click.BadParameter(f"{who} parameter named {', '.join(unknown)} (parameters: "
                                 f"{', '.join(names) or 'none'})", ctx=click.get_current_context(),
                                 param_hint="'--scalar'")


def _launch(orig_name, module, kernel, manifest_entry, contract_file, grid, block, shared_bytes, buffer_bytes,
            scalars):
    """``(spec, launch)`` for :func:`~ptxopt.equivalence.interpret.verify`: a
    corpus kernel's manifest entry, else the launch contract of ``run`` and
    ``eval`` (:func:`~ptxopt.equivalence.launch_contract.resolve_contracts`, fitted to
    the entry's parameters); ``(None, None)``: neither (verify() then looks for
    a manifest entry with this kernel's signature)."""
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.launch_contract import ContractError, resolve_contracts

    g, b = _dim3(grid, "--grid"), _dim3(block, "--block")
    given = g is not None or b is not None or contract_file is not None
    if manifest_entry or (orig_name.startswith("corpus:") and not given):
        if contract_file is not None:
            raise InputError(f"{orig_name}: --contract and --manifest-entry both give the launch: choose one")
        return get(manifest_entry or orig_name[len("corpus:"):]), None
    try:
        contracts = resolve_contracts(orig_name, contract_file=contract_file, grid=g, block=b,
                                      shared_bytes=shared_bytes, scalars=_scalars(scalars),
                                      buffer_bytes=buffer_bytes)
    except ContractError as e:
        raise InputError(f"{orig_name}: {e}") from None
    if not contracts:
        return None, None
    entries = [f for f in module.entries if kernel is None or f.name == kernel]
    if not entries:
        return None, None  # an unknown --kernel: verify() says so
    if kernel is None and len(entries) > 1:
        raise InputError(f"{orig_name}: several entries ({', '.join(f.name for f in entries)}): name one with "
                         "--kernel")
    c = contracts.for_entry(entries[0].name)
    if c is None:
        return None, None
    try:
        return None, c.fit(entries[0].param_names())
    except ContractError as e:
        raise InputError(f"{orig_name}: {e}") from None


def _print(orig, trans, r) -> None:
    where = f"kernel {r.kernel}, grid {r.grid}, block {r.block}, {r.trials} launch" + \
        ("es" if r.trials != 1 else "")
    if r.status == "equal":
        click.echo(f"{trans}: equivalent to {orig} ({where})")
        if r.nc_reads is not None and r.nc_reads.evidence(r.trials):
            click.echo(f"  {r.nc_reads.evidence(r.trials)}")
    elif r.status == "inconclusive":
        click.echo(f"{trans}: INCONCLUSIVE against {orig} ({where}): nothing differed, but {r.error}")
    elif r.status == "mismatch":
        from ptxopt.equivalence.decision import format_mismatch

        m = r.mismatch
        what = "global variable " if m.where == "global variable" else ""
        click.echo(f"{trans}: NOT equivalent to {orig} ({where})")
        click.echo(f"  first difference: {what}{format_mismatch(m)}")
    else:
        verb = "faults" if r.error_kind == "fault" else "is rejected by ptxas" if r.error_kind == "ptxas" \
            else "fails"
        click.echo(f"ptxopt: error: transformed kernel {verb} (the original does not): {r.error}", err=True)
    _print_contract(r)


def _print_contract(r) -> None:
    """The launch contract and what it exercised, after the verdict."""
    asm = f", assembled for {r.arch}" if r.arch else ", not assembled"
    click.echo(f"  contract: grid {_dim(r.grid)}, block {_dim(r.block)}, {r.shared_bytes} dynamic shared "
               f"bytes{asm}")
    for la in r.launches:
        sc = ", ".join(f"{k}={v}" for k, v in la.get("scalars", {}).items()) or "no scalars"
        lay = la["layout"]
        if la.get("buffers"):
            lay += " (" + "; ".join(f"{k}: {v}" for k, v in la["buffers"].items()) + ")"
        line = (f"  launch {la['trial']}: seed {la['seed']}, {la['flavour']} inputs, {la['schedule']}, "
                f"{lay} buffers: {sc}")
        if la.get("extra"):
            line += f" [extra: {la['extra']}]"
        if la.get("races"):
            line += " [shared-memory race detection]"
        if la.get("skipped"):
            line += f" -- skipped: {la['skipped']}"
        click.echo(line)
    c = r.coverage
    if c is not None:
        click.echo(f"  coverage: {c.output_bytes:.0%} of output bytes stored ({c.written_bytes} of "
                   f"{c.output_size}), {c.threads:.0%} of threads stored to global memory, "
                   f"{c.branch_directions} of {2 * c.conditional_branches} branch directions taken")
        if c.changed_instructions:
            click.echo(f"  changed instructions: {c.changed_ran} of {c.changed_instructions} ran"
                       + (f"; never ran: {'; '.join(c.changed_not_run)}" if c.changed_not_run else ""))


def _dim(v) -> str:
    return ",".join(str(int(x)) for x in v)
