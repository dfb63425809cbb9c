"""``tools/package_codemod.py`` on a small made-up checkout: what a branch written before the renames
(old module names, flat tests, benchmarks at benchmarks/) looks like after one run, and that a
second run changes nothing (the coordinator re-runs it after every merge)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
CODEMOD = ROOT / "tools" / "package_codemod.py"


def _codemod():
    return load_script("tools/package_codemod.py")


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _checkout(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    _write(r, "ptxopt/__init__.py", '__all__ = ["optimize"]\n')
    _write(r, "ptxopt/search/__init__.py", "")
    _write(r, "ptxopt/search/measure.py", '"""The meter."""\n\nclass Meter:\n    pass\n')
    _write(r, "ptxopt/search/greedy.py", """
        from .measure import Meter


        def go():
            from ptxopt.search import measure

            return measure.Meter, Meter
        """)
    _write(r, "ptxopt/sim/__init__.py", "from ptxopt.sim.decode import decode\n")
    _write(r, "ptxopt/sim/decode.py", "def decode(x):\n    return x\n")
    _write(r, "ptxopt/measure/__init__.py", "")
    _write(r, "ptxopt/measure/sim.py", """
        from ptxopt.sim import decode
        from ptxopt.support.bounded_memo import register

        _M = register("front_end", "search.measure._X", {})
        """)
    _write(r, "tests/test_sim.py", """
        from pathlib import Path

        DATA = Path(__file__).parent / "data"
        ROOT = Path(__file__).resolve().parent.parent
        SCRIPT = ROOT / "benchmarks" / "sim_cost.py"
        """)
    _write(r, "tests/test_brand_new.py", "from ptxopt.search.measure import Meter\n")
    _write(r, "benchmarks/sim_cost.py", """
        import sys
        from pathlib import Path

        ROOT = Path(__file__).resolve().parent.parent
        OUT = Path(__file__).resolve().parent / "results"
        sys.path.insert(0, str(ROOT / "tests"))
        from test_sim import DATA  # noqa: E402
        \"\"\"Run: python benchmarks/sim_cost.py; see tests/test_sim.py.\"\"\"
        """)
    _write(r, "README.md", "Run `python benchmarks/sim_cost.py`; `ptxopt.search.measure` counts.\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "before"]):
        subprocess.run(["git", "-C", str(r), *args], check=True, capture_output=True)
    return r


def _run(repo: Path) -> str:
    p = subprocess.run([sys.executable, str(CODEMOD), str(repo)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_codemod_moves_and_rewrites_then_changes_nothing(tmp_path):
    r = _checkout(tmp_path)
    out = _run(r)
    read = lambda rel: (r / rel).read_text(encoding="utf-8")  # noqa: E731
    # modules renamed, their importers rewritten (relative, inside functions, memo labels, the README stub)
    assert (r / "ptxopt/search/meter.py").is_file() and (r / "ptxopt/sim/sass_decode.py").is_file()
    greedy = read("ptxopt/search/greedy.py")
    assert "from ptxopt.search.meter import Meter" in greedy and "from ptxopt.search import meter as measure" in greedy
    assert "from ptxopt.sim import decode" in read("ptxopt/measure/sim.py")  # the package's function, not the module
    assert '"search.meter._X"' in read("ptxopt/measure/sim.py")
    assert "re-export stub" in read("ptxopt/search/measure.py")  # the README names it
    # tests and benchmarks into their folders, with their paths one level further up
    test = read("tests/sim/test_sim.py")
    assert 'Path(__file__).parents[1] / "data"' in test and "resolve().parents[2]\n" in test
    assert '"benchmarks" / "speed" / "sim_cost.py"' in test
    bench = read("benchmarks/speed/sim_cost.py")
    assert "ROOT = Path(__file__).resolve().parents[2]" in bench
    assert 'Path(__file__).resolve().parents[1] / "results"' in bench
    assert 'str(ROOT / "tests" / "sim")' in bench
    assert "benchmarks/speed/sim_cost.py" in bench and "tests/sim/test_sim.py" in bench
    assert "benchmarks/speed/sim_cost.py" in read("README.md")
    # a test the mapping does not name stays where pytest finds it, its imports rewritten
    assert read("tests/test_brand_new.py") == "from ptxopt.search.meter import Meter\n"
    assert "test_brand_new.py" in out
    # idempotent
    again = _run(r)
    assert "moved 0 modules, rewrote 0 files" in again and "moved 0 test files, rewrote 0 files" in again
    assert "moved 0 benchmark scripts, rewrote 0 files" in again


def test_every_test_and_benchmark_has_one_folder():
    mod = _codemod()
    for folders in (mod.TEST_FOLDERS, mod.BENCH_FOLDERS):
        stems = [s for names in folders.values() for s in names]
        assert len(stems) == len(set(stems))
    assert not set(mod.RENAMES.values()) & set(mod.RENAMES), "a rename chain would need two runs"
