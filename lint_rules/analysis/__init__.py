"""The analysis core: every rule lives here, every face (flake8, CLI, codemod) adapts it.

One pass over the ``ast`` tree (``walk``) visits calls with the context they need (enclosing
class, function, guarding ``if``/``match`` arms, loops). Callees are resolved within the file
(``symbols`` for bindings, ``resolve`` and ``classes`` for meanings, ``kinds`` for the values,
among them the typed ``Callee``), so that a same-named keyword to a non-TE function is never
reported; ``tracking`` tells guarded and tracked values; ``checks`` holds one function per
rule; ``fixes`` builds edits when a face asks for them; ``core`` ties them together for one
file. Function scopes are summarised lazily, only for functions that contain a candidate call,
and statements that cannot hold one are not walked, which keeps the cost near ``ast.parse``.
"""

from __future__ import annotations

import ast
import gc
import re
import warnings

from lint_rules.analysis.core import Analysis
from lint_rules.deep import deep
from lint_rules.findings import Finding
from lint_rules.settings import DEFAULT_SETTINGS, Settings
from lint_rules.te import FLAG, TE_MODULE_CLASSES, TE_ROOT

__all__ = ["Analysis", "analyze_source", "analyze_tree", "mentions_flag"]


@deep
def analyze_tree(
    tree: ast.Module,
    settings: Settings = DEFAULT_SETTINGS,
    source: str | None = None,
    *,
    fixes: bool = True,
) -> list[Finding]:
    """Findings for an already parsed module (flake8 hands us its tree). noqa not applied.

    ``source`` is only needed for exact fixes of parenthesised positional flags; with
    ``fixes=False`` (flake8 never applies a fix) no edit is built and every ``fix`` is None.
    """
    analysis = Analysis(tree, settings, source, fixes)
    try:
        return analysis.run()
    finally:
        analysis.close()


_TE_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+transformer_engine\b", re.MULTILINE)
_TE_CLASS_WORD = re.compile(
    r"(?<![\w])(?<!nn\.)(?:{})\b".format("|".join(sorted(TE_MODULE_CLASSES)))
)
"""A TE class that takes the flag, as a word (not ``TELinear``, ``ColumnParallelLinear`` or
``nn.Linear``)."""


def mentions_flag(text: str) -> bool:
    """The byte prefilter: only files that spell the flag, or that import TE and name a class
    that takes it (a positional flag may be named anything), can have a finding.

    Every other file costs a byte search or two and is never parsed.
    """
    if FLAG in text:
        return True
    return TE_ROOT in text and _imports_te(text) and _names_te_class(text)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what ``\w`` matches in a str pattern


def _imports_te(text: str) -> bool:
    """``_TE_IMPORT.search(text)``, by ``str.find`` (the regex costs ~0.1 ms per 10 KB)."""
    at = text.find(TE_ROOT)
    while at >= 0:
        end = at + len(TE_ROOT)
        if end == len(text) or not _is_word(text[end]):
            head = text[text.rfind("\n", 0, at) + 1 : at].lstrip(" \t")
            for keyword in ("from", "import"):
                rest = head[len(keyword) :]
                if head.startswith(keyword) and rest and not rest.strip(" \t"):
                    return True
        at = text.find(TE_ROOT, at + 1)
    return False


def _names_te_class(text: str) -> bool:
    """``_TE_CLASS_WORD.search(text)``, by ``str.find`` (the regex's look-behinds make it try
    every position: ~45 ms on megatron-core's files that import TE, this ~5 ms)."""
    for word in TE_MODULE_CLASSES:
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if (
                (at == 0 or not _is_word(text[at - 1]))
                and not text.endswith("nn.", 0, at)
                and (end == len(text) or not _is_word(text[end]))
            ):
                return True
            at = text.find(word, at + 1)
    return False


@deep
def analyze_source(
    text: str, settings: Settings = DEFAULT_SETTINGS, *, fixes: bool = True
) -> list[Finding]:
    """Findings for one file's text (noqa not applied). Raises SyntaxError if unparsable."""
    if not mentions_flag(text):
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
        return analyze_tree(tree, settings, text, fixes=fixes)
    finally:
        if collecting:
            gc.enable()
