"""A normal (non-editable) install is self-contained: it needs no source checkout.

The fast tests check the lookup (``ptxopt.kernels.corpus.corpus_root`` prefers the
copy a wheel ships) and that setup.cfg's package data covers every file the
quick start reads. The slow test builds the wheel, installs it into a fresh
venv outside the repository and runs the quick start's search from a
temporary directory.
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ptxopt.kernels import corpus

ROOT = Path(__file__).resolve().parents[2]
POLICY = "gemm_elementwise_sm_89"


def _package_data() -> dict[str, list[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {k: v.split() for k, v in cfg["options.package_data"].items()}


def _shipped(rel: str, patterns: list[str]) -> bool:
    """Whether setuptools' package_data globs pick up *rel* (``**`` spans folders)."""
    for pat in patterns:
        if "**/" in pat:
            if fnmatch.fnmatch(rel.rsplit("/", 1)[-1], pat.split("**/", 1)[1]):
                return True
        elif "/" in rel and "/" in pat:
            if fnmatch.fnmatch(rel, pat) and rel.count("/") == pat.count("/"):
                return True
        elif "/" not in rel and fnmatch.fnmatch(rel, pat):
            return True
    return False


def test_package_data_covers_what_the_quick_start_reads():
    data = _package_data()
    shipped = data["ptxopt._corpus"]
    root = corpus.CHECKOUT_CORPUS
    needed = ["manifest.json", f"policies/{POLICY}.pt", "trajectories/greedy_sm_89.jsonl"]
    needed += [k.path for k in corpus.load_manifest(root)]
    missing = [rel for rel in needed if not _shipped(rel, shipped)]
    assert not missing, f"not in the wheel: {missing}"
    assert _shipped("grammar/ptx.lark", data["ptxopt.ptx"])  # the parser's grammar, beside ptxopt/ptx/parser.py
    assert not _shipped("policies/x.grpo_curves.png", shipped)


def test_corpus_root_prefers_the_packaged_copy(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXOPT_CORPUS", raising=False)
    packaged = tmp_path / "_corpus"
    (packaged / "policies").mkdir(parents=True)
    (packaged / "manifest.json").write_text(json.dumps({"schema": 1, "kernels": []}))
    (packaged / "policies" / "p.pt").write_bytes(b"")
    monkeypatch.setattr(corpus, "PACKAGED_CORPUS", packaged)
    assert corpus.corpus_root() == packaged
    assert corpus.committed_policy("p") == packaged / "policies" / "p.pt"
    assert corpus.committed_policy("p.pt") == packaged / "policies" / "p.pt"
    assert corpus.committed_policy("q") is None and corpus.committed_policy("policies/p") is None
    monkeypatch.setenv("PTXOPT_CORPUS", str(tmp_path))
    assert corpus.corpus_root() == tmp_path.resolve()


def test_checkout_is_the_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv("PTXOPT_CORPUS", raising=False)
    monkeypatch.setattr(corpus, "PACKAGED_CORPUS", tmp_path / "absent")
    assert corpus.corpus_root() == corpus.CHECKOUT_CORPUS
    assert corpus.committed_policy(POLICY) == corpus.CHECKOUT_CORPUS / "policies" / f"{POLICY}.pt"


def test_search_policy_by_unknown_name_is_one_line_exit_2():
    from click.testing import CliRunner

    from ptxopt.cli import cli

    r = CliRunner().invoke(cli, ["search", "gemm_tile_2x2x2", "--policy", "no_such_policy"])
    assert r.exit_code == 2
    assert "neither a file nor a committed policy" in r.output and POLICY in r.output


def _copy_source(dst: Path) -> Path:
    """The files a build reads, so that building never writes into the checkout."""
    src = dst / "src"
    src.mkdir()
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "measurements")
    for name in ("ptxopt", "rl", "corpus"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    return src


@pytest.mark.slow
def test_wheel_installs_and_runs_the_quick_start_outside_the_repository(tmp_path):
    """pip wheel -> a fresh venv (no access to the checkout) -> ptxopt search --policy.

    Offline: the venv is made without pip and the wheel installed with
    ``--no-deps`` by this interpreter's pip (``--python``); its dependencies
    (torch, lark, the NVIDIA wheels) come from this interpreter's
    site-packages through a plain path in a ``.pth`` (a plain path, so that the
    editable install there, whose finder would map ``ptxopt`` to a checkout,
    is never activated). The .pth is written after the install so pip never
    sees, let alone touches, the shared environment's ptxopt.
    """
    src = _copy_source(tmp_path)
    wheels = tmp_path / "wheels"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PTXOPT_CORPUS")}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels), str(src)],
                   check=True, env=env, cwd=tmp_path, timeout=300)
    wheel = next(wheels.glob("ptxopt-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=env, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run(pip + ["--python", str(py), "install", "--ignore-installed", "--no-deps", "--no-index", str(wheel)],
                   check=True, env=env, cwd=tmp_path, timeout=300)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True, env=env).stdout.strip())
    (site / "_ptxopt_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = subprocess.run(
        [str(py), "-c", "import ptxopt, ptxopt_rl.train as t, importlib.util as u; "
         "from ptxopt.kernels.corpus import corpus_root, committed_policy;"
         f"print(ptxopt.__file__); print(corpus_root()); print(committed_policy({POLICY!r})); "
         "print(t.DEFAULT_TRAJECTORIES.is_file()); print(u.find_spec('rl') is None)"],
        check=True, capture_output=True, text=True, env=env, cwd=work, timeout=120).stdout.split()
    assert probe[0].startswith(str(site)) and probe[1] == str(site / "ptxopt" / "_corpus")
    installed_policy = site / "ptxopt" / "_corpus" / "policies" / f"{POLICY}.pt"
    assert probe[2] == str(installed_policy) and probe[3] == "True"
    assert probe[4] == "True"  # the learning layer is ptxopt_rl: no top-level "rl" to collide with

    ptxopt = venv / "bin" / "ptxopt"
    for policy in (str(installed_policy), POLICY):  # by the installed path and by name
        r = subprocess.run([str(ptxopt), "search", "gemm_tile_8x8x8,matmul", "--policy", policy, "--samples", "2",
                            "--cache", str(work / "cache.sqlite"), "-q", "--json", str(work / "s.json")],
                           capture_output=True, text=True, env=env, cwd=work, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        report = json.loads((work / "s.json").read_text())
        rows = report["kernels"] if isinstance(report, dict) else report
        assert len(rows) == 6 and not any(row.get("error") for row in rows), rows

    # what a user meets next, from the installed package on a kernel of their own (outside the corpus)
    shutil.copy2(ROOT / "tests" / "data" / "scale_add.ptx", work / "scale_add.ptx")
    r = subprocess.run([str(ptxopt), "run", "scale_add.ptx", "--passes", "vec_lld"], capture_output=True, text=True,
                       env=env, cwd=work, timeout=300)
    assert r.returncode == 2 and "did you mean 'vec_ld'" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = subprocess.run([str(ptxopt), "stats", "scale_add.ptx"], capture_output=True, text=True, env=env, cwd=work,
                       timeout=300)
    assert r.returncode == 0 and "x (u64), y (u64), n (u32), a (f32)" in r.stdout, r.stdout  # the names to use
    r = subprocess.run([str(py), "-c", "import ptxopt; r = ptxopt.optimize(open('scale_add.ptx').read(), "
                        f"policy={POLICY!r}); print(r.verdict.value if hasattr(r.verdict, 'value') else r.verdict)"],
                       capture_output=True, text=True, env=env, cwd=work, timeout=300)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr  # a committed policy by name, from Python too

    # a user's pass, installed: the example package's entry point names it in every pipeline string,
    # and its code enters the front digest of the cache keys
    front = [str(py), "-c", "from ptxopt.passes.registry import code_digests; print(code_digests()['front'])"]
    before = subprocess.run(front, check=True, capture_output=True, text=True, env=env, cwd=work).stdout
    example = ROOT / "examples" / "mul_pow2"
    shutil.copytree(example, tmp_path / "mul_pow2", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                                                    "build"))
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels),
                          str(tmp_path / "mul_pow2")], check=True, env=env, cwd=tmp_path, timeout=300)
    subprocess.run(pip + ["--python", str(py), "install", "--no-deps", "--no-index",
                          str(next(wheels.glob("ptxopt_mul_pow2-*.whl")))], check=True, env=env, cwd=tmp_path,
                   timeout=300)
    after = subprocess.run(front, check=True, capture_output=True, text=True, env=env, cwd=work).stdout
    assert before != after
    r = subprocess.run([str(ptxopt), "run", "-p", "mul_pow2", str(example / "tests" / "scale.ptx")],
                       capture_output=True, text=True, env=env, cwd=work, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (example / "tests" / "scale.expected.ptx").read_text()


def test_optimize_takes_a_policy_by_the_names_the_cli_takes():
    """optimize(policy=) finds a committed policy by name, as search --policy and enable(policy=) do;
    an unknown name is one line listing the committed ones; a pipeline and a policy together are refused."""
    import ptxopt

    ptx = (ROOT / "tests" / "data" / "scale_add.ptx").read_text()
    with pytest.raises(ValueError, match=f"neither a file nor a committed policy.*{POLICY}"):
        ptxopt.optimize(ptx, policy="no_such_policy")
    with pytest.raises(TypeError, match="exactly one"):
        ptxopt.optimize(ptx, "vec_ld", policy=POLICY)
    with pytest.raises(TypeError, match="exactly one"):
        ptxopt.optimize(ptx)
