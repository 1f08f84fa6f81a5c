"""Apply the core's fixes to source text: exact edits, everything else byte-identical.

Edits are applied to the text in place (positions come from ``ast``), so comments, blank
lines, quoting, trailing commas, line breaks inside calls, the encoding cookie and CRLF
newlines are untouched by construction. libcst is imported only when an import must be added
(the ``guard`` strategy), and the result is always re-parsed before it is returned.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field

from lint_rules.analysis import analyze_source
from lint_rules.findings import Edit, Finding, char_column, split_lines
from lint_rules.noqa import filter_noqa
from lint_rules.settings import DEFAULT_SETTINGS, Settings


class FixError(RuntimeError):
    """The fixed text would not parse: nothing is written (a bug; please report it)."""


@dataclass
class FixResult:
    """The new text, the findings whose fixes were applied, and notes for the user."""

    text: str
    applied: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def _offsets(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _char_offset(lines: list[str], starts: list[int], position: tuple[int, int]) -> int:
    """Absolute str index of an ``ast`` (line, UTF-8 byte column) position."""
    line_no, byte_col = position
    return starts[line_no - 1] + char_column(lines[line_no - 1], byte_col)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Touching counts: an insertion at a replaced value's edge would garble it."""
    return a[0] <= b[1] and b[0] <= a[1]


def apply_edits(text: str, findings: list[Finding]) -> tuple[str, list[Finding], list[str]]:
    """Apply each finding's edits; a fix that collides with an earlier one is skipped."""
    lines = split_lines(text)
    starts = _offsets(lines)
    # Findings on one value carry one fix (the core shares TEM005's None), applied once.
    ordered = sorted(findings, key=lambda f: f.sort_key)
    taken: list[tuple[int, int]] = []
    accepted: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    notes: list[str] = []
    seen_edits: set[tuple[Edit, ...]] = set()
    for finding in ordered:
        fix = finding.fix
        if fix is None:
            continue
        if fix.edits in seen_edits:
            applied.append(finding)
            continue
        spans = [
            (
                _char_offset(lines, starts, e.start),
                _char_offset(lines, starts, e.end),
                e.replacement,
            )
            for e in fix.edits
        ]
        whole = (min(s[0] for s in spans), max(s[1] for s in spans))
        if any(_overlaps(whole, other) for other in taken):
            notes.append(
                f"line {finding.line}: {finding.code} not fixed here, it overlaps another fix"
            )
            continue
        taken.append(whole)
        accepted.extend(spans)
        seen_edits.add(fix.edits)
        applied.append(finding)
        if fix.note:
            notes.append(f"line {finding.line}: {fix.note}")
    pieces: list[str] = []
    cursor = len(text)
    for start, end, replacement in sorted(accepted, key=lambda s: (s[0], s[1]), reverse=True):
        pieces.append(text[end:cursor])
        pieces.append(replacement)
        cursor = start
    pieces.append(text[:cursor])
    return "".join(reversed(pieces)), sorted(applied, key=lambda f: f.sort_key), notes


def add_guard_import(text: str, dotted: str) -> str:
    """Add ``from module import name`` once, where libcst's AddImportsVisitor puts it."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    module_name, _, name = dotted.rpartition(".")
    tree = cst.parse_module(text)
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, module_name, name)
    return AddImportsVisitor(context).transform_module(tree).code


def fix_source(
    text: str, settings: Settings = DEFAULT_SETTINGS, disable_noqa: bool = False
) -> FixResult:
    """Fix every TEM001/2/3/5 finding that no ``# noqa`` suppresses. Raises SyntaxError."""
    findings = analyze_source(text, settings)
    if not findings:
        return FixResult(text)
    kept, _ = filter_noqa(findings, text, disable_noqa)
    fixable = [f for f in kept if f.fix is not None]  # TEM004 carries no fix
    if not fixable:
        return FixResult(text)
    new_text, applied, notes = apply_edits(text, fixable)
    imports = sorted({f.fix.guard_import for f in applied if f.fix and f.fix.guard_import})
    for dotted in imports:
        new_text = add_guard_import(new_text, dotted)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(new_text)
    except SyntaxError as error:
        raise FixError(f"the fixed text does not parse ({error}); nothing was changed") from error
    return FixResult(new_text, applied, notes)
