"""What the commands share: exit codes, the one way to fail on bad input,
checks that run before any work (output paths, option values, backend,
architecture and PTX version), and the evaluator options.

One definition each, so the commands cannot drift apart in wording,
defaults or exit status (the codes themselves: :mod:`ptxopt.cli.exitcodes`).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from ptxopt.cli.exitcodes import BAD_INPUT, OK
from ptxopt.toolchain.arch import DEFAULT_ARCH


def fail(msg: str, code: int = BAD_INPUT) -> None:
    """Report bad input on stderr as one line and exit 2 (no traceback)."""
    click.echo(f"ptxopt: error: {msg}", err=True)
    sys.exit(code)


# -- output paths: checked while the options are parsed, before any work ------

def output_file_problem(path: str) -> str | None:
    """Why ``path`` cannot be written as an output file, or None.

    Checked by opening it for append (nothing is truncated) and removing it
    again when it did not exist: permission bits alone say nothing for root,
    and ``/proc`` or a read-only file system only show themselves on open."""
    p = Path(path)
    try:
        is_dir = p.is_dir()
    except OSError as e:  # a name no file system holds (ENAMETOOLONG): not an internal error
        return f"{path}: cannot be written: {e.strerror or e}"
    if is_dir:
        return f"{path}: is a directory"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        return f"{path}: no such directory: {parent}"
    if not parent.is_dir():
        return f"{path}: {parent} is not a directory"
    existed = p.exists() or p.is_symlink()
    try:
        with open(p, "a"):
            pass
    except OSError as e:
        return f"{path}: cannot be written: {e.strerror or e}"
    if not existed:
        try:
            p.unlink()
        except OSError:
            pass
    return None


def output_dir_problem(path: str, *, create: bool = True) -> str | None:
    """Why ``path`` cannot be used as an output folder, or None. ``create``:
    it is created when missing (as the command would); otherwise its nearest
    existing ancestor must be a folder that can be written."""
    import tempfile

    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{path}: not a directory"
    probe = p
    try:
        if create:
            p.mkdir(parents=True, exist_ok=True)
        else:
            while not probe.exists() and probe != probe.parent:
                probe = probe.parent
            if not probe.is_dir():
                return f"{path}: {probe} is not a directory"
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        return f"{path}: cannot be written: {e.strerror or e}"
    return None


def output_file(*, allow_stdout: bool = False):
    """A click callback: the option names an output file ('-': stdout where allowed)."""

    def check(ctx, param, value):
        if value is None or (allow_stdout and value == "-"):
            return value
        why = output_file_problem(value)
        if why:
            raise click.BadParameter(why, ctx=ctx, param=param)
        return value

    return check


def output_dir(*, create: bool = True):
    """A click callback: the option names an output folder (see :func:`output_dir_problem`)."""

    def check(ctx, param, value):
        if value is None:
            return value
        why = output_dir_problem(value, create=create)
        if why:
            raise click.BadParameter(why, ctx=ctx, param=param)
        return value

    return check


# -- JSON output: one convention for every command ----------------------------
#
# ``--json`` prints the command's one JSON document on stdout (and nothing else
# there: the text report is left out); ``--json-out FILE`` writes the same
# document to FILE and keeps the text report on stdout. Both may be given.

def _legacy_json_value(ctx, param, value):
    """``--json`` of ``search``/``train``, which once took the output path:
    ``--json`` alone (or ``--json -``) is the flag; ``--json FILE`` still
    writes FILE, with a deprecation warning (:func:`json_target`). A value
    that is plainly an input (a PTX file, a folder, a corpus selector: the
    TARGET written after ``--json``) is refused, never overwritten."""
    if value is None or value == "-":
        return value
    why = None
    try:
        is_dir, exists = Path(value).is_dir(), Path(value).exists()
    except OSError:  # a name no file system holds (too long): output_file says so below
        is_dir, exists = False, True
    if value.lower().endswith(".ptx") or value.startswith("corpus:") or is_dir:
        why = "an input"
    elif not exists:
        from ptxopt.kernels.corpus import CorpusError, select

        try:
            select(value)
            why = "a corpus selector"
        except CorpusError:
            pass
    if why:
        raise click.BadParameter(f"{value!r} is {why}: --json takes no value (write the target first, "
                                 "'... TARGET --json'; --json-out FILE writes the JSON to a file)",
                                 ctx=ctx, param=param)
    return output_file(allow_stdout=True)(ctx, param, value)


def json_options(*, legacy_path: bool = False, what: str = "the result"):
    """``--json`` and ``--json-out FILE`` (the convention above) as parameters
    ``as_json`` and ``json_out``; pass both to :func:`json_target`.
    ``legacy_path``: ``--json`` also accepts the path it once took."""
    if legacy_path:
        flag = click.option("--json", "as_json", is_flag=False, flag_value="-", default=None, metavar="",
                            callback=_legacy_json_value,
                            help=f"Print {what} as JSON on stdout instead of the text report "
                                 "('--json FILE' is deprecated: use --json-out FILE).")
    else:
        flag = click.option("--json", "as_json", is_flag=True,
                            help=f"Print {what} as JSON on stdout instead of the text report.")
    out = click.option("--json-out", "json_out", default=None, metavar="FILE", type=click.Path(dir_okay=False),
                       callback=output_file(allow_stdout=True),
                       help=f"Write {what} as JSON to FILE ('-': stdout); the text report is still printed.")

    def deco(f):
        return flag(out(f))

    return deco


def json_target(as_json, json_out) -> tuple[bool, str | None]:
    """``(print on stdout, file to write or None)`` from the :func:`json_options`
    values; a legacy ``--json FILE`` is said to be deprecated on stderr."""
    stdout = bool(as_json)
    if isinstance(as_json, str) and as_json != "-":  # search/train --json FILE, before --json-out
        click.echo(f"ptxopt: warning: '--json {as_json}' is deprecated: use '--json-out {as_json}' "
                   "('--json' alone prints the JSON on stdout)", err=True)
        stdout = False
        if json_out is not None and json_out != as_json:
            fail(f"'--json {as_json}' (deprecated) and '--json-out {json_out}' both name a file: give --json-out alone")
        json_out = as_json
    if json_out == "-":
        stdout, json_out = True, None
    return stdout, json_out


def dump_json(doc) -> str:
    """The one way a command's JSON document is printed (stdout and --json-out alike)."""
    import json

    return json.dumps(doc, indent=2)


def emit_json(doc, stdout: bool, path: str | None) -> None:
    """Write ``doc`` to ``path`` (atomically; an unwritable one is bad input,
    exit 2) and/or print it on stdout (:func:`json_target`'s pair)."""
    text = dump_json(doc)
    if path:
        from ptxopt.support.outputs import write_atomic

        write_atomic(path, text + "\n")
    if stdout:
        click.echo(text)


# -- option values -------------------------------------------------------------

class FiniteFloat(click.ParamType):
    """A finite float, optionally above (``min_open``) or at least ``min``, and
    at most ``max``: ``nan`` and ``inf`` pass :class:`click.FloatRange` (every
    comparison with NaN is false), and a NaN learning rate only shows up as a
    broken policy after minutes of training."""

    name = "float"

    def __init__(self, min: float | None = None, *, min_open: bool = False, max: float | None = None):
        self.min, self.min_open, self.max = min, min_open, max

    def convert(self, value, param, ctx):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and (x <= self.min if self.min_open else x < self.min):
            self.fail(f"{x:g} must be {'>' if self.min_open else '>='} {self.min:g}", param, ctx)
        if self.max is not None and x > self.max:
            self.fail(f"{x:g} must be <= {self.max:g}", param, ctx)
        return x


def stdin_once(*specs) -> None:
    """A usage error (exit 2) when ``-`` is named more than once among the
    command's FILE arguments and options: stdin can be read only once, and
    the second reader would see an empty file and report a confusing error."""
    if sum(1 for s in specs if s == "-") > 1:
        raise click.UsageError("'-' (stdin) is given more than once; stdin can be read only once",
                               ctx=click.get_current_context(silent=True))


def check_arch(arch: str | None) -> None:
    """Fail now (exit 2) when no installed ptxas can target ``arch``."""
    if not arch:
        return
    from ptxopt.toolchain import ToolchainError, installed_ptxas

    try:
        tools = installed_ptxas()
    except ToolchainError as e:
        fail(str(e))
    if tools and not any(t.supports_arch(arch) for t in tools):
        fail(f"--arch {arch}: no installed ptxas can target it (tried "
             f"{', '.join(f'ptxas {t.version}' for t in tools)})")


def check_toolchain(text: str, label: str, arch: str | None) -> None:
    """Fail now (exit 2) when no installed ptxas accepts ``text``'s
    ``.version`` for its architecture (``arch``, else its ``.target``): the
    same answer ``compile`` gives, before ``eval``/``search`` spend any work."""
    problem = toolchain_problem(text, label, arch)
    if problem is not None:
        fail(*problem)


def toolchain_problem(text: str, label: str, arch: str | None) -> tuple[str, int] | None:
    """``(message, exit code)`` when no installed ptxas takes ``text`` (2), or
    the tool failed on its own while being asked (5: not bad input); else None."""
    from ptxopt.cli.exitcodes import TOOLCHAIN
    from ptxopt.toolchain import ToolchainError, ptx_isa_version, select_ptxas
    from ptxopt.toolchain.arch import resolve_arch

    try:
        select_ptxas(ptx_isa_version(text), resolve_arch(text, arch))
    except ToolchainError as e:
        return f"{label}: {e}", (TOOLCHAIN if e.transient else BAD_INPUT)
    return None


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
fresh_cache_option = click.option(
    "--fresh-cache", is_flag=True,
    help="When the cache cannot be used (damaged, not SQLite, another program's database, a newer schema), "
         "move it aside (PATH.unusable-TIME) and start a new one, instead of stopping with exit 2.")


def prepare_cache(path, fresh: bool | None) -> None:
    """Check the cache at ``path`` before any work (see
    :func:`ptxopt.evaluate.cache.check_cache`): notes on stderr, exit 2 when
    unusable. ``fresh`` None: the command has no ``--fresh-cache`` to offer."""
    from ptxopt.evaluate.cache import CacheError, check_cache

    try:
        notes = check_cache(path, fresh=fresh)
    except CacheError as e:
        fail(str(e))
    for n in notes:
        click.echo(f"ptxopt: note: {n}", err=True)


def report_unsaved(path) -> int:
    """After the work: say where results are that could not be written to the
    cache at ``path`` (its lock was held, or the disk is full), so none looks
    lost -- the "kept beside it" note only when such a file holds them; and
    when some could not be kept anywhere, say so: ``cache not writable``, exit 2.
    Returns the exit code this adds (0 or 2)."""
    from ptxopt.evaluate.cache import pending_files, unsaved, write_error

    if path is None:
        return OK
    files = pending_files(path)
    why = write_error(path)
    if files:
        more = f" and {len(files) - 1} more" if len(files) > 1 else ""
        because = f"could not be written ({why})" if why else "was locked by another process"
        click.echo(f"ptxopt: note: the evaluation cache {path} {because}; results it could not "
                   f"take are kept beside it in {files[0].name}{more} and merged in by the next run", err=True)
    lost = unsaved(path)
    if lost:
        click.echo(f"ptxopt: error: cache not writable: {path}: {lost[0]} result(s) could not be saved "
                   f"({why or 'the write failed'}; nor beside it: {lost[1]})", err=True)
        return BAD_INPUT
    return OK
def _bound_children(ctx, param, value):
    """``--timeout`` also caps every child process (ptxas, nvdisasm, the locator's probes) for the command."""
    if value is not None:
        from ptxopt.toolchain.process import set_time_limit

        set_time_limit(value)
        ctx.call_on_close(lambda: set_time_limit(None))
    return value


timeout_option = click.option(
    "--timeout", default=600.0, show_default=True, type=FiniteFloat(0.1), callback=_bound_children,
    help="Seconds one candidate may take (and any one ptxas or nvdisasm run).")
arch_option = click.option(
    "--arch", default=None, metavar="SM",
    help=f"Target architecture for ptxas and the model [default: each kernel's own .target, else {DEFAULT_ARCH}].")
allow_unchecked_option = click.option(
    "--allow-unchecked", is_flag=True,
    help="Let a candidate whose equivalence with the original was not established (verdict 'inconclusive': "
         "the original cannot be interpreted under the launch, ...) be kept and reported as best. Off: such "
         "candidates are counted and never chosen.")
_objective = click.option(
    "--objective", type=click.Choice(["latency", "throughput"]), default=None,
    help="What the cycles are: 'latency' (one warp, the measure of the published sm_89 figures) or "
         "'throughput' (the whole performance launch: occupancy, waves, bandwidth bounds). "
         "[default: throughput when a performance launch is known (--perf-*, a contract's \"performance\", "
         "the manifest), latency otherwise and for the gemm_tile family]")
#: ``--l2 cold|warm``: the L2 at the start of a throughput launch (ptxopt.sim.throughput); part of the cache key
l2_option = click.option(
    "--l2", "l2", type=click.Choice(["cold", "warm"]), default="cold", show_default=True,
    help="Throughput objective: the L2 at the launch's start. 'cold' (as GPU benchmarks measure: Triton's "
         "do_bench flushes L2): the footprint comes from DRAM and first touches pay the DRAM latency; 'warm': "
         "a footprint that fits in L2 is already there. The latency objective stays as calibrated (warm).")


def objective_option(f):
    """``--objective`` and ``--l2`` (the throughput objective's L2 state)."""
    return _objective(l2_option(f))

prove_option = click.option(
    "--prove/--no-prove", "prove", default=True, show_default=True,
    help="Try to prove each changed candidate equivalent for all inputs first (translation validation, "
         "verdict 'proved': the interpreter is not run); --no-prove: the interpreter decides every one.")
trials_option = click.option(
    "--trials", default=None, type=click.IntRange(1, 1000),
    help="Interpreter launches compared for equivalence [default: ptxopt.equivalence.interpret's].")

def _set_interp_memory(ctx, param, value):
    """``--interp-memory GiB``: the interpreter's memory budget, passed on in the
    environment so that worker processes get it too (:mod:`ptxopt.interp.limits`)."""
    if value is not None:  # imported only then: ptxopt.interp (numpy) stays out of a start-up that needs none
        import os

        from ptxopt.interp.limits import ENV

        os.environ[ENV] = repr(float(value))
    return value


#: ``--interp-memory GiB`` (see :func:`_set_interp_memory`); the commands that run the interpreter take it.
interp_memory_option = click.option(
    "--interp-memory", type=click.FloatRange(min=0, min_open=True), default=None, metavar="GiB",
    expose_value=False, callback=_set_interp_memory,
    help="Memory the PTX interpreter may use for one launch, in GiB (buffers, shared, local and per-thread "
         "state, counted before anything is allocated; a larger launch is refused, naming the limit) "
         "[default: $PTXOPT_INTERP_MEMORY, else 4].")

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
    interp_memory_option,
)


def contract_options(f):
    """``--contract FILE --grid --block --shared-bytes --scalar NAME=V`` (see :mod:`ptxopt.equivalence.launch_contract`)."""
    for opt in reversed(_CONTRACT_OPTIONS):
        f = opt(f)
    return f


_PERF_LAUNCH_OPTIONS = (
    click.option("--perf-grid", default=None, metavar="X,Y,Z",
                 help="Performance launch (what you run; not the check launch): grid size [default: assumed].")
    ,
    click.option("--perf-block", default=None, metavar="X,Y,Z", help="Performance launch: block size."),
    click.option("--perf-shared-bytes", type=click.IntRange(0), default=None, metavar="N",
                 help="Performance launch: dynamic shared memory per block in bytes."),
    click.option("--perf-scalar", "perf_scalars", multiple=True, metavar="NAME=VALUE",
                 help="Performance launch: value of a scalar parameter (repeatable)."),
    click.option("--perf-bytes", "perf_bytes", multiple=True, metavar="NAME=BYTES",
                 help="Performance launch: bytes a buffer moves to/from DRAM (read + written; repeatable). "
                      "Overrides the footprint found from the kernel for the DRAM floor (source 'counts')."),
)


def perf_launch_options(f):
    """``--perf-grid --perf-block --perf-shared-bytes --perf-scalar NAME=V``: the
    launch the user runs (the many-warp estimate's), never the check launch."""
    for opt in reversed(_PERF_LAUNCH_OPTIONS):
        f = opt(f)
    return f


def _ptx_block(fn, ptx: str | None, entry: str | None):
    """A callable giving the block the entry's PTX states (:func:`ptxopt.equivalence.infer.ptx_block`),
    from ``fn`` or, parsed only when asked, from ``ptx`` (the entry named ``fn`` or the first)."""
    def block():
        from ptxopt.equivalence.infer import ptx_block

        f = fn
        if f is None and ptx is not None:
            from ptxopt.ptx.parser import parse_bytes

            entries = parse_bytes(ptx.encode(), "<perf-block>").entries
            f = next((e for e in entries if entry is None or e.name == entry), None)
        return None if f is None else ptx_block(f)

    return block


def performance_launch(path: str, perf: dict, *, contract_file: str | None = None, entry: str | None = None,
                       base=None, fn=None, ptx: str | None = None):
    """The performance launch (role ``performance``) for ``path`` from the
    :func:`perf_launch_options` values in ``perf`` (``perf_grid``, ``perf_block``,
    ``perf_shared_bytes``, ``perf_scalars``) over the contract file's
    ``"performance"`` entry, else ``base`` (a corpus kernel's manifest entry):
    :func:`ptxopt.equivalence.launch_contract.resolve_performance`. With ``fn`` (the
    entry's IR function) it must fit the entry (:func:`~ptxopt.equivalence.launch_contract.check_performance`).
    None when nothing gives one; a bad one fails (exit 2, one line)."""
    from ptxopt.equivalence.launch_contract import ContractError, check_performance, resolve_performance

    try:
        launch = resolve_performance(path, contract_file=contract_file, grid=perf.get("perf_grid"),
                                     block=perf.get("perf_block"), shared_bytes=perf.get("perf_shared_bytes"),
                                     scalars=perf.get("perf_scalars") or (), entry=entry, base=base,
                                     ptx_block=_ptx_block(fn, ptx, entry))
        if launch is not None and fn is not None:
            launch = check_performance(launch, fn)
        if perf.get("perf_bytes"):
            launch = _with_bytes(launch, perf["perf_bytes"], fn)
    except ContractError as e:
        fail(f"{path}: {e}" if not str(e).startswith(str(path)) else str(e))
    return launch


def _with_bytes(launch, items, fn):
    """``launch`` with ``footprint_bytes`` the sum of ``--perf-bytes NAME=BYTES`` (the user's counts)."""
    from dataclasses import replace

    from ptxopt.equivalence.launch_contract import ContractError

    if launch is None:
        raise ContractError("--perf-bytes needs a performance launch: give --perf-block X,Y,Z (and --perf-grid)")
    names = set(fn.param_names()) if fn is not None else None
    total = 0
    for item in items:
        name, sep, value = str(item).partition("=")
        name = name.strip()
        try:
            n = int(value.strip(), 0)
        except ValueError:
            n = -1
        if not sep or not name or n < 0:
            raise ContractError(f"--perf-bytes {item!r}: expected NAME=BYTES (a parameter name and a byte count >= 0)")
        if names is not None and name not in names:
            raise ContractError(f"--perf-bytes {name}: the entry has no parameter of that name "
                                f"(parameters: {', '.join(sorted(names)) or 'none'})")
        total += n
    return replace(launch, footprint_bytes=total)


def with_performance(cand, path: str, perf: dict, contract_file: str | None = None):
    """``cand`` with its performance launch: the ``--perf-*`` values in
    ``perf`` over the contract file's ``"performance"`` (a PTX file's own
    ``KERNEL.contract.json`` included), over a corpus kernel's manifest entry.
    Unchanged when nothing gives one beyond the manifest (the evaluator reads
    that itself)."""
    from dataclasses import replace

    from ptxopt.equivalence.launch import performance_of

    given = any(perf.get(k) for k in ("perf_grid", "perf_block", "perf_shared_bytes", "perf_scalars", "perf_bytes"))
    if cand.spec is not None and not given:
        return cand
    base = performance_of(cand.spec) if cand.spec is not None else None
    launch = performance_launch(path if cand.spec is None else f"corpus:{cand.spec.id}", perf,
                                contract_file=contract_file, entry=cand.entry, base=base, ptx=cand.ptx)
    return cand if launch is None else replace(cand, performance=launch)


def with_contract(cand, path: str, contract: dict):
    """``cand`` (a PTX file's :class:`~ptxopt.evaluate.Candidate`) launched under
    its contract: ``contract`` holds the :func:`contract_options` values; the
    file ``path.contract.json`` is used when present. Unchanged when there is
    none (the evaluator then guesses, and says so). Fails (exit 2) on a bad
    contract or one given for a corpus kernel."""
    from dataclasses import replace

    from ptxopt.equivalence.launch_contract import ContractError, resolve_contracts

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
    from ptxopt.evaluate.prepare import original as _original

    module = _original(cand.ptx, cand.label).module
    entries = {f.name: f for f in module.entries}
    entry = cand.entry or next(iter(entries), None)
    c = contracts.for_entry(entry) if entry in entries else None
    if c is None:
        return cand
    names = entries[entry].param_names()
    try:
        c = c.fit(names)
    except ContractError as e:
        fail(f"{cand.label}: {e}")
    return replace(cand, entry=entry, launch=c)


__all__ = ["fail", "check_backend", "json_options", "json_target", "emit_json", "dump_json",
           "check_arch", "check_toolchain", "output_file", "output_dir", "output_file_problem",
           "output_dir_problem", "FiniteFloat", "stdin_once", "fresh_cache_option", "prepare_cache", "report_unsaved",
           "toolchain_problem",
           "backend_option",
           "cache_option", "timeout_option", "trials_option", "prove_option", "objective_option", "arch_option",
           "allow_unchecked_option", "contract_options", "interp_memory_option", "perf_launch_options", "performance_launch", "with_contract", "with_performance"]
