"""``ptxopt verify ORIGINAL TRANSFORMED``: are two kernels equivalent?

Runs both through the interpreter on identical inputs (see
:mod:`ptxopt.verify`) and exits 0 when every buffer matches bit for bit, 1 on
a mismatch (the first differing buffer element and both values are printed),
2 on an error: unreadable input, PTX that does not parse, a kernel the
interpreter cannot run, or one that faults (a fault of the transformed kernel
alone is reported as "transformed kernel faults", since it shows the two are
not equivalent).

Geometry: from the manifest when ORIGINAL is ``corpus:ID``, when
``--manifest-entry ID`` is given, or when the kernel's name and parameter
names match exactly one manifest entry; otherwise ``--grid``/``--block`` (and
``--shared-bytes``) are required, every 64-bit parameter gets a buffer of
``--buffer-bytes`` random float32 values, and 32-bit scalars take
``--scalar NAME=VALUE`` or default to the launch's thread count (integers)
or 1.0 (floats).
"""

from __future__ import annotations

import json
import sys

import click

from ptxopt.inputs import InputError, read_one
from ptxopt.parser import ParseError, parse_bytes

EXIT_EQUAL, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


def _dim3(text: str | None, what: str):
    if text is None:
        return None
    try:
        parts = [int(x) for x in text.replace("x", ",").split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{what} must be X[,Y[,Z]] integers, got {text!r}") from None
    if not 1 <= len(parts) <= 3 or any(p < 1 for p in parts):
        raise click.BadParameter(f"{what} must be 1 to 3 positive integers, got {text!r}")
    return tuple(parts + [1] * (3 - len(parts)))


def _scalars(items) -> dict:
    out = {}
    for it in items:
        name, eq, value = it.partition("=")
        if not eq:
            raise click.BadParameter(f"--scalar wants NAME=VALUE, got {it!r}")
        try:
            out[name] = int(value, 0)
        except ValueError:
            try:
                out[name] = float(value)
            except ValueError:
                raise click.BadParameter(f"--scalar {name}: {value!r} is not a number") from None
    return out


@click.command("verify")
@click.argument("original")
@click.argument("transformed")
@click.option("--kernel", default=None, help="Kernel entry to compare (default: the only one).")
@click.option("--seed", default=0, show_default=True, type=int, help="Base seed for the inputs.")
@click.option("--trials", default=4, show_default=True, type=click.IntRange(1, 1000),
              help="Launches per seed; they cycle through random, edge and multi-scale inputs "
                   "and lockstep, warp-serial and reversed warp-serial schedules.")
@click.option("--manifest-entry", default=None, metavar="ID",
              help="Take geometry and arguments from this corpus kernel's manifest entry.")
@click.option("--grid", default=None, metavar="X,Y,Z", help="Grid size (kernels outside the corpus).")
@click.option("--block", default=None, metavar="X,Y,Z", help="Block size (kernels outside the corpus).")
@click.option("--shared-bytes", default=0, show_default=True, type=int,
              help="Dynamic shared memory (kernels outside the corpus).")
@click.option("--buffer-bytes", default=65536, show_default=True, type=int,
              help="Bytes per pointer argument (kernels outside the corpus).")
@click.option("--scalar", "scalars", multiple=True, metavar="NAME=VALUE",
              help="Value of a scalar parameter (kernels outside the corpus); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify_cmd(original, transformed, kernel, seed, trials, manifest_entry, grid, block, shared_bytes,
               buffer_bytes, scalars, as_json):
    """Check that TRANSFORMED computes exactly what ORIGINAL does (files or corpus:ID).

    Both run in the PTX interpreter on the same inputs; every buffer is
    compared bit for bit. Exit 0: equivalent; 1: a mismatch (the first
    differing element is printed); 2: an error (unreadable or unparsable
    input, a fault, an unsupported instruction, no launch geometry).
    """
    from ptxopt.corpus import CorpusError
    from ptxopt.interp import InterpError
    from ptxopt.verify import verify

    try:
        src_o = read_one(original)
        src_t = read_one(transformed)
        mod_o = parse_bytes(src_o.data, src_o.name)
        mod_t = parse_bytes(src_t.data, src_t.name)
        spec, geometry = _geometry(src_o.name, manifest_entry, grid, block, shared_bytes, buffer_bytes,
                                   scalars)
        result = verify(mod_o, mod_t, kernel, seeds=(seed,), trials=trials, spec=spec, geometry=geometry)
    except ParseError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_ERROR)
    except (InputError, CorpusError, InterpError) as e:
        click.echo(f"ptxopt: error: {e}", err=True)
        sys.exit(EXIT_ERROR)
    if as_json:
        click.echo(json.dumps({"original": src_o.name, "transformed": src_t.name, **result.to_json()},
                              indent=2))
    else:
        _print(src_o.name, src_t.name, result)
    if result.status == "equal":
        sys.exit(EXIT_EQUAL)
    if result.status == "mismatch":
        sys.exit(EXIT_MISMATCH)
    sys.exit(EXIT_ERROR)


def _geometry(orig_name, manifest_entry, grid, block, shared_bytes, buffer_bytes, scalars):
    from ptxopt.corpus import get
    from ptxopt.verify import Geometry

    if manifest_entry:
        return get(manifest_entry), None
    g, b = _dim3(grid, "--grid"), _dim3(block, "--block")
    if g is None and b is None and orig_name.startswith("corpus:"):
        return get(orig_name[len("corpus:"):]), None
    if g is None and b is None:
        return None, None  # verify() looks for a manifest entry with this kernel's signature
    if g is None or b is None:
        raise InputError(f"{orig_name}: give both --grid and --block")
    return None, Geometry(g, b, shared_bytes, buffer_bytes, _scalars(scalars))


def _print(orig, trans, r) -> None:
    where = f"kernel {r.kernel}, grid {r.grid}, block {r.block}, {r.trials} launch" + \
        ("es" if r.trials != 1 else "")
    if r.status == "equal":
        click.echo(f"{trans}: equivalent to {orig} ({where})")
        return
    if r.status == "mismatch":
        m = r.mismatch
        click.echo(f"{trans}: NOT equivalent to {orig} ({where})")
        click.echo(f"  first difference: {m.buffer}[{m.index}] (seed {m.seed}, {m.flavour} inputs, "
                   f"{m.schedule} schedule): original {m.original}, transformed {m.transformed}")
        click.echo(f"  {m.differing} of {m.size} elements of {m.buffer} differ")
        return
    verb = "faults" if r.error_kind == "fault" else "fails"
    click.echo(f"ptxopt: error: transformed kernel {verb} (the original does not): {r.error}", err=True)
