"""The analysis core: every rule lives here, every face (flake8, CLI, codemod) adapts it.

``prefilter`` says from a file's text whether it can have a finding at all, and holds every
other text-level shortcut, behind one switch passed in (``gates``: ``prefilter.ON`` or
``OFF``). One pass over the
``ast`` tree (``walk``) visits the calls a rule looks at with the context they need
(enclosing class, function, guarding ``if``/``match`` arms, loops). Callees are resolved
within the file (``symbols`` for module bindings, ``scopes`` for a function's, ``classinfo``
for the classes it defines, ``nodes`` for small facts about nodes; ``resolve`` and
``classes`` for meanings, ``kinds`` for the values, among them the typed ``Callee``;
``project`` adds what the other files of a CLI run export), so that a same-named keyword to a
non-TE function is never reported; ``tracking`` tells guarded and tracked values, and
``lifecycle`` (over ``facts``) judges the rest; ``sites`` says what a call passes, and
``checks`` holds one rule object per code, each owning its state; ``fixes`` builds edits when a
face asks for them; ``core`` ties them together for one file. Scopes and classes are read
lazily, only where a call needs them, and statements whose lines cannot hold such a call are not
walked, which keeps the cost near ``ast.parse`` (benchmarks/README.md).
"""

from __future__ import annotations

import ast
import gc
import warnings
from typing import TYPE_CHECKING, Any

from lint_rules.analysis.exports import Export
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.deep import deep
from lint_rules.findings import Finding
from lint_rules.settings import DEFAULT_SETTINGS, Settings

if TYPE_CHECKING:
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.project import Project

__all__ = [
    "Analysis",
    "Export",
    "Project",
    "analyze_source",
    "analyze_tree",
    "mentions_flag",
    "rejudge",
]


def __getattr__(name: str) -> Any:
    """``Analysis`` and ``Project`` are imported when first asked for: a run whose files the
    prefilter or the result cache settles (a cached ``check``) never loads the analysis."""
    if name == "Analysis":
        from lint_rules.analysis.core import Analysis

        return Analysis
    if name == "Project":
        from lint_rules.analysis.project import Project

        return Project
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
