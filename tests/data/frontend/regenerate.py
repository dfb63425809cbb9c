#!/usr/bin/env python3
"""Regenerate the nvcc-produced PTX of the front-end stress set.

``tests/data/frontend/nvcc/NAME.cu`` lists the builds it wants in its
leading comment, one per line::

    // @variant TAG NVCC-FLAGS...

and each build is written to ``nvcc/NAME.TAG.ptx`` (``--ptx`` is added).
The hand-written PTX under ``hand/`` is not touched.

This is for maintainers only: it needs ``nvcc`` (CUDA 13.0;
``/usr/local/bin/nvcc`` or ``$NVCC``).  The tests read the committed PTX
and never run nvcc.

Every source is compiled from a copy in a fixed directory
(``/tmp/ptxopt-frontend-stress``) so that ``.file`` lines and the
``DW_AT_comp_dir`` bytes of ``-G`` builds do not depend on where the
checkout lives; the output is therefore deterministic for a given nvcc.

Usage::

    python tests/data/frontend/regenerate.py            # all sources
    python tests/data/frontend/regenerate.py atomics    # only some (stem names)
    python tests/data/frontend/regenerate.py --check    # exit 1 if anything would change
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "nvcc"
BUILD_DIR = Path("/tmp/ptxopt-frontend-stress")
VARIANT_RE = re.compile(r"^//\s*@variant\s+(?P<tag>[\w.-]+)\s+(?P<flags>.*?)\s*$", re.M)


def nvcc_path() -> str:
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"
    if not Path(nvcc).exists():
        sys.exit(f"regenerate.py: nvcc not found ({nvcc}); set $NVCC")
    return nvcc


def variants(source: Path) -> list[tuple[str, list[str]]]:
    found = [(m["tag"], shlex.split(m["flags"])) for m in VARIANT_RE.finditer(source.read_text())]
    if not found:
        sys.exit(f"regenerate.py: {source.name} has no '// @variant TAG FLAGS' line")
    return found


def build(nvcc: str, source: Path, tag: str, flags: list[str]) -> str:
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, BUILD_DIR / source.name)
    out = BUILD_DIR / f"{source.stem}.{tag}.ptx"
    argv = [nvcc, "--ptx", *flags, source.name, "-o", out.name]
    run = subprocess.run(argv, cwd=BUILD_DIR, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"regenerate.py: {' '.join(argv)} failed:\n{run.stdout}{run.stderr}")
    return out.read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="source stems to rebuild (default: all)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything would change")
    args = ap.parse_args()

    nvcc = nvcc_path()
    sources = sorted(SOURCES.glob("*.cu"))
    if args.names:
        sources = [s for s in sources if s.stem in args.names]
        missing = set(args.names) - {s.stem for s in sources}
        if missing:
            sys.exit(f"regenerate.py: no such source: {', '.join(sorted(missing))}")

    changed = 0
    for source in sources:
        wanted = set()
        for tag, flags in variants(source):
            target = SOURCES / f"{source.stem}.{tag}.ptx"
            wanted.add(target.name)
            text = build(nvcc, source, tag, flags)
            old = target.read_text() if target.exists() else None
            if old != text:
                changed += 1
                print(f"{'changed' if old is not None else 'added'}: {target.relative_to(HERE)}")
                if not args.check:
                    target.write_text(text)
        for stale in SOURCES.glob(f"{source.stem}.*.ptx"):
            if stale.name not in wanted:
                changed += 1
                print(f"removed: {stale.relative_to(HERE)}")
                if not args.check:
                    stale.unlink()
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
