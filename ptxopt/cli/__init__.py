"""The ``ptxopt`` command line: ``ptxopt.cli:main`` (the console script) and ``python -m ptxopt.cli``.

* :mod:`ptxopt.cli.app`           -- the group, its error handling, and the small commands
* :mod:`ptxopt.cli.common`        -- options and checks the commands share
* :mod:`ptxopt.cli.exitcodes`     -- the one exit-code table
* :mod:`ptxopt.cli.eval`, :mod:`ptxopt.cli.search` (+ :mod:`ptxopt.cli.search_report`),
  :mod:`ptxopt.cli.verify` (+ :mod:`ptxopt.cli.prove`) -- the larger commands

``ptxopt train`` comes from the learning layer (:mod:`rl.cli`), through :mod:`ptxopt.plugins`.
"""

from ptxopt.cli.app import cli, main

__all__ = ["cli", "main"]
