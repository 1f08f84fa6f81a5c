"""Plain data passed from the analysis core to its faces (flake8 plugin, codemod, CLI).

Positions follow Python's ``ast``: lines are 1-based, columns are 0-based offsets in UTF-8
bytes. That is exactly what flake8 receives from a plugin (it prints ``col + 1``), so every
face reports the same column for the same finding.
"""

from __future__ import annotations

import re

from lint_rules.slotted import Frozen

Position = tuple[int, int]
"""(line, column): 1-based line, 0-based UTF-8 byte column, as in ``ast``."""

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Physical lines with their endings, split only where Python's tokenizer splits.

    (``str.splitlines`` also splits at form feeds and other separators, which would shift
    every ``ast`` line number after them.)
    """
    if "\r" in text:
        return _LINE.findall(text)
    lines = text.split("\n")  # the same lines, a twentieth of the regular expression's cost
    last = lines.pop()
    found = [line + "\n" for line in lines]
    if last:
        found.append(last)
    return found


def ast_lines(text: str) -> list[str]:
    """The lines as ``ast`` numbers them (``ast_lines(text)[n - 1]`` is line ``n``), without
    their endings; cheaper than ``split_lines`` when the text has no carriage return."""
    return text.split("\n") if "\r" not in text else split_lines(text)


def char_column(line: str, byte_col: int) -> int:
    """The character offset of an ``ast`` UTF-8 byte column within ``line``."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


def line_offsets(lines: list[str]) -> list[int]:
    """Where each of ``lines`` (with their endings) starts in their joined text."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def char_offset(lines: list[str], starts: list[int], position: Position) -> int:
    """Absolute str index of an ``ast`` (line, UTF-8 byte column) position."""
    line_no, byte_col = position
    return starts[line_no - 1] + char_column(lines[line_no - 1], byte_col)


class Edit(Frozen):
    """Replace the source between ``start`` and ``end`` (exclusive) with ``replacement``."""

    __slots__ = ("start", "end", "replacement")
    start: Position
    end: Position
    replacement: str

    def __init__(self, start: Position, end: Position, replacement: str) -> None:
        self._fill(locals())


APPLICABILITIES = ("safe", "unsafe")


class Fix(Frozen):
    """What the codemod would do for one finding.

    ``guard_import`` is the dotted name of the guard function when the fix calls it (the
    ``guard`` strategy): the import is added once per file. ``note`` explains a fallback,
    for example a ``guard`` fix that had to use ``None`` because ``self`` is not in scope.
    ``applicability`` is ``"safe"`` (applied by ``fix``) or ``"unsafe"`` (applied only with
    ``--unsafe-fixes``), as in ruff; see docs/fixes.md. ``together``: (code, line, column) of
    every finding that carries this one fix, when it fixes several values at once (a local
    read only by them goes with them): it is applied only when every one of them is fixed.
    """

    __slots__ = ("edits", "guard_import", "note", "applicability", "together")
    edits: tuple[Edit, ...]
    guard_import: str | None
    note: str | None
    applicability: str
    together: tuple[tuple[str, int, int], ...]

    def __init__(
        self,
        edits: tuple[Edit, ...],
        guard_import: str | None = None,
        note: str | None = None,
        applicability: str = "safe",
        together: tuple[tuple[str, int, int], ...] = (),
    ) -> None:
        self._fill(locals())


class Evidence(Frozen):
    """One step of a finding's evidence: a place in the code and what happens to the flag there.

    ``path`` is None for the finding's own file (every face knows it), else the path of the
    other file of the run, as the run named it. ``line`` 0 means no place (a remark such as
    "re-arming not seen in this file").
    """

    __slots__ = ("message", "line", "col", "path")
    message: str
    line: int
    col: int
    path: str | None

    def __init__(self, message: str, line: int = 0, col: int = 0, path: str | None = None) -> None:
        self._fill(locals())

    def where(self, own_path: str | None = None) -> str:
        """``path:line`` (``:line`` in the finding's own file when ``own_path`` is None)."""
        if not self.line:
            return ""
        path = self.path if self.path is not None else own_path
        return f"{path or ''}:{self.line}"


class Finding(Frozen):
    """One reported problem: where it is, what it is, and how to fix it (if we can).

    ``verdict`` names the flag's lifecycle verdict (``stale``, ``conditional``, ``unverified``,
    ``repeated``, ...; see ``analysis.lifecycle``) and ``evidence`` lists the flag's sources,
    writes and re-arms that make it one, in the order a reader should follow them.
    """

    __slots__ = (
        "code",
        "message",
        "line",
        "col",
        "end_line",
        "end_col",
        "fix",
        "verdict",
        "evidence",
    )
    _uncompared = frozenset({"fix", "verdict", "evidence"})
    code: str
    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    fix: Fix | None
    verdict: str
    evidence: tuple[Evidence, ...]

    def __init__(
        self,
        code: str,
        message: str,
        line: int,
        col: int,
        end_line: int,
        end_col: int,
        fix: Fix | None = None,
        verdict: str = "",
        evidence: tuple[Evidence, ...] = (),
    ) -> None:
        self._fill(locals())

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.line, self.col, self.code)

    def evidence_line(self, own_path: str | None = None) -> str:
        """The evidence on one line (flake8, ``--output-format concise``): each step's message
        with its place in brackets, joined by ``; ``."""
        parts = []
        for step in self.evidence:
            where = step.where(own_path)
            parts.append(f"{step.message} ({where})" if where else step.message)
        return "; ".join(parts)
