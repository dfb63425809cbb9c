"""Front-end stress set: PTX far outside the kernel corpus.

``tests/data/frontend/`` holds

* ``nvcc/NAME.TAG.ptx`` -- nvcc 13.0 output for ``nvcc/NAME.cu`` built as
  its ``// @variant TAG FLAGS`` lines say (regenerate with
  ``tests/data/frontend/regenerate.py``): out-of-line calls, function
  pointers, printf, ``-G`` and ``-lineinfo`` builds, inline asm, module
  data, textures, atomics, warp intrinsics, fp16/bf16/fp8, tensor cores,
  cp.async, cooperative groups, launch bounds, cache hints, f64/int64,
  sm_90a clusters/TMA/wgmma, ``-rdc`` linkage, local memory;
* ``hand/*.ptx`` -- hand-written PTX for syntax nvcc never prints but the
  ISA allows and ptxas accepts (literal forms, address forms, sinks,
  predicate pairs, scopes, comments, data initialisers, ...).

For every file ``x`` (with ``m = parse(x)``):

* ``test_round_trip``: (a) ``parse(emit(m)) == m``;
* ``test_printing_is_deterministic_and_idempotent``: (c) ``emit`` gives the
  same text twice and ``emit(parse(emit(m))) == emit(m)``;
* ``test_sass_identical``: (b) ptxas compiles ``emit(m)`` to the same
  normalised SASS (:func:`ptxopt.toolchain.sass_text`) as ``x``, for sm_89
  and sm_90 (sm_90a for modules whose ``.target`` is sm_90a: ptxas refuses
  to build those for plain sm_90).  A file/arch pair is skipped only when
  ptxas rejects the *original* for that arch (the reason says why, e.g. a
  ``.target sm_90`` module for sm_89).  Modules built with ``-rdc=true``
  are assembled with ``ptxas -c``, as nvcc does, since they reference
  externals; a hand-written file can ask for ptxas options with a
  ``// @ptxas-args ARGS`` line.

Known front-end failures are listed in :data:`XFAIL` (strict: a fix makes
the test fail until the entry is removed), each with its reproducer.
"""

from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path

import pytest

from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.toolchain import ToolchainError, compile_ptx, sass_text

DATA = Path(__file__).resolve().parents[1] / "data" / "frontend"
FILES = sorted(DATA.glob("*/*.ptx"))

_TARGET_RE = re.compile(r"^[ \t]*\.target[ \t]+([^\n/]*)", re.M)
_VARIANT_RE = re.compile(r"^//\s*@variant\s+(?P<tag>[\w.-]+)\s+(?P<flags>.*?)\s*$", re.M)
_PTXAS_ARGS_RE = re.compile(r"^//\s*@ptxas-args\s+(?P<args>.*?)\s*$", re.M)

_EXPR = "PTX constant expressions are not in the grammar"

#: file id -> (checks that fail, reason naming the reproducer).  Checks:
#: "parse" makes every test of the file fail (it cannot be parsed);
#: "sass" only the SASS comparison.
XFAIL: dict[str, tuple[str, str]] = {}


def file_id(path: Path) -> str:
    """``nvcc/atomics.sm89``, ``hand/literals``: the path under DATA, no suffix."""
    return path.relative_to(DATA).with_suffix("").as_posix()


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def sass_archs(text: str) -> tuple[str, str]:
    """sm_89 and the sm_90 flavour the module can be built for."""
    m = _TARGET_RE.search(text)
    targets = {t.strip() for t in m.group(1).split(",")} if m else set()
    return ("sm_89", "sm_90a" if "sm_90a" in targets else "sm_90")


def ptxas_args(path: Path) -> tuple[str, ...]:
    """``-c`` for nvcc builds made with relocatable device code; for
    hand-written files, what a ``// @ptxas-args ARGS`` line asks for."""
    if path.parent.name != "nvcc":
        m = _PTXAS_ARGS_RE.search(read(path))
        return tuple(shlex.split(m["args"])) if m else ()
    stem, tag = path.stem.split(".", 1)
    source = path.with_name(stem + ".cu")
    for m in _VARIANT_RE.finditer(read(source)):
        if m["tag"] == tag:
            flags = shlex.split(m["flags"])
            rdc = any(f in ("-rdc=true", "--relocatable-device-code=true", "-dc") for f in flags)
            return ("-c",) if rdc else ()
    raise AssertionError(f"{source.name} has no '@variant {tag}' line for {path.name}")


def _marks(fid: str, check: str) -> list:
    entry = XFAIL.get(fid)
    if entry and (entry[0] == "parse" or entry[0] == check):
        return [pytest.mark.xfail(strict=True, reason=entry[1])]
    return []


def _params(check: str):
    return [pytest.param(p, id=file_id(p), marks=_marks(file_id(p), check)) for p in FILES]


def _sass_params():
    out = []
    for p in FILES:
        fid = file_id(p)
        for arch in sass_archs(read(p)):
            out.append(pytest.param(p, arch, id=f"{fid}-{arch}", marks=_marks(fid, "sass")))
    return out


# -- the data set itself ------------------------------------------------------


def test_stress_set_is_present():
    ids = {file_id(p) for p in FILES}
    assert len([i for i in ids if i.startswith("nvcc/")]) >= 20
    assert len([i for i in ids if i.startswith("hand/")]) >= 10
    assert set(XFAIL) <= ids, f"XFAIL names missing files: {sorted(set(XFAIL) - ids)}"


@pytest.mark.parametrize("source", sorted((DATA / "nvcc").glob("*.cu")), ids=lambda p: p.stem)
def test_every_nvcc_variant_is_committed(source):
    tags = [m["tag"] for m in _VARIANT_RE.finditer(read(source))]
    assert tags, f"{source.name}: no '// @variant TAG FLAGS' line"
    for tag in tags:
        assert source.with_name(f"{source.stem}.{tag}.ptx").exists(), f"run regenerate.py ({source.stem}.{tag})"


# -- (a), (c) -----------------------------------------------------------------


@pytest.mark.parametrize("path", _params("round_trip"))
def test_round_trip(path):
    m = parse(read(path), path.name)
    assert parse(emit(m), path.name + " (printed)") == m


@pytest.mark.parametrize("path", _params("idempotent"))
def test_printing_is_deterministic_and_idempotent(path):
    m = parse(read(path), path.name)
    printed = emit(m)
    assert emit(m) == printed
    assert emit(parse(read(path), path.name)) == printed
    assert emit(parse(printed, path.name + " (printed)")) == printed


# -- (b) ----------------------------------------------------------------------


@pytest.mark.parametrize("path,arch", _sass_params())
def test_sass_identical(path, arch):
    text = read(path)
    args = ptxas_args(path)
    try:
        ref = compile_ptx(text, arch, extra_args=args)
    except ToolchainError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        pytest.skip(f"ptxas rejects the original {path.name} for {arch}: {first}")
    printed = emit(parse(text, path.name))
    try:
        new = compile_ptx(printed, arch, extra_args=args)
    except ToolchainError as e:
        pytest.fail(f"ptxas accepts {path.name} but rejects the printed PTX for {arch}: {e}")
    if new.cubin == ref.cubin:  # byte-identical cubins need no disassembly
        return
    want, got = sass_text(ref.cubin), sass_text(new.cubin)
    if want != got:
        diff = "".join(list(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), "original", "printed", n=1))[:60])
        pytest.fail(f"SASS differs for {arch}:\n{diff}")
