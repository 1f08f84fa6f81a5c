"""The analysis core's entry points (``analysis``): one file's findings from its text or
its tree, and a kept analysis judged again. Imported when first asked for (``analysis``'s
``__getattr__``): a run whose files the result cache settles never loads it."""

from __future__ import annotations

import ast
import gc
import warnings

from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.deep import deep
from lint_rules.findings import Finding
from lint_rules.settings import DEFAULT_SETTINGS, Settings

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project


mentions_flag = ON.mentions_flag
"""The byte prefilter with the gates on (``prefilter.Gates.mentions_flag``), for a face that
tests a text before it parses it (flake8)."""


@deep
def analyze_tree(
    tree: ast.Module,
    settings: Settings = DEFAULT_SETTINGS,
    source: str | None = None,
    *,
    fixes: bool = True,
    project: Project | None = None,
    gates: Gates = ON,
) -> list[Finding]:
    """Findings for an already parsed module (flake8 hands us its tree). noqa not applied.

    ``source`` is only needed for exact fixes of parenthesised positional flags; with
    ``fixes=False`` (flake8 never applies a fix) no edit is built and every ``fix`` is None.
    ``project``: the other files of a CLI run (``analysis.project``); it also receives what
    this file exports. Without it resolution stays in the file. ``gates``: the text-level
    shortcuts (``prefilter.ON``; ``OFF`` takes none, and must find the same).
    """
    from lint_rules.analysis.core import Analysis

    analysis = Analysis(tree, settings, source, fixes, project, gates)
    kept = False
    try:
        findings = analysis.run()
        analysis.export()
        # A first pass of a run, whose verdicts read the run's lifecycle facts (not known
        # yet): the run keeps the analysis, to judge its calls again once they are
        # (``rejudge``), instead of analysing the file again.
        if project is not None and project.keep and project.keys:
            project.kept = analysis
            kept = True
        return findings
    finally:
        if not kept:
            analysis.close()


@deep
def rejudge(project: Project) -> list[Finding]:
    """The findings of the analysis ``project`` kept (``analyze_tree``), judged again with
    the run's lifecycle facts, now ``project.lifecycle``; the analysis is then let go, unless
    its verdicts now ask the run a question it has not answered yet."""
    analysis = project.kept
    assert analysis is not None
    project.kept = None
    again = False
    try:
        findings = analysis.rejudge(project.lifecycle)
        # a question to the run (``builds``): judged once more when it is answered
        again = project.keep and bool(project.lifecycle.unanswered(project.keys))
        if again:
            project.kept = analysis
        return findings
    finally:
        if not again:
            analysis.close()


@deep
def analyze_source(
    text: str,
    settings: Settings = DEFAULT_SETTINGS,
    *,
    fixes: bool = True,
    project: Project | None = None,
    gates: Gates = ON,
) -> list[Finding]:
    """Findings for one file's text (noqa not applied). Raises SyntaxError if unparsable.

    A file the prefilter rules out has no finding and is not parsed; with a ``project`` the
    run has already chosen to read it (also for what it exports). ``gates``: as for
    ``analyze_tree``."""
    if project is None and not gates.mentions_flag(text):
        return []
    if "\0" in text:
        raise SyntaxError("source code cannot contain null bytes")
    # A tree and the analysis's values hold no reference cycles: the cyclic collector, which
    # would traverse every node of the tree again and again while it is built, has nothing to
    # find (~10% of ``ast.parse``). It is switched back on as it was, whatever happens.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            with warnings.catch_warnings():
                # Invalid escapes in the user's strings are the user's business, not ours.
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        except ValueError as error:  # pragma: no cover - older Pythons report NUL this way
            raise SyntaxError(str(error)) from error
        return analyze_tree(tree, settings, text, fixes=fixes, project=project, gates=gates)
    finally:
        if collecting:
            gc.enable()
