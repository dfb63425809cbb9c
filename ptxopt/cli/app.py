"""The ``ptxopt`` command line.

Every command reads PTX from a file, ``-`` or ``corpus:ID``; ``--json`` prints
one JSON document on stdout (keys documented in the README) and ``--json-out
FILE`` writes the same document, keeping the text report
(:func:`ptxopt.cli.common.json_options`). Expected
failures print one line, ``FILE:LINE:COL: error: ...`` or ``ptxopt: error:
...`` (a bad option: ``ptxopt CMD: error: ...``), on stderr and exit with the
code of :mod:`ptxopt.cli.exitcodes` (2 for bad input); a bug in ptxopt itself
prints one line and exits 3 (``PTXOPT_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import os
import sys

import click

from ptxopt.cli.common import (contract_options, emit_json, fail, json_options, json_target, output_dir, output_file,
                               prove_option, stdin_once)
from ptxopt.cli.output_rule import writes
from ptxopt.cli.exitcodes import BAD_INPUT, CHECK_FAILED, INCONCLUSIVE, INTERNAL, OK, TOOLCHAIN
from ptxopt.equivalence.verdict import Verdict
from ptxopt.kernels.inputs import InputError, read_one, read_targets
from ptxopt.ptx.parser import ParseError, parse_bytes
from ptxopt.toolchain.arch import DEFAULT_ARCH



class _Group(click.Group):
    """Turns expected errors into one-line messages and the exit codes of
    :mod:`ptxopt.cli.exitcodes` (bad input and bad options: 2)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        from ptxopt.cli import termination

        termination.install()  # SIGTERM takes the Ctrl-C path (what finished is written), exit 143
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as e:  # one line instead of click's usage block
            where = e.ctx.command_path if e.ctx is not None else (prog_name or "ptxopt")
            click.echo(f"{where}: error: {e.format_message()} (see '{where} --help')", err=True)
            sys.exit(BAD_INPUT)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo(f"ptxopt: {termination.word()}", err=True)
            sys.exit(termination.interrupted_code())
        sys.exit(rv if isinstance(rv, int) else OK)

    # the commands of the layers above (ptxopt.plugins) are added on first need: listing the
    # commands (--help) or a name that is not built in, so `ptxopt parse` never scans entry points
    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and _add_plugin_commands(self):
            cmd = super().get_command(ctx, cmd_name)
        return cmd

    def list_commands(self, ctx):
        _add_plugin_commands(self)
        return super().list_commands(ctx)

    def invoke(self, ctx):
        from ptxopt.kernels.corpus import CorpusError
        from ptxopt.executor.raycluster import RayUnreachable
        from ptxopt.passes.base import PassError
        from ptxopt.passes.passmanager import PassFailure
        from ptxopt.toolchain import ToolchainError

        try:
            return super().invoke(ctx)
        except ParseError as e:
            click.echo(str(e), err=True)
            sys.exit(BAD_INPUT)
        except (InputError, CorpusError, ToolchainError, PassError, RayUnreachable) as e:
            click.echo(f"ptxopt: error: {e}", err=True)
            sys.exit(TOOLCHAIN if getattr(e, "transient", False) else BAD_INPUT)  # a crashed tool: not bad input
        except PassFailure as e:  # a pass broke the kernel: a failed check, not bad input
            click.echo(f"ptxopt: pass failure: {e}", err=True)
            sys.exit(CHECK_FAILED)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except BrokenPipeError:  # `ptxopt ... | head`: the reader left, not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(OK)
        except KeyboardInterrupt:
            from ptxopt.cli import termination

            click.echo(f"ptxopt: {termination.word()}", err=True)
            sys.exit(termination.interrupted_code())
        except Exception as e:  # a bug: keep it to one line unless debugging
            if os.environ.get("PTXOPT_DEBUG"):
                raise
            click.echo(f"ptxopt: internal error: {type(e).__name__}: {e} "
                       "(set PTXOPT_DEBUG=1 for a traceback)", err=True)
            sys.exit(INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ptxopt")
def cli():
    """ptxopt: rewrite NVIDIA PTX kernels with legality-checked passes.

    TARGET/FILE arguments accept a path, '-' for stdin, or corpus:ID
    (see 'ptxopt corpus list').
    """


def _load(spec: str):
    src = read_one(spec)
    return src, parse_bytes(src.data, src.name)


def _print_json(obj, as_json=True, json_out=None) -> bool:
    """``obj`` by the ``--json``/``--json-out`` convention (:func:`ptxopt.cli.common.json_options`):
    True when it went to stdout (the text report is then left out)."""
    stdout, path = json_target(as_json, json_out)
    if stdout or path:
        emit_json(obj, stdout, path)
    return stdout


# --------------------------------------------------------------------------
@cli.command("parse")
@click.argument("file")
@click.option("--emit", "do_emit", is_flag=True, help="Print the module back as canonical PTX.")
@json_options(what="a summary of the module")
@writes({"json_out": "--json-out"}, ("file",))
def parse_cmd(file, do_emit, as_json, json_out=None):
    """Parse FILE; report syntax errors as FILE:LINE:COL (exit 2)."""
    from ptxopt.ptx.emit import emit

    src, m = _load(file)
    summary = module_summary(m)
    if do_emit:
        _print_json({"file": src.name, **summary}, False, json_out)
        click.echo(emit(m), nl=False)
        return
    if _print_json({"file": src.name, **summary}, as_json, json_out):
        return
    click.echo(f"{src.name}: ok: PTX {m.version}, target {', '.join(m.target)}")
    for f in summary["functions"]:
        defined = "" if f["defined"] else " (declaration)"
        click.echo(f"  {f['kind']} {f['name']}: {f['params']} params, "
                   f"{f['instructions']} instructions{defined}")


def module_summary(m) -> dict:
    funcs = []
    for f in m.functions:
        funcs.append({
            "name": f.name,
            "kind": f.kind.lstrip("."),
            "linkage": [x.lstrip(".") for x in f.linkage],
            "defined": f.body is not None,
            "params": len(f.params or ()),
            "instructions": sum(1 for _ in f.instructions()),
            "directives": {d.name.lstrip("."): list(d.args) for d in f.directives},
        })
    return {"version": m.version, "target": list(m.target), "address_size": m.address_size,
            "functions": funcs}


# --------------------------------------------------------------------------
@cli.command("stats")
@click.argument("file")
@json_options(what="the statistics")
@writes({"json_out": "--json-out"}, ("file",))
def stats_cmd(file, as_json, json_out=None):
    """Kernel statistics: features, blocks, DAG size, critical path, register pressure."""
    from ptxopt.analysis import summary

    src, m = _load(file)
    s = summary(m)
    if _print_json({"file": src.name, **s}, as_json, json_out):
        return
    _print_stats(src.name, s)


def _print_stats(name: str, s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for entry, e in s["entries"].items():
        t = Table(title=f"{name}: {entry}", show_header=False, box=None)
        t.add_column(style="bold")
        t.add_column(justify="right")
        t.add_row("parameters", ", ".join(f"{p['name']} ({p['type']})" for p in e["parameters"]) or "none")
        t.add_row("instructions", str(e["instructions"]))
        t.add_row("basic blocks", f"{e['blocks']}" + (" (has a loop)" if e["has_loop"] else ""))
        lp = e["loops"]
        t.add_row("loops", str(lp["count"]) + (f" (+{lp['irreducible']} irreducible cycles)"
                                                if lp["irreducible"] else ""))
        for x in lp["loops"]:
            trip = x["trip_count"]
            trip_s = (str(trip["value"]) if trip["kind"] == "constant" else
                      "from " + (", ".join(trip["params"]) or "launch values") if trip["kind"] == "parametric"
                      else f"unknown ({trip['why']})" if trip.get("why") else "unknown")
            ivs = ", ".join(f"{iv['reg']}+={iv['step']}" for iv in x["induction_variables"]) or "none"
            extra = "".join(s for s, on in ((", barrier", x["barriers"]), (", warp collective", x["collectives"]))
                            if on)
            t.add_row(f"  loop {x['header']} (depth {x['depth']})",
                      f"trip {trip_s}, {'uniform' if x['uniform_trip_count'] else 'not uniform'}, "
                      f"IVs {ivs}, carried regs {len(x['carried_registers'])}, "
                      f"carried mem {x['carried_memory']}{extra}")
        d = e["dag"]
        t.add_row("DAG nodes / edges (largest block)", f"{d['nodes_max']} / {d['edges_max']}")
        t.add_row("DAG nodes / edges (all blocks)", f"{d['nodes_total']} / {d['edges_total']}")
        cp = e["critical_path"]
        t.add_row("critical path (instructions, longest block)", str(cp["max"]))
        t.add_row("critical path (est. cycles, longest block)", str(cp["latency_max"]))
        rp = e["register_pressure"]
        t.add_row("max live registers (pred/b16/b32/b64)",
                  f"{rp['pred']} / {rp['b16']} / {rp['b32']} / {rp['b64']}")
        t.add_row("max live, 32-bit equivalents", str(rp["total32"]))
        console.print(t)
        ft = Table(title="features", box=None)
        ft.add_column("name")
        ft.add_column("value", justify="right")
        for k, v in e["features"].items():
            ft.add_row(k, f"{v:g}" if isinstance(v, float) else str(v))
        console.print(ft)


# --------------------------------------------------------------------------
@cli.command("compile")
@click.argument("file")
@click.option("--arch", default=None,
              help=f"Target architecture for ptxas (default: the module's .target, else {DEFAULT_ARCH}).")
@json_options(what="the result")
@click.option("--sass", is_flag=True, help="Also print the SASS listing with decoded control fields.")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False), callback=output_file(),
              help="Write the cubin ptxas produced here.")
@writes({"json_out": "--json-out", "output": "-o"}, ("file",))
def compile_cmd(file, arch, as_json, sass, output=None, json_out=None):
    """Compile FILE with ptxas: registers, spills, SASS count, ptxas time."""
    from ptxopt.toolchain import UnsupportedArch, UnsupportedPTXVersion, compile_ptx, disassemble
    from ptxopt.toolchain.arch import resolve_arch

    src = read_one(file)
    m = parse_bytes(src.data, src.name)  # syntax errors are reported the ptxopt way first
    arch = resolve_arch(m, arch)
    try:
        res = compile_ptx(src.data.decode("utf-8"), arch)
    except (UnsupportedArch, UnsupportedPTXVersion) as e:  # name the file, as eval and search do
        fail(f"{src.name}: {e}")
    if output:
        from ptxopt.support.outputs import write_atomic

        write_atomic(output, res.cubin)
    listing = disassemble(res.cubin)
    kernels = {}
    for name, k in res.kernels.items():
        kernels[name] = {
            "registers": k.registers,
            "spill_store_bytes": k.spill_store_bytes,
            "spill_load_bytes": k.spill_load_bytes,
            "stack_frame_bytes": k.stack_frame_bytes,
            "shared_bytes": k.shared_bytes,
            "sass_instructions": len(listing.functions.get(name, [])),
        }
    out = {
        "file": src.name, "arch": arch, "ptxas_version": res.ptxas_version,
        "ptxas_path": str(res.ptxas_path), "ptxas_seconds": round(res.wall_time_s, 4),
        "sass_instructions": listing.count, "kernels": kernels, "output": output,
    }
    if sass and (as_json or json_out):
        out["sass"] = [_sass_json(i) for i in listing.instructions]
    if _print_json(out, as_json, json_out):
        return
    click.echo(f"{src.name}: ptxas {res.ptxas_version} for {arch} in {res.wall_time_s * 1e3:.0f} ms, "
               f"{listing.count} SASS instructions")
    for name, k in kernels.items():
        click.echo(f"  {name}: {k['registers']} registers, spills {k['spill_store_bytes']} B stored / "
                   f"{k['spill_load_bytes']} B loaded, stack {k['stack_frame_bytes']} B, "
                   f"{k['sass_instructions']} SASS instructions")
    if sass:
        for i in listing.instructions:
            c = i.control
            click.echo(f"  {i.offset:6x}  S{c.stall:02d} {'Y' if c.yield_flag else '-'} "
                       f"W{_bar(c.write_barrier)} R{_bar(c.read_barrier)} "
                       f"M{c.wait_mask:06b}  {i.text}")


def _bar(b) -> str:
    return "-" if b is None or b == 7 else str(b)


def _sass_json(i) -> dict:
    c = i.control
    return {"function": i.function, "offset": i.offset, "text": i.text,
            "stall": c.stall, "yield": c.yield_flag, "write_barrier": c.write_barrier,
            "read_barrier": c.read_barrier, "wait_mask": c.wait_mask, "reuse": c.reuse}


# --------------------------------------------------------------------------
@cli.command("roundtrip")
@click.argument("targets", nargs=-1)
@click.option("--arch", "archs", multiple=True, default=(DEFAULT_ARCH,), show_default=True,
              help="Compare SASS for this architecture (repeatable).")
@click.option("--no-sass", is_flag=True, help="Skip the ptxas comparison; check the IR only.")
@click.option("-j", "--jobs", default=0, type=click.IntRange(0, 256), help="Worker processes (0: CPU count).")
@json_options(what="the per-kernel results")
@writes({"json_out": "--json-out"}, ("targets",))
def roundtrip_cmd(targets, archs, no_sass, jobs, as_json, json_out=None):
    """Check the front end on TARGETS (default: the whole corpus).

    For each kernel: parse(emit(m)) == m, printing is idempotent, and ptxas
    compiles the printed PTX to the same SASS as the original. Exits 1 if
    any kernel fails.
    """
    from ptxopt.toolchain.roundtrip import RoundTripResult

    stdin_once(*targets)
    sources = read_targets(list(targets) or ["corpus:all"])
    archs = () if no_sass else tuple(archs)
    results: list[RoundTripResult] = _run_parallel(sources, archs, jobs or os.cpu_count() or 1,
                                                   progress=not as_json)
    failed = [r for r in results if not r.ok]
    doc = {"archs": list(archs), "kernels": [r.to_json() for r in results],
           "passed": len(results) - len(failed), "failed": len(failed)}
    if not _print_json(doc, as_json, json_out):
        for r in failed:
            click.echo(f"FAIL {r.name}: {_why(r)}")
        rejected = sum(1 for r in results for a in r.archs if a.status == "rejected")
        msg = f"{len(results) - len(failed)} passed, {len(failed)} failed"
        if rejected:
            msg += f" ({rejected} kernel/arch pairs skipped: ptxas rejects the original)"
        click.echo(msg)
    if failed:
        sys.exit(CHECK_FAILED)


def _why(r) -> str:
    if r.error:
        return r.error
    if not r.ir_equal:
        return "parse(emit(m)) != m"
    if not r.idempotent:
        return "printing is not idempotent"
    bad = [a for a in r.archs if a.status not in ("same", "rejected")]
    return "; ".join(f"{a.arch}: {a.status} {a.detail}" for a in bad)


def _check_one(args):
    from ptxopt.toolchain.roundtrip import RoundTripResult, check_text

    name, data, archs = args
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return RoundTripResult(name, error=f"{name}: not UTF-8 text ({e.reason})")
    return check_text(text, name, archs)


def _run_parallel(sources, archs, jobs, progress: bool):
    """Every source through the executor (ptxopt.executor: worker processes that die with this one,
    a check that raises or kills its worker is that file's failure, never the run's)."""
    from rich.progress import Progress

    from ptxopt.executor import LocalExecutor
    from ptxopt.toolchain.roundtrip import RoundTripResult

    work = [(s.name, s.data, archs) for s in sources]
    results = [None] * len(work)
    ex = LocalExecutor(0 if jobs <= 1 or len(work) == 1 else jobs, start_method=None)  # None: fork on Linux
    try:
        with Progress(disable=not progress, transient=True) as bar:
            task = bar.add_task("round trip", total=len(work))

            def done(o) -> None:
                name = work[o.index][0]
                results[o.index] = o.value if o.ok else RoundTripResult(name, error=f"{name}: {o.error or o.died}")
                bar.advance(task)

            ex.run(_check_one, work, on_outcome=done)
    finally:
        ex.close()
    return results


# --------------------------------------------------------------------------
@cli.command("run")
@click.argument("file")
@click.option("-p", "--passes", "pipeline", required=True,
              help="Pipeline, e.g. vec_ld,maxnreg_128 (see 'ptxopt passes').")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=output_file(),
              help="Write the transformed PTX here instead of stdout.")
@click.option("--arch", default=None,
              help=f"Architecture for the compile check and --verify-each (default: the module's .target, "
                   f"else {DEFAULT_ARCH}).")
@click.option("--no-compile-check", is_flag=True,
              help="Do not assemble the output with ptxas (by default ptxas must accept it, else exit 1).")
@click.option("--verify-each", is_flag=True,
              help="Check the input compiles, then after every pass that changed the module: ptxas "
                   "accepts it and every entry is proved equivalent (see --prove) or computes the same "
                   "outputs in the interpreter under the launch contract (--contract/--grid/--block/"
                   "--shared-bytes/--scalar; without one, a launch inferred from the PTX; exit 4 if "
                   "that could not be established, see --allow-unchecked).")
@contract_options
@click.option("--allow-unchecked", is_flag=True,
              help="With --verify-each, exit 0 (not 4) even when equivalence could not be checked for an entry "
                   "(the original cannot run under the contract); the 'inconclusive' lines are still printed. "
                   "Also write the result of a pass that changes control flow (unroll) whose proof failed "
                   "(by default: exit 1, nothing written); the output then says it is not proved.")
@click.option("--print-changed", is_flag=True, help="Print a diff (stderr) after every pass that changed the module.")
@click.option("--print-after-all", is_flag=True, help="Print the module (stderr) after every pass.")
@click.option("--time-passes", is_flag=True, help="Print how long each pass took (stderr).")
@click.option("--stats", is_flag=True, help="Print each pass's change report: sites changed and refused (stderr).")
@click.option("--opt-bisect-limit", type=click.IntRange(0), default=None, metavar="N",
              help="Run only the first N passes of the pipeline.")
@click.option("--reproducer-dir", type=click.Path(file_okay=False), default=None, callback=output_dir(create=False),
              help="Where to write a reproducer when a pass fails (default: a temp folder).")
@json_options(what="a report (pipeline, per-pass reports and timings; the PTX too unless -o)")
@click.option("--diff", "as_diff", is_flag=True,
              help="Print a unified diff of FILE and the output instead of the PTX (-o still writes the PTX).")
@click.option("--canonical", is_flag=True,
              help="Print the whole module in ptxopt's canonical layout (by default the input's lines are kept "
                   "byte for byte where the transformed module has the same statement: a minimal diff).")
@prove_option
@writes({"json_out": "--json-out", "output": "-o"}, ("file", "contract_file"), in_place={"output": "file"})
def run_cmd(file, pipeline, output, arch, no_compile_check, verify_each, contract_file, grid, block, shared_bytes,
            scalars, allow_unchecked, print_changed, print_after_all, time_passes, stats, opt_bisect_limit,
            reproducer_dir, as_json, as_diff=False, canonical=False, prove=True, json_out=None):
    """Apply a pass pipeline to FILE and print the transformed PTX.

    The output is assembled with ptxas first (unless --no-compile-check):
    when ptxas rejects it, exit 1 with ptxas's message and no output (when
    ptxas rejects the input as well, exit 2: the input's problem).
    A pass that changes control flow (unroll) has its result proved
    equivalent to its input before anything is written: when the proof
    fails, exit 1 with the reason and no output (--allow-unchecked writes it,
    saying it is not proved).
    With --verify-each, exit 0: every changed entry was decided equivalent
    (identical, hints-only, proved, or equal in the interpreter); 1: a pass broke the kernel (a reproducer is written); 2: bad
    input, including PTX that ptxas rejects before any pass ran; 4:
    equivalence could not be checked for some entry (an 'inconclusive:' line
    each) and --allow-unchecked was not given.
    """
    from ptxopt.equivalence.launch_contract import ContractError, resolve_contracts
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.layout import preserve_layout, unified_diff
    from ptxopt.passes.passmanager import PassManager, PrintAfterAll, PrintChanged, Stats, TimePasses
    from ptxopt.passes.pipeline import Pipeline

    pl = Pipeline.parse(pipeline)
    src, m = _load(file)
    instruments = []
    verifier = None
    if verify_each:  # a contract only matters to --verify-each (a stale file cannot break a plain run)
        try:
            contracts = resolve_contracts(file, contract_file=contract_file, grid=grid, block=block,
                                          shared_bytes=shared_bytes, scalars=scalars)
        except ContractError as e:
            raise InputError(str(e)) from None
        from ptxopt.equivalence.instrument import VerifyEach  # the interpreter (numpy): only when asked for

        verifier = VerifyEach(arch, contract=contracts, source=src.data.decode("utf-8"), prove=prove)
        instruments.append(verifier)
    if print_changed:
        instruments.append(PrintChanged())
    if print_after_all:
        instruments.append(PrintAfterAll())
    if stats:
        instruments.append(Stats())
    if time_passes:
        instruments.append(TimePasses())
    structural = None
    if any(getattr(p, "structural", False) for p in pl):  # a rewrite of control flow is proved, not sampled
        from ptxopt.equivalence.prove.structural import StructuralProofs

        structural = StructuralProofs()
        instruments.append(structural)
    pm = PassManager(pl, instruments=instruments, bisect_limit=opt_bisect_limit,
                     reproducer_dir=reproducer_dir)
    result = pm.run(m)
    from ptxopt.evaluate.stages import structural_stands, unproved_proofs

    unproved = unproved_proofs(structural.proofs) if structural is not None else []
    for pr in structural.proofs if structural is not None else ():
        if structural_stands(pr.verdict):
            click.echo(f"ptxopt: proved: {pr.line()}", err=True)
        elif allow_unchecked:
            click.echo(f"ptxopt: warning: NOT PROVED, written because of --allow-unchecked: {pr.line()}", err=True)
        else:
            click.echo(f"ptxopt: not proved: {pr.line()}", err=True)
    if unproved and not allow_unchecked:
        click.echo(f"ptxopt: error: pass{'es' if len(unproved) > 1 else ''} "
                   f"{', '.join(dict.fromkeys(u.name for u in unproved))} changed control flow and the result "
                   f"was not proved equivalent (see the 'not proved:' line{'s' if len(unproved) > 1 else ''}); "
                   f"nothing written; pass --allow-unchecked to write it anyway", err=True)
        sys.exit(CHECK_FAILED)
    inconclusive = []
    if verifier is not None:
        for c in verifier.checks:
            if c.verdict is Verdict.INCONCLUSIVE:
                inconclusive.append(c)
                click.echo(f"ptxopt: inconclusive: {c.line()}", err=True)
            else:
                click.echo(f"ptxopt: verified: {c.line()}", err=True)
        for r in result.records:
            if r.reverted:
                click.echo(f"ptxopt: note: pass '{r.name}' reverted: {r.reverted}", err=True)
    source = src.data.decode("utf-8")
    text = emit(result.module) if canonical else preserve_layout(source, result.module, filename=src.name).text
    if not no_compile_check and verifier is None:  # --verify-each assembled every changed module already
        _compile_check(text, result.module, arch, src)
    if output:
        from ptxopt.support.outputs import write_atomic

        write_atomic(output, text)
    stdout_json = False
    if as_json or json_out:
        doc = {"file": src.name, **result.to_json()}
        if structural is not None:
            doc["structural"] = {"proofs": [pr.to_json() for pr in structural.proofs],
                                 "allow_unchecked": allow_unchecked, "unproved_written": bool(unproved)}
        if verifier is not None:
            doc["verify"] = verifier.to_json()
            doc["verify"]["allow_unchecked"] = allow_unchecked
        doc["output"] = output if output else None
        if not output:
            doc["ptx"] = text
        stdout_json = _print_json(doc, as_json, json_out)
    if as_diff and not stdout_json:
        click.echo(unified_diff(source, text, src.name), nl=False)
    elif not output and not stdout_json:
        click.echo(text, nl=False)
    if inconclusive and not allow_unchecked:
        click.echo(f"ptxopt: error: equivalence could not be checked for {len(inconclusive)} changed "
                   "entr" + ("y" if len(inconclusive) == 1 else "ies") + " (see the 'inconclusive:' lines); "
                   "give a launch contract (--grid/--block/--shared-bytes/--scalar, --contract FILE or "
                   "KERNEL.contract.json) or pass --allow-unchecked", err=True)
        sys.exit(INCONCLUSIVE)


def _compile_check(text: str, module, arch: str | None, src) -> None:
    """ptxas must accept what ``run`` prints: exit 1 with its message when it
    does not (2 when it rejects the input too); a toolchain that cannot
    assemble this version or architecture is said, not hidden (ptxas's
    judgement: :func:`ptxopt.evaluate.stages.blame`)."""
    from ptxopt.evaluate import stages
    from ptxopt.toolchain import compile_ptx
    from ptxopt.toolchain.arch import resolve_arch

    a = resolve_arch(module, arch)
    try:
        compile_ptx(text, a)
        return
    except Exception as e:
        err = e
    input_error = []

    def input_rejection():
        input_error.append(stages.rejection(lambda: compile_ptx(src.data.decode("utf-8"), a)))
        return input_error[0]

    kind = stages.blame(err, input_rejection, changed=None)
    if kind == stages.BROKEN:
        raise err
    if kind == stages.BAD_INPUT:
        fail(f"{src.name}: ptxas rejects the input itself for {a}: {input_error[0]}", code=BAD_INPUT)
    if kind != stages.REJECTED:  # the toolchain could not judge the output: said, not hidden
        click.echo(f"ptxopt: note: the output was not compile-checked: {err}", err=True)
        return
    click.echo(f"ptxopt: error: ptxas rejects the output for {a} (nothing written; --no-compile-check "
               f"prints it anyway): {err}", err=True)
    sys.exit(CHECK_FAILED)


@cli.command("passes")
@json_options(what="the pass list")
@writes({"json_out": "--json-out"})
def passes_cmd(as_json, json_out=None):
    """List the named passes in registry order: name, family, conflicts,
    description; then the parametric kinds with their legal values."""
    from ptxopt.passes import pass_kinds, pass_names
    from ptxopt.passes.families import conflict
    from ptxopt.passes.registry import signature
    from ptxopt.passes.pipeline import make_pass

    passes = [make_pass(n) for n in pass_names()]
    rows = []
    for p in passes:
        conflicts = [o.name for o in passes if o is not p and conflict(p, o)]
        rows.append({"name": p.name, "family": p.family, "conflicts": conflicts,
                     "description": p.description, "kind": p.kind,
                     "parameters": p.parameters(), "signature": signature(p.kind)})
    if _print_json(rows, as_json, json_out):
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None)
    for col in ("#", "name", "family", "conflicts with", "description"):
        t.add_column(col)
    for i, r in enumerate(rows):
        t.add_row(str(i), r["name"], r["family"], ", ".join(r["conflicts"]) or "-", r["description"])
    Console(width=160).print(t)
    forms = [signature(k) for k in pass_kinds() if signature(k) != k]
    click.echo("With parameters (the names above are aliases of one value each): " + ", ".join(forms))


# --------------------------------------------------------------------------
@cli.group("corpus")
def corpus_grp():
    """The committed kernel corpus."""


@corpus_grp.command("list")
@click.option("--family", default=None, help="Only this family, compiler or id (e.g. gemm_tile, triton).")
@json_options(what="the manifest entries")
@writes({"json_out": "--json-out"})
def corpus_list(family, as_json, json_out=None):
    """List corpus kernels with their family, compiler, check launch (the
    interpreter's) and performance launch (what users run; none for gemm_tile)."""
    from ptxopt.kernels.corpus import select

    kernels = select(family or "all")
    if (as_json or json_out) and _print_json([{
            "id": k.id, "family": k.family, "compiler": k.compiler, "path": str(k.ptx_path),
            "entry": k.entry, "arch": k.arch, "ptx_version": k.ptx_version,
            "grid": list(k.launch.grid), "block": list(k.launch.block),
            "shared_bytes": k.launch.shared_bytes, "params": len(k.params),
            "performance": None if k.performance is None else {
                "grid": list(k.performance.grid), "block": list(k.performance.block),
                "shared_bytes": k.performance.shared_bytes, "scalars": k.performance.scalars,
                "problem": k.performance.problem},
    } for k in kernels], as_json, json_out):
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None)
    for col in ("id", "family", "compiler", "ptx", "check grid", "check block", "perf grid", "perf block",
                "params"):
        t.add_column(col)
    for k in kernels:
        perf = k.performance
        t.add_row(k.id, k.family, k.compiler, k.ptx_version, "x".join(map(str, k.launch.grid)),
                  "x".join(map(str, k.launch.block)), "x".join(map(str, perf.grid)) if perf else "-",
                  "x".join(map(str, perf.block)) if perf else "-", str(len(k.params)))
    Console().print(t)
    click.echo(f"{len(kernels)} kernels")


from ptxopt.cli.eval import eval_cmd  # noqa: E402  (the evaluator's CLI)
from ptxopt.cli.explain import explain_cmd  # noqa: E402  (why a kernel is slow: occupancy and bounds)
from ptxopt.cli.search import search_cmd  # noqa: E402  (search over pipelines)
from ptxopt.cli.verify import verify_cmd  # noqa: E402  (its own module: the interpreter's CLI)
from ptxopt.cli.apply import apply_cmd  # noqa: E402  (re-apply a search --emit manifest)

cli.add_command(verify_cmd, "verify")
cli.add_command(eval_cmd, "eval")
cli.add_command(search_cmd, "search")
cli.add_command(explain_cmd, "explain")
cli.add_command(apply_cmd, "apply")

#: commands a layer above adds (ptxopt.plugins), with what to install when it is missing
PLUGIN_COMMANDS = {"train": ("training", "Train the pass-selection policy: BC on greedy trajectories, then GRPO.")}


def _unavailable(name: str, doing: str, summary: str, why: str) -> click.Command:
    """A stand-in for a plugin command that is not installed: the clear error, exit 2."""

    @click.command(name, help=f"{summary} (needs the learning layer: pip install 'ptxopt[rl]')",
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def cmd():
        from ptxopt.cli.common import fail

        fail(f"{doing} needs the learning layer (pip install 'ptxopt[rl]'): {why}")

    return cmd


def _add_plugin_commands(group: click.Group) -> bool:
    """Add the plugins' commands to ``group`` (once; stand-ins for the missing ones of
    :data:`PLUGIN_COMMANDS`); whether this call added any."""
    if getattr(group, "_plugins_added", False):
        return False
    group._plugins_added = True
    from ptxopt import plugins

    for name in plugins.commands():  # rl.plugin: train (the learning layer; imports torch lazily)
        try:
            group.add_command(plugins.command(name), name)
        except ImportError as e:
            doing, summary = PLUGIN_COMMANDS.get(name, (name, name))
            group.add_command(_unavailable(name, doing, summary, str(e)), name)
    for name, (doing, summary) in PLUGIN_COMMANDS.items():
        if name not in group.commands:
            why = "; ".join(plugins.registry().errors.values()) or "no plugin provides it"
            group.add_command(_unavailable(name, doing, summary, why), name)
    return True


def main(argv=None):
    cli.main(args=argv, prog_name="ptxopt")


if __name__ == "__main__":
    main()
