"""Judging one file into an ``Outcome`` (``records``): what a worker process runs for ``check``.

``check_file`` reads, analyses and reports one file (with its project's view,
``analysis.Project``, or alone); ``rejudge_file`` judges a kept first analysis again once the
run's lifecycle facts are known. Any failure on one file becomes that file's error
(``guarded``), so that a run over many files goes on.

A worker process of the run keeps the first analyses it made that the run will judge again
(``KEPT``, ``keep_here``), as the run's own process does: the run then sends the file back to
the pool (``rejudge_kept``) instead of analysing it again in full in its own process, at the
end of the run, where nothing else runs beside it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lint_rules.analysis.records import Indexed, Job, Outcome, content_digest
from lint_rules.settings import Settings

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where nothing passes)
if TYPE_CHECKING:
    from typing import Any

Work = Callable[..., Outcome]
"""``work(job, path, settings, source=None, project=None)``."""

KEPT_HERE_MAX = 64
"""First analyses a worker keeps at most (``run.KEPT_MAX`` in the run's own process)."""

KEPT: dict[str, Any] = {}
"""In a worker process: the views (``analysis.Project``) whose first analysis it kept
(``Project.kept``), by path, until the run judges them again (``rejudge_kept``). Empty in the
run's own process, which keeps its own with the run (``analysis.run``)."""


class Elsewhere:
    """``Project.kept`` in the run's process for a file whose first analysis a worker kept:
    the file is judged again there (``rejudge_kept``); nothing to close here."""

    def close(self) -> None:
        pass


ELSEWHERE = Elsewhere()


def keep_here(path: str, project: Any, outcome: Outcome) -> bool:
    """In a worker, after ``path`` was judged with ``project``: keep its analysis
    (``KEPT``) if the run will judge it again (``KEPT_HERE_MAX`` at most: the oldest is let
    go, and the run analyses that file again in full); whether it is kept."""
    if project is None or project.kept is None:
        return False
    if outcome.error is not None:
        project.kept.close()
        project.kept = None
        return False
    while len(KEPT) >= KEPT_HERE_MAX:  # the oldest goes (a later project of the run)
        let_go_here(next(iter(KEPT)))
    KEPT[path] = project
    return True


def let_go_here(path: str) -> None:
    """Close the analysis of ``path`` this worker kept, if any (it is judged in full again)."""
    view = KEPT.pop(path, None)
    if view is not None and view.kept is not None:
        view.kept.close()
        view.kept = None


def rejudge_kept(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """A file whose first analysis a worker kept, now that the run's lifecycle facts are known
    (``project.lifecycle``): judged again by ``rejudge_file`` in the process that kept it, or
    analysed again in full with ``project`` in any other (the same findings)."""
    view = KEPT.pop(path, None)
    if view is None or view.kept is None:
        return check_file(job, path, settings, None, project)
    view.lifecycle = project.lifecycle
    outcome = rejudge_file(job, path, settings, None, view)
    if view.kept is not None:  # it asked the run a question: judged once more
        KEPT[path] = view
    return outcome


def syntax_outcome(path: str, error: SyntaxError, digest: str = "") -> Outcome:
    where = f" (line {error.lineno}, column {error.offset})" if error.lineno else ""
    return Outcome(
        path,
        error=f"cannot parse: {error.msg}{where}",
        error_line=error.lineno or None,
        error_column=error.offset or None,
        digest=digest,
        cacheable=bool(digest),
    )


def guarded(work: Work) -> Work:
    """Turn any failure on one file into that file's error, so that the run goes on."""

    @functools.wraps(work)
    def run(
        job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
    ) -> Outcome:
        from lint_rules.fileio import SourceError

        try:
            return work(job, path, settings, source, project)
        except SourceError as error:
            return Outcome(path, error=error.reason)
        except SyntaxError as error:
            return syntax_outcome(path, error)
        except Exception as error:  # a core bug on one file must not hide the others
            kind = type(error).__name__
            return Outcome(path, error=f"internal error: {kind}: {error} (please report this)")

    return run


@guarded
def check_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """Findings for one file, ``# noqa`` applied (``source``: already read, or None;
    ``project``: the other files of the run, ``analysis.Project``, or None)."""
    from lint_rules.analysis import analyze_source
    from lint_rules.fileio import read_source

    source = source or read_source(path)
    try:
        findings = analyze_source(source.text, settings, project=project, gates=job.gates)
    except SyntaxError as error:
        return syntax_outcome(path, error, content_digest(settings, job.disable_noqa, source.raw))
    if project is not None and project.kept is not None:
        project.source = source  # to be judged again (``run.rejudged``)
    return checked(job, path, settings, source, findings, project)


@guarded
def rejudge_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """``check_file`` again, for a file whose first analysis the run kept (``project.kept``)
    now that the run's lifecycle facts are known (``project.lifecycle``): its calls are
    judged again; nothing is read, parsed, walked or resolved again."""
    from lint_rules.analysis import rejudge

    findings = rejudge(project)
    return checked(job, path, settings, project.source, findings, project)


def checked(
    job: Job, path: str, settings: Settings, source: Any, findings: Any, project: Any
) -> Outcome:
    """A file's outcome from its findings: ``# noqa`` applied, and what it tells the run."""
    from lint_rules.analysis.reported import reported_findings
    from lint_rules.noqa import filter_noqa

    digest = content_digest(settings, job.disable_noqa, source.raw)
    if findings:
        findings, _ = filter_noqa(findings, source.text, job.disable_noqa)
        from lint_rules.cli.fixcount import only_applicable_fixes

        findings = only_applicable_fixes(source.text, findings, job.disable_noqa)
    reported = reported_findings(path, source.text, findings)
    found = found_in(project) if project is not None else None
    return Outcome(path, findings=reported, digest=digest, cacheable=True, project=found)


def found_in(project: Any) -> Indexed:
    """What a file analysed with ``project`` (``analysis.Project``) tells its run."""
    from lint_rules.analysis.runfacts import lifecycle_digest
    from lint_rules.analysis.runindex import used_digest

    names = tuple(sorted(project.names))
    return Indexed(
        exports=tuple(sorted(project.exports.items())),
        names=names,
        used=used_digest(names, project.index, sorted(project.index)),
        life=lifecycle_digest(project.keys, project.lifecycle),
        package=project.package,
        facts=project.facts,
        keys=project.keys,
    )
