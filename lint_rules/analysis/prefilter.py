"""The byte prefilter: which files can have a finding at all, from their text alone.

Every other file costs a search or two and is never parsed. ``_TE_IMPORT`` and
``_TE_CLASS_WORD`` are the specification; the ``str.find`` searches are what runs.
"""

from __future__ import annotations

import re

from lint_rules.te import FLAG, TE_MODULE_CLASSES, TE_ROOT

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
    return FLAG in text or te_file(text)


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


def te_file(text: str) -> bool:
    """Whether a positional flag can reach a TE module in this file: it imports TE and names a
    class that takes the flag (resolution stays in the file, so a TE module called here is
    constructed, declared or subclassed here by such a name)."""
    return TE_ROOT in text and _imports_te(text) and _names_te_class(text)
