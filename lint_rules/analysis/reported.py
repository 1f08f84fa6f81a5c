"""A file's findings as its ``Outcome`` carries them (``records.Reported``): plain data that a
worker process, the result cache and every output format share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

try:  # the module behind hashlib.blake2b, without loading OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.analysis.records import Reported
from lint_rules.findings import char_column, split_lines

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any, Callable


def _char_columns(lines: list[str]) -> Callable[[int, int], int]:
    """Map (line, UTF-8 byte column) to a character column in ``lines``."""

    def convert(line: int, col: int) -> int:
        if not 1 <= line <= len(lines):
            return col
        return char_column(lines[line - 1], col)

    return convert


def _fingerprints(lines: list[str], findings: Sequence[Any]) -> list[str]:
    seen: dict[tuple[str, str], int] = {}
    prints = []
    for f in findings:
        content = " ".join(lines[f.line - 1].split()) if 0 < f.line <= len(lines) else ""
        occurrence = seen[(f.code, content)] = seen.get((f.code, content), 0) + 1
        key = f"{f.code}\0{content}\0{occurrence}".encode("utf-8", "backslashreplace")
        prints.append(blake2b(key, digest_size=16).hexdigest())
    return prints


def _evidence(path: str, finding: Any, chars: Callable[[int, int], int]) -> tuple:
    steps = []
    for step in getattr(finding, "evidence", ()):
        if step.path is None or step.path == path:
            column = chars(step.line, step.col) + 1 if step.line else 0
            steps.append((path, step.line, column, step.message))
        else:
            steps.append((step.path, step.line, step.col + 1 if step.line else 0, step.message))
    return tuple(steps)


def _edits(fix: Any, chars: Callable[[int, int], int]) -> tuple:
    if fix is None:
        return ()
    return tuple(
        (
            edit.start[0],
            chars(edit.start[0], edit.start[1]) + 1,
            edit.end[0],
            chars(edit.end[0], edit.end[1]) + 1,
            edit.replacement,
        )
        for edit in fix.edits
    )


FIX_MESSAGE = "Pass a value that is re-armed every step (`None` or a guard)"


def reported_findings(path: str, text: str, findings: Iterable[Any]) -> tuple[Reported, ...]:
    """What a file's findings become in its ``Outcome``: columns in characters, fingerprints,
    evidence with paths, and fix edits (plain data, for the faces, pools and the cache)."""
    ordered = sorted(findings, key=lambda f: f.sort_key)
    if not ordered:
        return ()  # (a file without findings: its text is not split)
    lines = split_lines(text)
    chars = _char_columns(lines)
    prints = _fingerprints(lines, ordered)
    return tuple(
        Reported(
            path=path,
            code=f.code,
            message=f.message,
            line=f.line,
            column=f.col + 1,
            end_line=f.end_line,
            end_column=f.end_col + 1,
            char_column=chars(f.line, f.col) + 1,
            end_char_column=chars(f.end_line, f.end_col) + 1,
            fixable=f.fix is not None,
            applicability=getattr(f.fix, "applicability", None) if f.fix else None,
            fingerprint=fingerprint,
            verdict=getattr(f, "verdict", ""),
            evidence=_evidence(path, f, chars),
            fix_message=((f.fix.note or FIX_MESSAGE) if f.fix else ""),
            edits=_edits(f.fix, chars),
            together=tuple((c, ln, col + 1) for c, ln, col in f.fix.together) if f.fix else (),
        )
        for f, fingerprint in zip(ordered, prints)
    )
