"""Apply the core's fixes to source text: exact edits, everything else byte-identical.

Edits are applied to the text in place (positions come from ``ast``), so blank lines, quoting,
trailing commas, line breaks inside calls, the encoding cookie and CRLF newlines are untouched
by construction. Comments inside a replaced value are kept (after the new value, then on their
own lines). A fix is applied only when it is ``safe`` or unsafe fixes were asked for, and never
when a ``# noqa`` for its code sits on any line its edits span. The guard strategy's import is
inserted as text too. The result is verified before it is returned: it parses (as the bytes it
will be written as, when the file's encoding is given) and keeps every comment in order.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from lint_rules.analysis import Project, analyze_source
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.deep import deep
from lint_rules.findings import Finding, char_offset, line_offsets, split_lines
from lint_rules.guard_import import GuardImportError, add_guard_import
from lint_rules.noqa import filter_noqa, noqa_checker
from lint_rules.settings import DEFAULT_SETTINGS, Settings


class FixError(RuntimeError):
    """The fixed text would not parse: nothing is written (a bug; please report it)."""


@dataclass
class FixResult:
    """The new text, what was fixed, what was left, and notes for the user."""

    text: str
    applied: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    """Unsuppressed findings left in place: no fix (TEM004), an unsafe fix not asked for, or
    a fix skipped (see ``skipped``)."""
    unsafe: list[Finding] = field(default_factory=list)
    """Remaining because their fix is unsafe and unsafe fixes were not asked for."""
    skipped: list[Finding] = field(default_factory=list)
    """Remaining because their fix was skipped: a ``# noqa`` on a line it spans, an overlap."""
    added_imports: list[str] = field(default_factory=list)
    """The dotted guards whose import the fix added (the ``guard`` strategy)."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Touching counts: an insertion at a replaced value's edge would garble it."""
    return a[0] <= b[1] and b[0] <= a[1]


def _comments(old: str) -> list[tuple[int, str]] | None:
    """(line index within ``old``, comment) for each comment token; None if it won't tokenize.

    ``old`` is the source of an expression (a replaced value), so inside parentheses it is one
    logical line whatever its line breaks.
    """
    flat = old.replace("\r\n", "\n").replace("\r", "\n")
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(f"({flat})").readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0] - 1, token.string))
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def keep_comments(old: str, new: str, after: str = "") -> str | None:
    """``new`` followed by the comments of the replaced text ``old``, in order.

    The first comment goes after the new value, each further one on its own line with the
    indentation of the line it was on; the text after the replaced span starts on a new line
    with the indentation of the span's last line (a comment always ends its line, and inside a
    call the line break is free), less the blanks that ``after`` (the rest of that line) starts
    with before its own comment. None when ``old`` cannot be read (the fix is then skipped).
    """
    if "#" not in old:
        return new
    comments = _comments(old)
    if comments is None:
        return None
    if not comments:
        return new
    lines = split_lines(old)

    def ending(index: int) -> str:
        line = lines[index]
        return line[len(line.rstrip("\r\n")) :] or "\n"

    def indent(index: int) -> str:
        line = lines[index]
        return line[: len(line) - len(line.lstrip(" \t"))]

    pieces = [new]
    for number, (index, comment) in enumerate(comments):
        if number == 0:
            pieces.append(f"  {comment}")
        else:
            pieces.append(f"{ending(comments[number - 1][0])}{indent(index)}{comment}")
    last_indent = indent(len(lines) - 1)
    blanks = len(after) - len(after.lstrip(" \t"))
    if after.lstrip(" \t").startswith("#") and last_indent.endswith(after[:blanks]):
        last_indent = last_indent[: len(last_indent) - blanks]
    pieces.append(f"{ending(comments[-1][0])}{last_indent}")
    return "".join(pieces)


@dataclass
class _Plan:
    accepted: list[tuple[int, int, str]] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    skipped: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def apply_edits(
    text: str,
    findings: list[Finding],
    suppressed: Callable[[str, int], bool] | None = None,
) -> tuple[str, list[Finding], list[str], list[Finding]]:
    """Apply each finding's edits: (new text, applied, notes, skipped).

    A fix is skipped when it collides with an earlier one, when ``suppressed(code, line)`` says
    a ``# noqa`` covers a line its edits span, or when a replaced value's comments cannot be
    read (they would be lost). A fix shared by several findings (``Fix.together``) is applied
    only when every one of them is in ``findings``, and a ``# noqa`` for any of their codes
    skips it.
    """
    lines = split_lines(text)
    starts = line_offsets(lines)
    # Findings on one value carry one fix (the core shares TEM005's None), applied once.
    taken: list[tuple[int, int]] = []
    plan = _Plan()
    seen_edits: set[tuple] = set()
    carriers: dict[tuple, list[Finding]] = {}
    for finding in findings:
        if finding.fix is not None and finding.fix.together:
            carriers.setdefault(finding.fix.edits, []).append(finding)
    for finding in sorted(findings, key=lambda f: f.sort_key):
        fix = finding.fix
        if fix is None:
            continue
        if fix.edits in seen_edits:
            plan.applied.append(finding)
            continue
        codes = {finding.code}
        if fix.together:
            sharing = carriers[fix.edits]
            codes.update(f.code for f in sharing)
            missing = set(fix.together) - {(f.code, f.line, f.col) for f in sharing}
            if missing:
                plan.skipped.append(finding)
                where = ", ".join(f"{code} on line {line}" for code, line, _ in sorted(missing))
                plan.notes.append(
                    f"line {finding.line}: {finding.code} not fixed, its fix goes with {where}, "
                    "which is not fixed (`# noqa`, not selected or not safe)"
                )
                continue
        first = min(e.start[0] for e in fix.edits)
        last = max(e.end[0] for e in fix.edits)
        if suppressed is not None and any(
            suppressed(code, line) for code in sorted(codes) for line in range(first, last + 1)
        ):
            plan.skipped.append(finding)
            plan.notes.append(
                f"line {finding.line}: {finding.code} not fixed, a `# noqa` covers a line "
                "the fix would change"
            )
            continue
        spans = []
        for e in fix.edits:
            begin = char_offset(lines, starts, e.start)
            end = char_offset(lines, starts, e.end)
            after = lines[e.end[0] - 1][end - starts[e.end[0] - 1] :]
            replacement = keep_comments(text[begin:end], e.replacement, after)
            if replacement is None:
                break
            spans.append((begin, end, replacement))
        else:
            whole = (min(s[0] for s in spans), max(s[1] for s in spans))
            at = bisect.bisect_left(taken, whole)  # sorted, disjoint: only neighbours can touch
            if any(_overlaps(whole, other) for other in taken[max(at - 1, 0) : at + 1]):
                plan.skipped.append(finding)
                plan.notes.append(
                    f"line {finding.line}: {finding.code} not fixed here, it overlaps another fix"
                )
                continue
            taken.insert(at, whole)
            plan.accepted.extend(spans)
            seen_edits.add(fix.edits)
            plan.applied.append(finding)
            if fix.note:
                plan.notes.append(f"line {finding.line}: {fix.note}")
            continue
        plan.skipped.append(finding)
        plan.notes.append(
            f"line {finding.line}: {finding.code} not fixed, its comments are unclear"
        )
    pieces: list[str] = []
    cursor = len(text)
    for begin, end, replacement in sorted(plan.accepted, key=lambda s: (s[0], s[1]), reverse=True):
        pieces.append(text[end:cursor])
        pieces.append(replacement)
        cursor = begin
    pieces.append(text[:cursor])
    applied = sorted(plan.applied, key=lambda f: f.sort_key)
    return "".join(reversed(pieces)), applied, plan.notes, plan.skipped


_DEBUG_FIELD = re.compile(r"=\s*(?:![rsa])?\s*(?::[^{}\n]*)?\}")
"""The end of an f-string replacement field with a ``=`` (``{expr = }``, ``{expr=!r:>10}``)."""


def _in_debug_text(text: str, findings: list[Finding]) -> dict[int, Finding]:
    """The findings (by id) whose edits lie inside an f-string's ``{expr=}`` field: Python
    prints the expression's source text there, so any edit changes the program's output."""
    if not findings or "=" not in text or not _DEBUG_FIELD.search(text):
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    lines = split_lines(text)
    starts = line_offsets(lines)
    fields: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FormattedValue) or node.value.end_lineno is None:
            continue
        end = char_offset(lines, starts, (node.value.end_lineno, node.value.end_col_offset or 0))
        after = text[end : end + 64].lstrip(" \t\r\n")
        if after.startswith("=") and not after.startswith("=="):
            begin = char_offset(lines, starts, (node.value.lineno, node.value.col_offset))
            fields.append((begin, end))
    found = {}
    for finding in findings:
        for edit in finding.fix.edits if finding.fix else ():
            at = char_offset(lines, starts, edit.start)
            if any(begin <= at <= end for begin, end in fields):
                found[id(finding)] = finding
    return found


def plan_edits(
    text: str, fixable: list[Finding], disable_noqa: bool
) -> tuple[str, list[Finding], list[str], list[Finding]]:
    """What ``fix`` applies of ``fixable``: (new text, applied, notes, skipped). The one place
    that decides it, for ``fix`` and for every count of what ``fix`` would apply
    (``cli.fixcount``): not inside an f-string's ``=`` debug text, no ``# noqa`` on a line an
    edit spans, comments kept, no overlap."""
    debug = _in_debug_text(text, fixable)
    fixable = [f for f in fixable if id(f) not in debug]
    new_text, applied, notes, skipped = apply_edits(text, fixable, noqa_checker(text, disable_noqa))
    for finding in debug.values():
        skipped.append(finding)
        notes.append(
            f"line {finding.line}: {finding.code} not fixed, it is inside an f-string's `=` "
            "debug text (what it prints would change)"
        )
    return new_text, applied, notes, skipped


COMMENT_CHECK_MAX_CHARS = 2_000_000
"""Files up to this size have every comment re-read after the fix (two ``tokenize`` passes,
about 1 s per MB each in pure Python); larger ones rely on the edits' own comment keeping."""


def comment_tokens(text: str) -> list[str] | None:
    """Every comment of ``text``, in order (None when it does not tokenize)."""
    # One "\n" per physical line: io.StringIO splits at "\n" only, and the pure-Python
    # tokenizer (3.11 and older) would read a CR-only file's first comment to the file's end.
    lines = split_lines(text) if "\r" in text else io.StringIO(text).readlines()
    flat = [line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in lines]
    try:
        return [
            token.string
            for token in tokenize.generate_tokens(iter([*flat, ""]).__next__)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


def _kept_in_order(old: list[str], new: list[str]) -> bool:
    """Whether ``old`` is a subsequence of ``new`` (the fix may add its own comment)."""
    remaining = iter(new)
    return all(any(comment == other for other in remaining) for comment in old)


def _compile_error(text: str) -> SyntaxError | None:
    """The compiler's own error for ``text`` (what ``ast.parse`` accepts but Python does not
    run: an assignment to ``__debug__``, a misplaced ``__future__`` import), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return error
    except (ValueError, RecursionError, MemoryError):
        return None  # read by ``ast.parse`` already; nothing more to learn
    return None


def verify_fixed(old: str, new: str, encoding: str | None = None) -> None:
    """Raise FixError unless ``new`` parses (as the bytes it will be written as, under the
    file's own declared encoding, when ``encoding`` is given) and keeps every comment of
    ``old`` in order."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if encoding is None:
                ast.parse(new)
            else:
                try:
                    data = new.encode(encoding)
                except UnicodeError:  # idna's "label too long" too
                    data = None  # the write refuses it with its own message
                ast.parse(new if data is None else data)
    except SyntaxError as error:
        raise FixError(f"the fixed text does not parse ({error}); nothing was changed") from error
    refused = _compile_error(new)
    if refused is not None and _compile_error(old) is None:  # `from m import __debug__`, a
        raise FixError(  # late `from __future__ import ...`: checks `ast.parse` does not run
            f"the fixed text does not compile ({refused}); nothing was changed"
        )
    if len(old) > COMMENT_CHECK_MAX_CHARS:
        return  # the edits keep comments by construction (``keep_comments``); not re-read
    before, after = comment_tokens(old), comment_tokens(new)
    if before is not None and (after is None or not _kept_in_order(before, after)):
        raise FixError("the fixed text would lose a comment; nothing was changed")


@deep
def fix_source(
    text: str,
    settings: Settings = DEFAULT_SETTINGS,
    disable_noqa: bool = False,
    project: Project | None = None,
    encoding: str | None = None,
    gates: Gates = ON,
) -> FixResult:
    """Fix every finding that has a fix (safe ones; unsafe ones too with ``unsafe_fixes``) and
    that no ``# noqa`` covers, on its line or on any line the fix spans. Raises SyntaxError,
    or FixError when the result would not parse (as bytes in ``encoding``, the file's, when
    given) or would lose a comment. ``project``: the other files of a CLI run
    (``analysis.project``); ``gates``: the text-level shortcuts (``prefilter``)."""
    findings = analyze_source(text, settings, project=project, gates=gates)
    if not findings:
        return FixResult(text)
    kept, _ = filter_noqa(findings, text, disable_noqa)
    kept = [f for f in kept if settings.reports(f.code)]  # select / ignore
    allowed = ("safe", "unsafe") if settings.unsafe_fixes else ("safe",)
    fixable = [f for f in kept if f.fix is not None and f.fix.applicability in allowed]
    unsafe = [f for f in kept if f.fix is not None and f.fix.applicability not in allowed]
    new_text, applied, notes, skipped = plan_edits(text, fixable, disable_noqa)
    done = {id(f) for f in applied}
    remaining = [f for f in kept if id(f) not in done]
    if not applied:
        return FixResult(text, [], notes, remaining, unsafe, skipped)
    imports = sorted({f.fix.guard_import for f in applied if f.fix and f.fix.guard_import})
    added = []
    for dotted in imports:
        try:
            before, new_text = new_text, add_guard_import(new_text, dotted)
        except GuardImportError as error:
            raise FixError(f"{error}; nothing was changed") from None
        if new_text != before:
            added.append(dotted)
    verify_fixed(text, new_text, encoding)
    return FixResult(new_text, applied, notes, remaining, unsafe, skipped, added)
