#!/usr/bin/env python3
"""Regenerate every PTX file of the ptxopt kernel corpus and its manifest.

This script is for corpus maintainers, not for tests.  It needs:

* nothing extra for ``gemm_tile`` (pure Python, ``gen_gemm_tile.py``);
* ``nvcc`` (CUDA 13.0, ``/usr/local/bin/nvcc`` or ``$NVCC``) for ``cuda/*.cu``;
* ``triton==3.9.0`` importable (``pip install triton==3.9.0``; no GPU needed,
  Triton compiles for a fixed ``GPUTarget("cuda", 89, 32)``) for
  ``triton/*.py``.

The PTX it produces is committed, so the test suite and ptxopt itself never
need nvcc or Triton.  Outputs are deterministic for a given toolchain:
nvcc's PTX carries no paths or dates, Triton is run with line info disabled
(no ``.file``/``.loc`` with absolute paths) and an empty private cache, and
the manifest is written in a fixed order with a fixed layout.

Usage::

    python corpus/regenerate.py                 # everything
    python corpus/regenerate.py gemm_tile cuda  # only some parts (manifest keeps the rest)
    python corpus/regenerate.py --check         # write nothing; exit 1 if anything would change

It prints one line per file that was added, changed or removed, and the
manifest ids that were added, removed or changed.

Per-kernel metadata lives beside each source:

* ``cuda/NAME.cu``: ``@corpus`` lines in the leading comment::

      @corpus family reduction
      @corpus launch grid=4,1,1 block=256,1,1 shared=0
      @corpus param in  input  f32 2048 [range=LO,HI] [init=zero]
      @corpus param n   scalar u32 2048
      @corpus shape n=2048
      @corpus tags shared-memory,syncthreads
      @corpus performance grid=32768,1,1 block=256,1,1 shared=0 in=16777216 partial=32768 n=16777216
      @corpus problem 2^24 f32 elements (64 MiB)

  one ``param`` line per kernel argument, in order (count for buffers,
  value for scalars); ``shared`` is the *dynamic* shared memory in bytes.
  ``performance`` is the launch a user really runs: every argument by name,
  a scalar's value or a buffer's element count at that problem size; and
  ``problem`` says which problem it is.
* ``triton/NAME.py``: a module-level ``CORPUS`` list of dicts (see any file
  there); block = 32 * num_warps and shared bytes come from the compiled
  metadata, and the two trailing scratch pointers Triton 3.9 appends to
  every kernel are recorded as ``scratch`` params. Its ``performance`` dict
  (``grid``, ``scalars`` and buffer ``counts`` by argument name, ``problem``)
  takes the same block and shared bytes as the check launch: both are fixed
  at compile time.

The ``performance`` manifest entry is a launch for the throughput estimate,
never run by the interpreter: it is kept apart from ``launch`` (the small
check launch). Every nvcc and Triton kernel must have one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
MANIFEST = CORPUS / "manifest.json"
ARCH = "sm_89"  # the corpus's target (its committed files and manifest), not ptxopt's DEFAULT_ARCH
SM = 89
BUFFER_ALIGN = 16  # alignment every launcher must give buffers (see README)
NVCC_FLAGS = ["-arch=sm_89", "-O3", "--ptx"]
PARTS = ("gemm_tile", "cuda", "triton", "families")
COMPILER_OF_PART = {"gemm_tile": "ptxopt-gen", "cuda": "nvcc", "triton": "triton"}
FAMILY_OPTIONS: dict = {}  # gen_families.build keyword arguments (its CLI sets them)


def part_of(kernel: dict) -> str:
    """Which part built a manifest entry: generated families live under families/."""
    if kernel["path"].startswith("families/"):
        return "families"
    return next(p for p, c in COMPILER_OF_PART.items() if c == kernel["compiler"])

# corpus/ is not a package; take it off the path again at once, or its
# triton/ and cuda/ folders shadow real packages for whoever imports this
sys.path.insert(0, str(CORPUS))
try:
    import gen_gemm_tile  # noqa: E402
finally:
    sys.path.remove(str(CORPUS))


# --------------------------------------------------------------------------
# small helpers


class Writer:
    """Writes files only when their content changes, and remembers what did."""

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run
        self.changes: list[str] = []

    def write(self, path: Path, text: str) -> None:
        old = path.read_text() if path.exists() else None
        if old == text:
            return
        self.changes.append(f"{'added' if old is None else 'changed'}: {path.relative_to(CORPUS)}")
        if not self.dry_run:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, newline="\n")

    def prune(self, folder: Path, pattern: str, keep: set[Path]) -> None:
        for path in sorted(folder.glob(pattern)):
            if path not in keep:
                self.changes.append(f"removed: {path.relative_to(CORPUS)}")
                if not self.dry_run:
                    path.unlink()


_ENTRY_RE = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)


def ptx_entry_params(ptx: str, entry: str) -> list[str]:
    """The ``.param`` names of *entry*, in order (regex; see tests too)."""
    for name, body in _ENTRY_RE.findall(ptx):
        if name == entry:
            # Each declaration ends with its name (possibly with an array suffix).
            return [re.sub(r"\[.*\]$", "", decl.split()[-1]) for decl in body.split(",") if decl.strip()]
    raise SystemExit(f"entry {entry!r} not found in PTX")


def ptx_version(ptx: str) -> str:
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    if not m:
        raise SystemExit("PTX has no .version directive")
    return m.group(1)


def _number(text: str):
    try:
        return int(text, 0)
    except ValueError:
        return float(text)


def make_param(ptx_name, arg, role, dtype, amount, extra=None) -> dict:
    """One manifest parameter record (see README for the fields)."""
    p = {"name": ptx_name, "arg": arg, "role": role, "dtype": dtype}
    if role == "scalar":
        p["value"] = amount
    else:
        p["count"] = amount
        p["align"] = BUFFER_ALIGN
    for key, val in (extra or {}).items():
        p[key] = val
    return p


MAX_BLOCK_THREADS = 1024  # threads a CUDA block may have (every arch); ptxopt.interp.launcher.MAX_THREADS


def performance_entry(kid: str, grid, block, shared: int, values: dict, problem: str, params: list[dict],
                      div16=()) -> dict:
    """The manifest's ``performance`` launch. ``values`` (by argument name)
    must give every scalar argument its value and every buffer argument its
    element count at that problem size; the output keys both by ``.param``
    name. Scratch buffers (Triton's) get ``bytes_per_cta`` x blocks."""
    if not problem:
        raise SystemExit(f"{kid}: a performance launch needs a 'problem' description")
    grid, block = [int(v) for v in grid], [int(v) for v in block]
    if len(grid) != 3 or len(block) != 3 or min(grid + block) < 1:
        raise SystemExit(f"{kid}: performance grid and block need 3 positive sizes each")
    if block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
        raise SystemExit(f"{kid}: performance block {block} has more than {MAX_BLOCK_THREADS} threads")
    given = {p["arg"]: p for p in params if p["role"] != "scratch"}
    if set(values) != set(given):
        raise SystemExit(f"{kid}: performance values {sorted(values)} != arguments {sorted(given)} "
                         "(every scalar's value and every buffer's element count)")
    for arg in div16:
        if given[arg]["role"] == "scalar" and values[arg] % 16:
            raise SystemExit(f"{kid}: performance {arg}={values[arg]} breaks its compiled 16-divisibility")
    for arg, p in given.items():
        if p["role"] != "scalar" and (not isinstance(values[arg], int) or values[arg] < 1):
            raise SystemExit(f"{kid}: performance count {arg}={values[arg]!r} is not a positive integer")
    blocks = grid[0] * grid[1] * grid[2]
    counts = {p["name"]: (values[p["arg"]] if p["role"] != "scratch" else p["bytes_per_cta"] * blocks)
              for p in params if p["role"] != "scalar"}
    return {"grid": grid, "block": block, "shared_bytes": int(shared),
            "scalars": {p["name"]: values[a] for a, p in given.items() if p["role"] == "scalar"},
            "counts": counts, "problem": problem}


def attach_ptx_names(kid: str, declared: list[dict], ptx_names: list[str]) -> list[dict]:
    if len(declared) != len(ptx_names):
        raise SystemExit(f"{kid}: metadata has {len(declared)} params, PTX has {len(ptx_names)}")
    return [{**p, "name": name} for p, name in zip(declared, ptx_names)]


# --------------------------------------------------------------------------
# gemm_tile


def build_gemm(writer: Writer) -> list[dict]:
    out_dir = CORPUS / "gemm_tile"
    kernels, keep = [], set()
    for m, n, k in gen_gemm_tile.default_shapes():
        name = gen_gemm_tile.kernel_name(m, n, k)
        path = out_dir / f"{name}.ptx"
        text = gen_gemm_tile.gemm_tile_ptx(m, n, k)
        writer.write(path, text)
        keep.add(path)
        pa, pb, pc = gen_gemm_tile.param_names(m, n, k)
        kernels.append({
            "id": name,
            "family": "gemm_tile",
            "compiler": "ptxopt-gen",
            "path": f"gemm_tile/{name}.ptx",
            "entry": name,
            "source": "gen_gemm_tile.py",
            "generator": f"gen_gemm_tile.py m={m} n={n} k={k}",
            "arch": gen_gemm_tile.TARGET,
            "ptx_version": gen_gemm_tile.PTX_VERSION,
            "launch": {"grid": [1, 1, 1], "block": [1, 1, 1], "shared_bytes": 0},
            "params": [
                make_param(pa, "A", "input", "f32", m * k),
                make_param(pb, "B", "input", "f32", k * n),
                make_param(pc, "C", "output", "f32", m * n),
            ],
            "shape": {"m": m, "n": n, "k": k},
            "tags": ["single-thread", "unrolled"],
        })
    writer.prune(out_dir, "*.ptx", keep)
    return kernels


# --------------------------------------------------------------------------
# cuda (nvcc)


def parse_cu_metadata(path: Path) -> dict:
    """Parse the ``@corpus`` lines of a .cu file (format in the docstring)."""
    meta = {"params": [], "shape": {}, "tags": []}
    for raw in path.read_text().splitlines():
        line = raw.strip().lstrip("/*").strip()
        if not line.startswith("@corpus "):
            continue
        key, _, rest = line[len("@corpus "):].partition(" ")
        words = rest.split()
        if key == "family":
            meta["family"] = words[0]
        elif key == "launch":
            kv = dict(w.split("=", 1) for w in words)
            meta["launch"] = {
                "grid": [int(x) for x in kv["grid"].split(",")],
                "block": [int(x) for x in kv["block"].split(",")],
                "shared_bytes": int(kv.get("shared", 0)),
            }
        elif key == "param":
            arg, role, dtype, amount, *opts = words
            extra = {}
            for opt in opts:
                k, v = opt.split("=", 1)
                extra[k] = [_number(x) for x in v.split(",")] if k == "range" else v
            meta["params"].append(make_param(None, arg, role, dtype, _number(amount), extra))
        elif key == "shape":
            meta["shape"] = {k: _number(v) for k, v in (w.split("=", 1) for w in words)}
        elif key == "tags":
            meta["tags"] = [t for t in rest.replace(" ", "").split(",") if t]
        elif key == "performance":
            kv = dict(w.split("=", 1) for w in words)
            meta["performance"] = {
                "grid": [int(x) for x in kv.pop("grid").split(",")],
                "block": [int(x) for x in kv.pop("block").split(",")],
                "shared": int(kv.pop("shared", 0)),
                "values": {k: _number(v) for k, v in kv.items()},
            }
        elif key == "problem":
            meta["problem"] = rest.strip()
        else:
            raise SystemExit(f"{path.name}: unknown @corpus key {key!r}")
    for required in ("family", "launch"):
        if required not in meta:
            raise SystemExit(f"{path.name}: missing '@corpus {required}'")
    return meta


def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], check=True, capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def build_cuda(writer: Writer) -> list[dict]:
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"
    version = nvcc_version(nvcc)
    src_dir = CORPUS / "cuda"
    kernels, keep = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for cu in sorted(src_dir.glob("*.cu")):
            name = cu.stem
            tmp_ptx = Path(tmp) / f"{name}.ptx"
            # Relative paths and cwd=src_dir keep the output free of local paths.
            subprocess.run([nvcc, *NVCC_FLAGS, "-o", str(tmp_ptx), cu.name], cwd=src_dir, check=True)
            ptx = tmp_ptx.read_text()
            path = src_dir / f"{name}.ptx"
            writer.write(path, ptx)
            keep.add(path)
            meta = parse_cu_metadata(cu)
            kid = f"cuda_{name}"
            params = attach_ptx_names(kid, meta["params"], ptx_entry_params(ptx, name))
            if "performance" not in meta:
                raise SystemExit(f"{cu.name}: missing '@corpus performance' (the launch a user runs)")
            perf = meta["performance"]
            kernels.append({
                "id": kid,
                "family": meta["family"],
                "compiler": "nvcc",
                "path": f"cuda/{name}.ptx",
                "entry": name,
                "source": f"cuda/{cu.name}",
                "generator": f"nvcc {version} {' '.join(NVCC_FLAGS)}",
                "arch": ARCH,
                "ptx_version": ptx_version(ptx),
                "launch": meta["launch"],
                "performance": performance_entry(kid, perf["grid"], perf["block"], perf["shared"],
                                                 perf["values"], meta.get("problem", ""), params),
                "params": params,
                "shape": meta["shape"],
                "tags": meta["tags"],
            })
    writer.prune(src_dir, "*.ptx", keep)
    return kernels


# --------------------------------------------------------------------------
# triton

_TT_PTR = {"f32": "*fp32", "f16": "*fp16", "bf16": "*bf16", "s32": "*i32", "u32": "*u32",
           "s64": "*i64", "u8": "*u8", "s8": "*i8"}
_TT_SCALAR = {"f32": "fp32", "s32": "i32", "u32": "u32", "s64": "i64"}


def _load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"ptxopt_corpus_triton_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def triton_session():
    """``(triton, ASTSource, target)`` for reproducible compiles. Set before
    triton is imported: no line info (it embeds absolute source paths), FP
    fusion explicit (3.9 warns about its default changing), and a private,
    empty cache so nothing stale is reused."""
    cache = tempfile.mkdtemp(prefix="ptxopt-triton-cache-")
    os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
    os.environ["TRITON_DEFAULT_FP_FUSION"] = "1"
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        yield triton, ASTSource, GPUTarget("cuda", SM, 32)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def build_triton(writer: Writer) -> list[dict]:
    with triton_session() as (triton, ASTSource, target):
        src_dir = CORPUS / "triton"
        kernels, keep = [], set()
        for py in sorted(src_dir.glob("*.py")):
            for spec in _load_module(py).CORPUS:
                kernels.append(_compile_triton(triton, ASTSource, target, py, spec, writer, keep))
        writer.prune(src_dir, "*.ptx", keep)
        return kernels


def build_families(writer: Writer) -> list[dict]:
    """The generated parametric families (``gen_families.py``)."""
    sys.path.insert(0, str(CORPUS))
    try:
        import gen_families
    finally:
        sys.path.remove(str(CORPUS))
    return gen_families.build(writer, sys.modules[__name__], **FAMILY_OPTIONS)


def _compile_triton(triton, ASTSource, target, py: Path, spec: dict, writer: Writer, keep: set,
                    out_dir: Path | None = None) -> dict:
    """Compile one ``CORPUS`` dict of *py* into ``out_dir`` (default: beside
    *py*) and return its manifest entry."""
    fn = spec["kernel"]
    name = spec["name"]
    constexprs = dict(spec.get("constexprs", {}))
    num_warps = spec.get("num_warps", 4)
    num_stages = spec.get("num_stages", 3)
    divisibility = spec.get("divisibility", True)

    declared, signature, attrs, div16 = [], {}, {}, []
    user_args = [a for a in fn.arg_names if a not in constexprs]
    if [p[0] for p in spec["params"]] != user_args:
        raise SystemExit(f"{py.name}:{name}: params {[p[0] for p in spec['params']]} != args {user_args}")
    for index, (arg, role, dtype, amount, *rest) in enumerate(spec["params"]):
        extra = rest[0] if rest else {}
        declared.append(make_param(None, arg, role, dtype, amount, extra))
        is_ptr = role != "scalar"
        signature[arg] = (_TT_PTR if is_ptr else _TT_SCALAR)[dtype]
        # Mirror the JIT's specialisation: 16-byte-aligned pointers and
        # integer scalars that are multiples of 16 get tt.divisibility=16.
        if divisibility and (is_ptr or (isinstance(amount, int) and amount % 16 == 0)):
            attrs[(fn.arg_names.index(arg),)] = [["tt.divisibility", 16]]
            div16.append(arg)
        if not is_ptr and isinstance(amount, int) and amount == 1:
            raise SystemExit(f"{py.name}:{name}: scalar {arg}=1 would be specialised away by the JIT")
    for arg in constexprs:
        signature[arg] = "constexpr"
    signature = {a: signature[a] for a in fn.arg_names}  # argument order

    compiled = triton.compile(
        ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs),
        target=target,
        options={"num_warps": num_warps, "num_stages": num_stages},
    )
    md = compiled.metadata
    ptx = compiled.asm["ptx"]
    entry = md.name
    path = (out_dir or py.parent) / f"{name}.ptx"
    writer.write(path, ptx)
    keep.add(path)

    grid = list(spec["grid"])
    n_programs = grid[0] * grid[1] * grid[2] * md.num_ctas
    for arg, size, align in (("global_scratch", md.global_scratch_size, md.global_scratch_align),
                             ("profile_scratch", md.profile_scratch_size, md.profile_scratch_align)):
        declared.append({"name": None, "arg": arg, "role": "scratch", "dtype": "u8",
                         "count": size * n_programs, "align": max(align, 1),
                         "bytes": size * n_programs, "bytes_per_cta": size, "nullable": size == 0})
    kid = f"triton_{name}"
    params = attach_ptx_names(kid, declared, ptx_entry_params(ptx, entry))
    perf = spec.get("performance")
    if perf is None:
        raise SystemExit(f"{py.name}:{name}: missing 'performance' (the launch a user runs)")
    options = f"num_warps={num_warps} num_stages={num_stages}"
    consts = " ".join(f"{k}={v}" for k, v in constexprs.items())
    return {
        "id": kid,
        "family": spec["family"],
        "compiler": "triton",
        "path": path.relative_to(CORPUS).as_posix(),
        "entry": entry,
        "source": py.relative_to(CORPUS).as_posix(),
        "generator": f"triton {triton.__version__} {options} {consts}".strip(),
        "arch": ARCH,
        "ptx_version": ptx_version(ptx),
        "launch": {"grid": grid, "block": [32 * num_warps, 1, 1], "shared_bytes": md.shared},
        "performance": performance_entry(kid, perf["grid"], [32 * num_warps, 1, 1], md.shared,
                                         {**perf["scalars"], **perf["counts"]}, perf.get("problem", ""),
                                         params, div16),
        "params": params,
        "shape": dict(spec.get("shape", {})),
        "tags": list(spec.get("tags", [])),
        "triton": {"num_warps": num_warps, "num_stages": num_stages, "constexprs": constexprs,
                   "divisible_by_16": div16},
    }


# --------------------------------------------------------------------------
# manifest


def manifest_text(kernels: list[dict]) -> str:
    """Stable, diff-friendly JSON: one key per line, params one per line."""
    lines = ['{"schema": 1, "kernels": [']
    for i, kern in enumerate(kernels):
        fields = []
        for key, val in kern.items():
            if key == "params":
                body = ",\n".join(f"    {json.dumps(p)}" for p in val)
                fields.append(f'   "params": [\n{body}\n   ]')
            else:
                fields.append(f"   {json.dumps(key)}: {json.dumps(val)}")
        lines.append("  {\n" + ",\n".join(fields) + "\n  }" + ("," if i + 1 < len(kernels) else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Regenerate the ptxopt PTX corpus (needs nvcc and triton).")
    ap.add_argument("parts", nargs="*", metavar="PART", help=f"any of {', '.join(PARTS)} (default: all)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything would change")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        ap.error(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    parts = args.parts or list(PARTS)
    writer = Writer(dry_run=args.check)

    old = json.loads(MANIFEST.read_text())["kernels"] if MANIFEST.exists() else []
    builders = {"gemm_tile": build_gemm, "cuda": build_cuda, "triton": build_triton, "families": build_families}
    kernels = []
    for part in PARTS:
        if part in parts:
            kernels += builders[part](writer)
        else:  # keep the previous manifest entries of parts not rebuilt
            kernels += [k for k in old if part_of(k) == part]

    ids = [k["id"] for k in kernels]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SystemExit(f"duplicate kernel ids: {dupes}")
    writer.write(MANIFEST, manifest_text(kernels))

    old_by_id = {k["id"]: k for k in old}
    new_by_id = {k["id"]: k for k in kernels}
    for kid in new_by_id:
        if kid not in old_by_id:
            writer.changes.append(f"manifest: + {kid}")
        elif old_by_id[kid] != new_by_id[kid]:
            writer.changes.append(f"manifest: ~ {kid}")
    writer.changes += [f"manifest: - {kid}" for kid in old_by_id if kid not in new_by_id]

    for line in writer.changes:
        print(line)
    counts = {c: sum(k["compiler"] == c for k in kernels) for c in ("ptxopt-gen", "nvcc", "triton")}
    counts["of them generated families"] = sum(part_of(k) == "families" for k in kernels)
    print(f"{len(kernels)} kernels ({', '.join(f'{v} {c}' for c, v in counts.items())}); "
          f"{len(writer.changes)} change(s){' (check only, nothing written)' if args.check else ''}")
    return 1 if args.check and writer.changes else 0


if __name__ == "__main__":
    sys.exit(main())
