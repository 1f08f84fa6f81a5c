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

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `--version` imports nothing else
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["console", "main"]


VERSION_ONLY = (["--version"],)
"""Arguments answered before the command's modules load (``options`` prints the same)."""


def main(argv: Sequence[str] | None = None) -> int:
    """The console script's entry point: ``command.main``, with a Ctrl-C while the modules
    load (start-up) answered as one anywhere else is: one line and exit 130. ``--version``
    alone is answered without loading them."""
    if list(sys.argv[1:] if argv is None else argv) in VERSION_ONLY:
        from lint_rules import __version__

        print(f"te-microbatch-lint {__version__}")
        return 0
    try:
        from lint_rules.cli.command import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("te-microbatch-lint: interrupted", file=sys.stderr)
        return 130


def console() -> None:
    """The console script (and ``python -m lint_rules.cli``): ``main``'s exit code. After a
    signal tore down a process pool (Ctrl-C during ``-j N``), the workers are already ended
    and every file is either as it was or fully fixed (``running._reaped``): the process then
    exits at once, without joining the pool's threads, whose queues a killed worker may have
    left blocked for ever."""
    code = main()
    running = sys.modules.get("lint_rules.cli.running")
    if running is not None and getattr(running, "POOL_INTERRUPTED", False):
        import contextlib
        import os

        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
                stream.flush()
        os._exit(code)
    raise SystemExit(code)
