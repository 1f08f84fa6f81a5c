"""The CLI's way to the core's one entry point (``analysis.faces``): the files named are each
judged with their whole project, and stdin with ``--stdin-filename``'s."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lint_rules.cli.options import Configuration
from lint_rules.cli.progress import Progress
from lint_rules.cli.running import POOL_MIN_BYTES, Job, Outcome, Pool, Work, shown_path


def report(items: Any, kind: str) -> None:
    import sys

    for path, reason in items:
        print(f"{shown_path(path)}: {kind}: {reason}", file=sys.stderr)


def judged(
    args: argparse.Namespace,
    config: Configuration,
    work: Work,
    job: Job,
    files: Sequence[str],
    cache: object,
    bar: Callable[[int], Progress],
    members: dict[str, list[str]] | None = None,
) -> Iterator[Outcome]:
    """``_outcomes`` with each file judged with its project (``analysis.faces``); ``members``:
    the files of projects listed already, by root."""
    if not files:  # nothing to judge: the core is not even imported
        return
    from lint_rules.analysis.faces import ProjectJudge

    judge = ProjectJudge(config.settings_of, config.excludes, cache, members=members)
    workers = args.jobs if args.jobs is not None else 1
    if args.jobs is None and len(files) > 1:
        from lint_rules.cli.cpus import default_cpus

        workers = default_cpus()
    bars: list[Progress] = []

    def progress(total: int) -> Callable[[], None]:
        bars.append(bar(total))
        return bars[-1].advance

    # one for every project of the run, forked on the first parse that needs it
    pool = Pool(workers, job.mode == "write", 0 if args.jobs is not None else POOL_MIN_BYTES)
    try:
        with pool:
            for outcome in judge.stream(files, work, job, pool, workers, progress):
                if outcome.findings or outcome.diff:
                    for drawn in bars:
                        drawn.clear()
                why = judge.alone.get(outcome.path)
                if why and outcome.findings and not args.quiet:
                    report([(outcome.path, why)], "note")
                yield outcome
    finally:
        for drawn in bars:
            drawn.clear()


def stdin_project(args: argparse.Namespace, config: Configuration) -> tuple[Any, str | None]:
    """The project the source on stdin is judged with (``--stdin-filename``'s), or None and
    why it is judged alone."""
    if args.stdin_filename is None:
        return None, "judged alone: the source on stdin has no --stdin-filename, so no project"
    if args.isolated:
        return None, "judged alone: --isolated reads nothing around the file"
    from lint_rules.analysis.faces import ProjectJudge

    cache = None
    if not args.no_cache:
        from lint_rules.analysis.store import open_cache

        cache = open_cache(False, args.cache_dir)
    judge = ProjectJudge(config.settings_of, config.excludes, cache)
    project = judge.view(args.stdin_filename)
    judge.save()
    return project, judge.alone.get(args.stdin_filename)
