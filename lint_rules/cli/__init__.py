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
    load (start-up) answered as one anywhere else is: one line and exit 130; output that
    cannot be written (a closed pipe, a full disk), during the run or at its last flush,
    answered here once. ``--version`` alone is answered without loading them."""
    if list(sys.argv[1:] if argv is None else argv) in VERSION_ONLY:
        from lint_rules import __version__

        print(f"te-microbatch-lint {__version__}")
        return 0
    try:
        from lint_rules.cli.command import main as run

        return _output_written(run(argv))
    except KeyboardInterrupt:
        print("te-microbatch-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head`: stop quietly with 0, as ruff (and ripgrep) do
        _quiet_stdout()
        return 0
    except OSError as error:  # the output cannot be written (a full disk): one line, exit 2
        _quiet_stdout()
        print(
            f"te-microbatch-lint: error: cannot write: {error.strerror or error}", file=sys.stderr
        )
        return 2


def _output_written(code: int) -> int:
    """``code``, once what the command printed is written (a full disk or a closed pipe says
    so here, not in a traceback at exit)."""
    stdout = sys.stdout
    if stdout is not None and not getattr(stdout, "closed", False):
        stdout.flush()
    return code


def _quiet_stdout() -> None:
    """Standard output sent to the null device: what is left in its buffer is dropped, so the
    exit does not fail again on it."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def console() -> None:
    """The console script (and ``python -m lint_rules.cli``): ``main``'s exit code, then
    ``_leave``. After a signal tore down a process pool (Ctrl-C during ``-j N``), the workers
    are already ended and every file is either as it was or fully fixed (``running._reaped``):
    the process then exits at once, without joining the pool's threads, whose queues a killed
    worker may have left blocked for ever."""
    code = main()
    running = sys.modules.get("lint_rules.cli.running")
    if running is not None and getattr(running, "POOL_INTERRUPTED", False):
        _flushed()
        _hard_exit(code)
    _leave(code)


def _flushed() -> bool:
    """Flush standard output and error; whether both were flushed (a closed pipe, a closed
    stream: not)."""
    import contextlib

    done = True
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
            continue
        done = False
    return done


def _hard_exit(code: int) -> None:
    import os

    os._exit(code)


def _leave(code: int) -> None:
    """Exit with ``code`` without tearing the interpreter down: the exit handlers run (those
    of ``atexit``: the pool's finalizers, coverage, logging) and the output is flushed, but the
    run's objects (every parsed tree, the index, the modules) are not freed one by one, which
    costs a cold run over megatron-core about 5% of its CPU. As mypy does. Where the normal
    exit has more to do, it is taken as it is: a thread other than the main one still running
    (it would be joined), output that cannot be flushed (Python reports that itself), or a
    profiler or tracer watching (``python -m cProfile`` writes its profile after the exit).
    ``threading`` is not imported for it: a run that never imported it started no thread that
    the normal exit would join (those are ``threading``'s)."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t is not threading.main_thread() and not t.daemon for t in threading.enumerate()
    ):
        raise SystemExit(code)
    if not _flushed():
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    if not _flushed():  # pragma: no cover - a handler wrote to a stream it closed
        raise SystemExit(code)
    _hard_exit(code)
