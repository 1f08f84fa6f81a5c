"""The ``te-microbatch-lint`` command: ``check`` and ``fix`` over files and directory trees.

A thin face over the analysis core (docs/CONTRACT.md), in four parts: ``discovery`` finds the
files, ``running`` runs ``analysis.analyze_source`` + ``noqa.filter_noqa`` (check) or
``fixing.fix_source`` (fix) on each, in worker processes when asked, ``formats`` prints the
results in one stable order whatever the number of jobs, and ``command`` is the entry point
(arguments in ``options``). It holds no rule logic. Start-up stays light: the core is imported
only when a file is processed, libcst only by ``fixing`` (guard strategy), flake8 never.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The console script's entry point: ``command.main``, with a Ctrl-C while the modules
    load (start-up) answered as one anywhere else is: one line and exit 130."""
    try:
        from lint_rules.cli.command import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("te-microbatch-lint: interrupted", file=sys.stderr)
        return 130
