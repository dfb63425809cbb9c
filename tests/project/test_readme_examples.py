"""The README's Python examples run as written, so the README cannot drift from the API.

Every ```python block that follows a ``<!-- tested: ... -->`` comment in
README.md is executed, in README order and in one namespace, in a folder
holding ``kernel.ptx``: ``tests/data/scale_add.ptx``, a hand-written kernel
that is not in the corpus (so no manifest entry can supply its launch). The
first block's ``my_compiler.emit_ptx(kernel)`` stands for "another compiler":
here it returns that file's text. What the blocks print is checked against
what their comments promise.

A block that starts with ``# PATH (abridged)`` quotes that file: each of its
lines (comments aside) must be a line of PATH, in the same order, so the
excerpt cannot drift from the code it shows. The Triton blocks are not run
here (they need a model to compile); ``tests/triton/test_triton_hook.py`` covers
that API.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "data" / "scale_add.ptx"
MARK = "<!-- tested:"


def marked_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every ```python block after a ``<!-- tested: ...`` comment
    (only blank lines and the rest of the comment may stand between them)."""
    out = []
    for m in re.finditer(re.escape(MARK), text):
        rest = text[m.start():]
        end = rest.index("-->") + 3
        after = rest[end:]
        fence = re.match(r"\s*```python\n(.*?)\n```", after, re.S)
        assert fence, f"README.md line {text[:m.start()].count(chr(10)) + 1}: a tested mark not followed by a python block"
        line = text[:m.start() + end + fence.start(1)].count("\n") + 1
        out.append((line, fence.group(1)))
    return out


class _Compiler:
    """``my_compiler`` of the README: any compiler that hands over PTX text."""

    def emit_ptx(self, kernel) -> str:
        return KERNEL.read_text()


def test_the_readme_marks_the_python_examples():
    blocks = marked_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2
    assert any("verify(" in code and "launch=" in code for _, code in blocks)


def test_the_kernel_is_outside_the_corpus():
    from ptxopt.equivalence.interpret import LaunchError, verify
    from ptxopt.ptx.parser import parse

    m = parse(KERNEL.read_text(), "scale_add.ptx")
    with pytest.raises(LaunchError):  # what the README's example once did: no launch, no corpus entry
        verify(m, m)


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "kernel.ptx").write_text(KERNEL.read_text())
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "readme", "my_compiler": _Compiler(), "kernel": "scale_add"}
    for line, code in marked_blocks((ROOT / "README.md").read_text()):
        exec(compile(code, f"README.md:{line}", "exec"), ns)
    printed = capsys.readouterr().out.splitlines()
    # the first block: optimize() gives PTX text back
    assert isinstance(ns["faster"], str) and ".entry scale_add" in ns["faster"]
    # the second: the interpreter's verdict under the launch built in Python, then the prover's
    assert "equal" in printed, printed
    assert printed[-1] in ("proved", "inconclusive"), printed
    assert ns["launch"].origin == "contract" and ns["launch"].grid == (4, 1, 1)


def test_the_inferred_launch_the_readme_names_works_too():
    from ptxopt.equivalence.launch_contract import check_launch
    from ptxopt.equivalence.interpret import verify
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.passmanager import PassManager

    m = parse(KERNEL.read_text(), "scale_add.ptx")
    launch = check_launch(m, "scale_add")
    assert launch.origin == "inferred"
    out = PassManager("reorder_cp").run(m).module
    assert verify(m, out, launch=launch).status == "equal"


def _code(line: str) -> str:
    """A line without its trailing comment (two spaces, then ``#``) and trailing blanks."""
    return line.split("  #", 1)[0].rstrip()


def test_abridged_blocks_quote_the_files_they_name():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n# (\S+) \(abridged\)\n(.*?)\n```", text, re.S)
    assert blocks, "the README's 'Write a pass' block names the file it abridges"
    for path, code in blocks:
        source = [_code(ln) for ln in (ROOT / path).read_text().splitlines()]
        at = 0
        for ln in code.splitlines():
            want = _code(ln)
            if not want.strip():
                continue
            assert want in source[at:], f"README.md: {want.strip()!r} is not in {path} (after line {at})"
            at = source.index(want, at) + 1
