"""Every command against every kind of failure: the exit code of
:data:`ptxopt.cli.exitcodes.TABLE` and ONE line on stderr (no traceback, no
usage block), refused before any expensive work.

Each row is (command line, exit code, a piece of the one line, stdin). The
command line's ``{name}`` fields are files made once per module (see
:func:`files`) and ``{t}``, the test's own temporary folder; outputs and
caches (``PTXOPT_CACHE``) go there. ``train`` rows write to ``{t}/train_out``
unless they name ``--out``, and must leave it empty: they fail before
behaviour cloning runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_helpers import run_cli
from ptxopt.cli.exitcodes import BAD_INPUT, markdown_table

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "corpus" / "gemm_tile" / "gemm_tile_2x2x2.ptx"
PARAMS = "gemm_tile_2x2x2_param_0"
PAD = "\n" * 8  # blank lines: the printed module drops them, so the user's line numbers are not its
TRAJ = ROOT / "corpus" / "trajectories" / "greedy_sm_89.jsonl"
POLICY = ROOT / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"
E = BAD_INPUT


def row(argv: str, code: int, needle: str, stdin: bytes | None = None, id: str | None = None):
    return pytest.param(argv.split(), code, needle, stdin, id=id or argv)


def _rejected_line(text: str) -> int:
    return text.splitlines().index("\tfma.rn.f32 \t%f12, %f4, %f8, %f99;") + 1


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("edges")
    text = SMALL.read_text()

    def put(name: str, data) -> str:
        p = d / name
        (p.write_bytes if isinstance(data, bytes) else p.write_text)(data)
        return str(p)

    # parses, but ptxas rejects it (%f99 is not declared); PAD moves the lines
    rejected = PAD + text.replace("fma.rn.f32 \t%f12, %f4, %f8, %f12;", "fma.rn.f32 \t%f12, %f4, %f8, %f99;")
    out = {
        "k": str(SMALL),
        "sm999": put("sm999.ptx", text.replace(".target sm_89", ".target sm_999")),
        "v99": put("v99.ptx", text.replace(".version 8.8", ".version 9.9")),
        "rej": put("rejected.ptx", rejected),
        "rej_line": str(_rejected_line(rejected)),
        "foreign": put("foreign.sqlite", "a text file, not an SQLite database\n" * 20),
        "traj_bin": put("traj_bin.jsonl", TRAJ.read_bytes().splitlines(keepends=True)[0] + b"\xff\xfe{}\n"),
    }
    torch = pytest.importorskip("torch")
    doc = torch.load(POLICY, map_location="cpu", weights_only=True)
    bad_names = dict(doc, action_names=5)
    torch.save(bad_names, d / "names.pt")
    state = dict(doc["state_dict"])
    first = next(iter(state))
    state[first] = torch.full_like(state[first], float("nan"))
    torch.save(dict(doc, state_dict=state), d / "nan.pt")
    out.update(ckpt_names=str(d / "names.pt"), ckpt_nan=str(d / "nan.pt"))
    return out


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXOPT_CACHE", str(tmp_path / "eval.sqlite"))


ROWS = [
    # -- missing directories, unsupported targets, unknown kernels, foreign caches
    row("run -p vec_ld {k} -o {t}/missing/out.ptx", E, "no such directory"),
    row("run -p vec_ld {k} --opt-bisect-limit -1", E, "--opt-bisect-limit"),
    row("roundtrip -j -1 {k}", E, "--jobs"),
    row("search {k} --json {t}/missing/x.json", E, "no such directory"),
    row("search {k} --plot {t}/missing/x.png", E, "no such directory"),
    row("search {k} --record {t}/missing/x.jsonl", E, "no such directory"),
    row("search {k} --pipelines-out {t}/missing/x.json", E, "no such directory"),
    *[row(f"{cmd} {{{f}}}", E, needle)
      for cmd in ("compile", "eval", "search")
      for f, needle in (("sm999", "sm999.ptx: "), ("sm999", "sm_999"), ("v99", "v99.ptx: "), ("v99", "9.9"))],
    *[row(f"{cmd} {{k}} --arch sm_xx", E, "sm_xx") for cmd in ("compile", "eval", "search")],
    row("eval {k} --kernel nosuch", E, "no .entry named nosuch"),
    row("search {k} --kernel nosuch", E, "no .entry named nosuch"),
    row("eval corpus:nosuch", E, "nosuch"),
    row("search corpus:nosuch", E, "nosuch"),
    row("eval {k} --cache {foreign}", E, "foreign.sqlite"),
    row("search {k} --cache {foreign}", E, "foreign.sqlite"),
    # -- unwritable outputs, bad option values, '-' twice, bad trajectories and checkpoints
    row("train --out /proc/x", E, "/proc/x"),
    row("train --eval --checkpoint " + str(POLICY) + " --json /proc/x/y.json", E, "/proc/x/y.json",
        id="train --eval --json /proc/x/y.json"),
    row("verify {k} {k} --buffer-bytes -1", E, "--buffer-bytes"),
    row("verify {k} {k} --buffer-bytes 0", E, "--buffer-bytes"),
    row("verify {k} {k} --shared-bytes -1", E, "--shared-bytes"),
    row("verify {k} {k} --grid 1 --block 1 --scalar nosuch=1", E, PARAMS),
    row("verify {k} {k} --scalar nosuch=1", E, PARAMS),
    row("verify {k} {k} --min-coverage nan", E, "--min-coverage"),
    row("verify - -", E, "'-'"),
    row("roundtrip - -", E, "'-'"),
    row("search {k} --policy " + str(POLICY) + " --temperature nan", E, "--temperature",
        id="search --policy --temperature nan"),
    row("eval {k} --timeout nan", E, "--timeout"),
    *[row(f"train --bc-only --{opt} {v}", E, f"--{opt}")
      for opt, v in (("lr", "nan"), ("lr", "-1"), ("lr", "0"), ("clip-eps", "0"), ("clip-eps", "inf"),
                     ("kl-beta", "-1"), ("kl-beta", "nan"), ("explore-temperature", "0"),
                     ("exploit-temperature", "-inf"), ("label-temperature", "nan"))],
    row("train --bc-only --arch sm_xx", E, "sm_xx"),
    row("train --bc-only --backend nosuch", E, "nosuch"),
    row("train --kernels nosuch", E, "nosuch"),
    row("train --bc-only --trajectories - --trajectories -", E, "'-'"),
    row("train --bc-only --trajectories {traj_bin}", E, "traj_bin.jsonl:2"),
    row("train --bc-only --trajectories -", E, "<stdin>:2", stdin=b'\n\xff\xfe\n',
        id="train --trajectories - (not UTF-8)"),
    row("train --bc-only --trajectories -", E, "<stdin>: no trajectory steps", stdin=b"", id="train --trajectories - (empty)"),
    row("train --cache {foreign}", E, "foreign.sqlite"),
    row("train --eval --checkpoint " + str(POLICY) + " --cache {foreign}", E, "foreign.sqlite",
        id="train --eval --cache {foreign}"),
    *[row(argv.replace("CKPT", "{" + ck + "}"), E, needle)
      for ck, needle in (("ckpt_names", "action_names"), ("ckpt_nan", "not finite"))
      for argv in ("search {k} --policy CKPT", "train --checkpoint CKPT", "train --eval --checkpoint CKPT")],
    row("eval {rej}", E, "line {rej_line}:"),
    row("search {rej}", E, "line {rej_line}:"),
    row("run -p vec_ld --verify-each {rej}", E, "line {rej_line}:"),
]


@pytest.mark.parametrize("argv, code, needle, stdin", ROWS)
def test_failure_is_one_line_with_the_documented_code(argv, code, needle, stdin, files, tmp_path):
    args = [a.format(t=tmp_path, **files) for a in argv]
    train_out = tmp_path / "train_out"
    if args[0] == "train" and "--out" not in args:
        args += ["--out", str(train_out)]
    r = run_cli(*args, input=stdin)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == code, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert len(lines) == 1, r.stderr
    assert needle.format(**files) in lines[0]
    if args[0] == "train":  # refused before behaviour cloning: nothing written
        assert not train_out.exists() or not any(train_out.iterdir())


def test_eval_reports_the_users_lines_even_when_the_cache_knows_the_module(files, tmp_path):
    """Two files that differ only in blank lines print the same module, and
    so share the cache's result key: the second must still get its own lines."""
    text = Path(files["rej"]).read_text()
    shorter = tmp_path / "shorter.ptx"
    shorter.write_text(text[len(PAD):])
    assert run_cli("eval", shorter).exit_code == E
    for cmd in ("eval", "search"):
        r = run_cli(cmd, files["rej"])
        assert r.exit_code == E and f"line {files['rej_line']}:" in r.stderr, r.stderr


def test_train_reads_trajectories_from_stdin(tmp_path):
    data = b"".join(TRAJ.read_bytes().splitlines(keepends=True)[:20])
    r = run_cli("train", "--bc-only", "--trajectories", "-", "--bc-epochs", 2, "--out", tmp_path, input=data)
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "bc.pt").exists() and "BC: 20 steps" in r.stdout


def test_readme_prints_the_exit_code_table():
    readme = (ROOT / "README.md").read_text()
    assert markdown_table() in readme
    # and no other table of exit codes beside it
    assert len(re.findall(r"^\| exit \|", readme, flags=re.M)) == 1
