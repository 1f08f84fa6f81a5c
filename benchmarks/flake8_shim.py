"""Run flake8 with or without our plugin, optionally timing the plugin from inside flake8.

flake8 runs every installed plugin whatever ``--select`` says (selection only filters what
is reported), so ``--select E,W,F,C90`` against ``--select E,W,F,C90,TEM`` does not measure
what the plugin costs. This shim runs the real flake8 ``main`` and:

- ``TE_BENCH_FLAKE8_WITHOUT=TEM`` drops plugins with those entry-point names before flake8
  loads them (as if the package were not installed): the baseline for "added cost";
- ``TE_BENCH_PLUGIN_NOOP=1`` keeps the plugin registered and called but makes its ``run``
  return nothing: separates the cost of having it installed from the cost of its analysis;
- ``TE_BENCH_PLUGIN_TIMES=path`` wraps our checker's ``__init__`` and ``run`` (consuming its
  result) and appends ``{"pid", "calls", "seconds"}`` per process to ``path`` at exit: an
  attribution that is not blurred by run-to-run noise (run flake8 with ``--jobs 1``).

Usage: ``python benchmarks/flake8_shim.py [flake8 arguments...]``.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time
from typing import Any


def _drop_plugins(names: set[str]) -> None:
    from flake8.plugins import finder

    original = finder.find_plugins

    def find_plugins(cfg: Any, opts: Any) -> list[Any]:
        return [p for p in original(cfg, opts) if p.entry_point.name not in names]

    finder.find_plugins = find_plugins  # type: ignore[assignment]


def _time_plugin(path: str) -> None:
    from lint_rules import flake8_plugin

    cls = flake8_plugin.TEMicrobatchChecker
    stats = {"calls": 0, "seconds": 0.0}
    original_init, original_run = cls.__init__, cls.run

    # functools.wraps keeps the signatures flake8 inspects to decide what to pass.
    @functools.wraps(original_init)
    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            original_init(self, *args, **kwargs)
        finally:
            stats["seconds"] += time.perf_counter() - start

    @functools.wraps(original_run)
    def timed_run(self: Any) -> Any:
        start = time.perf_counter()
        try:
            results = list(original_run(self))
        finally:
            stats["seconds"] += time.perf_counter() - start
            stats["calls"] += 1
        return iter(results)

    cls.__init__ = timed_init  # type: ignore[method-assign]
    cls.run = timed_run  # type: ignore[method-assign]

    # Parallel flake8 workers leave through os._exit (no atexit): use --jobs 1 with this.
    def dump() -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"pid": os.getpid(), **stats}) + "\n")

    atexit.register(dump)


def _noop_plugin() -> None:
    """Keep the plugin installed, loaded and called, but make its ``run`` do nothing."""
    from lint_rules import flake8_plugin

    def run(self: Any) -> Any:
        return iter(())

    flake8_plugin.TEMicrobatchChecker.run = run  # type: ignore[method-assign]


def main() -> int:
    without = {n for n in os.environ.get("TE_BENCH_FLAKE8_WITHOUT", "").split(",") if n}
    if without:
        _drop_plugins(without)
    if os.environ.get("TE_BENCH_PLUGIN_NOOP"):
        _noop_plugin()
    times = os.environ.get("TE_BENCH_PLUGIN_TIMES")
    if times and "TEM" not in without:
        _time_plugin(times)
    from flake8.main.cli import main as flake8_main

    return flake8_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
