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

TYPE_CHECKING = False  # `typing` is not imported at run time: a warm `check` loads no analysis
if TYPE_CHECKING:
    from typing import Any

    from lint_rules.analysis.analyze import (
        analyze_source,
        analyze_tree,
        mentions_flag,
        rejudge,
    )
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.exports import Export
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

_LAZY = {
    "Analysis": "lint_rules.analysis.core",
    "Export": "lint_rules.analysis.exports",
    "Project": "lint_rules.analysis.project",
    "analyze_source": "lint_rules.analysis.analyze",
    "analyze_tree": "lint_rules.analysis.analyze",
    "mentions_flag": "lint_rules.analysis.analyze",
    "rejudge": "lint_rules.analysis.analyze",
}
"""Where each name of the package is defined: imported when first asked for, so that
importing a module of the package (the result cache, ``store``) loads none of the analysis,
and a run whose files the prefilter or the result cache settles never does."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups find it here
    return value
