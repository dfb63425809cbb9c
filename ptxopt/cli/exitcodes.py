"""The exit-code table: one code per kind of failure, the same in every command.

Before this table each command chose its own code for the same failure
(ptxas rejecting the input was 2 in ``compile`` but 1 in ``eval``; a missing
``--kernel`` was 2 in ``eval`` but 1 in ``search``). Every command now asks
:func:`code_for` (or uses the constants), and :data:`TABLE` is what the
README prints and what ``tests/cli/test_cli_edges.py`` checks every command
against.

When one run meets several kinds of failure (``eval`` of many kernels,
``search`` over a folder) it exits with the code of the most severe kind
present, in the order of :data:`SEVERITY`: the user has to act on bad
input first, then a toolchain that failed on its own (run again: nothing of
it was cached), and a check that failed on good input is still a failure.
"""

from __future__ import annotations

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
INTERNAL = 3
INCONCLUSIVE = 4
TOOLCHAIN = 5
INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process SIGTERM killed

#: kind of failure -> (exit code, what it covers). The README's table.
TABLE: dict[str, tuple[int, str]] = {
    "ok": (OK, "success"),
    "check-failed": (CHECK_FAILED, "a check failed on good input: roundtrip, a verify mismatch, a pass broke a "
                                   "kernel (ptxas rejects run's output), an eval candidate failed, a "
                                   "kernel's search failed"),
    "bad-file": (BAD_INPUT, "an input file is missing, unreadable, not UTF-8, or does not parse"),
    "bad-option": (BAD_INPUT, "an option value that makes no sense (negative sizes, -j -1, --lr nan, two '-')"),
    "ptxas-rejects-input": (BAD_INPUT, "ptxas rejects the original PTX, its .version, its .target or --arch"),
    "no-such-kernel": (BAD_INPUT, "an unknown corpus id, a module without .entry, --kernel that names none"),
    "bad-contract": (BAD_INPUT, "a malformed launch contract"),
    "bad-checkpoint": (BAD_INPUT, "a policy checkpoint or trajectory file that cannot be used"),
    "unusable-cache": (BAD_INPUT, "the evaluation cache cannot be opened, is damaged, or has a newer schema"),
    "output-not-writable": (BAD_INPUT, "-o, --json-out, --plot, --record or --out cannot be written"),
    "output-is-input": (BAD_INPUT, "an output path is an input, the evaluation cache, the move memo, the Triton "
                                   "store or another output (also through a link)"),
    "bad-manifest": (BAD_INPUT, "an apply manifest that is damaged (a field missing, mistyped or too long)"),
    "toolchain-failed": (TOOLCHAIN, "ptxas or nvdisasm was killed by a signal, ran out of memory, hit an internal "
                                    "error (each retried once) or ran past --timeout: nothing was cached, run "
                                    "again"),
    "internal": (INTERNAL, "a bug in ptxopt (PTXOPT_DEBUG=1 shows the traceback)"),
    "inconclusive": (INCONCLUSIVE, "nothing differed, but equivalence was not established"),
    "interrupted": (INTERRUPTED, "Ctrl-C (what had finished is written)"),
    "terminated": (TERMINATED, "SIGTERM (timeout, a batch scheduler, docker stop): handled as Ctrl-C, what had "
                               "finished is written"),
}

#: most severe first: the code a run with several kinds of failure exits with
SEVERITY = (INTERNAL, TERMINATED, INTERRUPTED, BAD_INPUT, TOOLCHAIN, CHECK_FAILED, INCONCLUSIVE, OK)


def result_code(bad_input: bool, status: str | None) -> int:
    """The code of one failed evaluation or kernel: bad input, a transient
    toolchain failure (status ``toolchain``), else a failed check."""
    if bad_input:
        return BAD_INPUT
    return TOOLCHAIN if status == "toolchain" else CHECK_FAILED


def code_for(kind: str) -> int:
    """The exit code of ``kind`` (a key of :data:`TABLE`)."""
    return TABLE[kind][0]


def worst(codes) -> int:
    """The code a run that met every code in ``codes`` exits with (0 for none)."""
    present = set(codes)
    for c in SEVERITY:
        if c in present:
            return c
    return OK


def markdown_table() -> str:
    """:data:`TABLE` as the README's Markdown table."""
    rows = ["| exit | kind of failure | covers |", "|---|---|---|"]
    for kind, (code, what) in sorted(TABLE.items(), key=lambda kv: (kv[1][0], list(TABLE).index(kv[0]))):
        rows.append(f"| {code} | {kind} | {what} |")
    return "\n".join(rows)


__all__ = ["OK", "CHECK_FAILED", "BAD_INPUT", "INTERNAL", "INCONCLUSIVE", "TOOLCHAIN", "INTERRUPTED", "TERMINATED",
           "TABLE", "SEVERITY", "code_for", "result_code", "worst", "markdown_table"]
