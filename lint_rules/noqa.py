"""``# noqa`` handling identical to flake8's, so that every face suppresses the same findings.

The regular expressions are flake8's own (``flake8.defaults``, read from the installed
flake8), and the matching rules follow flake8's (``violation.py`` and ``processor.py`` of
flake8 7.x): a ``# noqa`` comment applies to the physical line a finding is reported on, or
to the whole range of a multi-line token (a triple-quoted string, a backslash continuation)
that contains it; ``# noqa: CODES`` matches a code exactly or as a prefix; a line matching
``# flake8: noqa`` silences the whole file.
"""

from __future__ import annotations

import re
import tokenize
from collections.abc import Callable, Iterable

from lint_rules.findings import Finding, split_lines

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any


def _flake8_defaults() -> Any:
    """flake8's own ``flake8/defaults.py`` (flake8 is a dependency), loaded without running
    ``flake8/__init__.py``, which would import ``logging`` into every command's start-up."""
    import sys

    loaded = sys.modules.get("flake8.defaults")
    if loaded is not None:
        return loaded
    import importlib.util
    import os

    package = importlib.util.find_spec("flake8")
    assert package is not None and package.submodule_search_locations
    path = os.path.join(list(package.submodule_search_locations)[0], "defaults.py")
    spec = importlib.util.spec_from_file_location("_te_lint_flake8_defaults", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DEFAULTS = _flake8_defaults()
NOQA_INLINE: re.Pattern[str] = _DEFAULTS.NOQA_INLINE_REGEXP
"""flake8's ``defaults.NOQA_INLINE_REGEXP``: ``# noqa`` and ``# noqa: CODES``."""
NOQA_FILE: re.Pattern[str] = _DEFAULTS.NOQA_FILE
"""flake8's ``defaults.NOQA_FILE``: ``# flake8: noqa`` silences the whole file."""
_LIST_SPLIT = re.compile(r"[,\s]")


def file_is_noqa(lines: Iterable[str]) -> bool:
    """flake8 skips a file that has a line starting with ``# flake8: noqa``."""
    return any(NOQA_FILE.match(line) for line in lines)


_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+ (PEP 701)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)


def _tokens(lines: list[str]) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``lines`` (None when they do not tokenize), with one ``"\n"`` per
    physical line (CR-only and CRLF too: ``io.StringIO`` splits at ``"\n"`` only, so a CR-only
    file would be one line) and every line break inside an f-string dropped: Python 3.12
    tokenizes an f-string's replacement fields (an ``NL`` inside its braces), older Pythons
    read the whole f-string as one ``STRING``; here every Python sees it as one token range,
    so a ``# noqa`` is never placed or read inside its braces (a comment there does not
    compile before 3.12)."""
    try:
        flat = (
            line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in lines
        )
        tokens = list(tokenize.generate_tokens(iter([*flat, ""]).__next__))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    depth = 0
    kept = []
    for token in tokens:
        if token.type == _FSTRING_START:
            depth += 1
        elif token.type == _FSTRING_END:
            depth -= 1
        elif depth and token.type in (tokenize.NL, tokenize.NEWLINE):
            continue
        kept.append(token)
    return kept


def _noqa_line_mapping(lines: list[str]) -> dict[int, str]:
    """Map each line number to the text flake8 searches for ``noqa`` (its ``processor``)."""
    mapping: dict[int, str] = {}
    tokens = _tokens(lines)
    if tokens is None:
        return {}
    min_line = len(lines) + 2
    max_line = -1
    for tok_type, _, (start_line, _), (end_line, _), _ in tokens:
        if tok_type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        min_line = min(min_line, start_line)
        max_line = max(max_line, end_line)
        if tok_type in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[min_line - 1 : max_line])
            for number in range(min_line, max_line + 1):
                mapping[number] = joined
            min_line = len(lines) + 2
            max_line = -1
    return mapping


def is_suppressed(code: str, physical_line: str) -> bool:
    """flake8's ``Violation.is_inline_ignored`` for one code on one (joined) line."""
    match = NOQA_INLINE.search(physical_line)
    if match is None:
        return False
    codes_str = match.groupdict()["codes"]
    if codes_str is None:
        return True
    codes = {item.strip() for item in _LIST_SPLIT.split(codes_str) if item.strip()}
    return code in codes or code.startswith(tuple(codes))


def _spells_noqa(text: str) -> bool:
    """``"noqa" in text.lower()``, from the text's UTF-8 bytes lowered: only ASCII letters
    lower to ``n``, ``o``, ``q`` or ``a`` (``tests/test_noqa_search.py``), and lowering a
    text with other characters than ASCII goes through Unicode's tables (a few ms a file)."""
    return b"noqa" in text.encode("utf-8", "surrogatepass").lower()


def filter_noqa(
    findings: list[Finding], text: str, disable_noqa: bool = False
) -> tuple[list[Finding], list[Finding]]:
    """Split findings into (kept, suppressed) exactly as flake8 would."""
    if disable_noqa or not findings:
        return list(findings), []
    if not _spells_noqa(text):
        return list(findings), []
    lines = split_lines(text)
    if file_is_noqa(lines):
        return [], list(findings)
    mapping = _noqa_line_mapping(lines)
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for finding in findings:
        line = mapping.get(finding.line)
        if line is None:
            line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
        (suppressed if is_suppressed(finding.code, line) else kept).append(finding)
    return kept, suppressed


def noqa_checker(text: str, disable_noqa: bool = False) -> Callable[[str, int], bool]:
    """``suppressed(code, line)``: whether a ``# noqa`` applying to ``code`` covers ``line``.

    The fixer asks it for every line an edit spans, not only the line a finding is on.
    """
    if disable_noqa or not _spells_noqa(text):
        return lambda code, line: False
    lines = split_lines(text)
    if file_is_noqa(lines):
        return lambda code, line: True
    mapping = _noqa_line_mapping(lines)

    def suppressed(code: str, line: int) -> bool:
        physical = mapping.get(line)
        if physical is None:
            physical = lines[line - 1] if 0 < line <= len(lines) else ""
        return is_suppressed(code, physical)

    return suppressed


def _token_ranges(lines: list[str]) -> tuple[dict[int, int], dict[int, int]]:
    """(last, comment): for each line inside a multi-line token (string, f-string,
    continuation), the last line of that logical line, where a ``# noqa`` comment can go; and
    for each line holding a comment token, the column where that comment starts."""
    last: dict[int, int] = {}
    comment: dict[int, int] = {}
    tokens = _tokens(lines)
    if tokens is None:
        return {}, {}
    first = None
    for tok_type, _, (start_line, start_col), (end_line, _), _ in tokens:
        if tok_type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        if tok_type == tokenize.COMMENT:
            comment[start_line] = start_col
        first = start_line if first is None else first
        if tok_type in (tokenize.NL, tokenize.NEWLINE):
            for number in range(first, end_line + 1):
                last[number] = end_line
            first = None
    return last, comment


def _with_codes(body: str, missing: list[str], comment_at: int | None) -> str | None:
    """``body`` (one physical line, no line break) with ``missing`` codes suppressed: joined to
    the line's own ``# noqa: CODES`` comment, else in a new comment at its end. None when the
    first ``# noqa`` on the line (the one flake8 reads) is not in a comment but in a string:
    nothing written there would be read, and the string is the program's data."""
    match = NOQA_INLINE.search(body)
    if match is None:
        return f"{body.rstrip()}  # noqa: {', '.join(missing)}"
    if comment_at is None or match.start() < comment_at:
        return None
    if not match.group("codes"):
        return None  # a bare one already covers every code (not reached)
    head = body[: match.end()].rstrip(", \t")
    between, rest = body[len(head) : match.end()], body[match.end() :]
    if rest:  # a reason after the codes stays apart from them, with its own blanks
        gap = between[len(between) - len(between.lstrip(",")) :].lstrip(",")
        rest = (gap if gap and not gap.strip() else " ") + rest
    return f"{head}, {', '.join(missing)}{rest}"


def add_noqa(text: str, found: Iterable[tuple[int, str]]) -> tuple[str, int]:
    """``text`` with ``# noqa: CODE`` written for each ``(line, code)``: (new text, lines
    changed). The comment goes at the end of the logical line (after a multi-line string or
    f-string), codes join an existing ``# noqa: ...`` comment before its reason; a code
    already covered is left alone, so a second run changes nothing. A line whose first
    ``# noqa`` is inside a string is left alone. Every line written must then suppress its
    codes as ``check`` reads the new text, and the new text must compile to the same program
    (its ``ast``); a line that does not is not written."""
    lines = split_lines(text)
    last, comments = _token_ranges(lines)
    wanted: dict[int, list[str]] = {}
    for number, code in found:
        target = last.get(number, number)
        if 0 < target <= len(lines):
            codes = wanted.setdefault(target, [])
            if code not in codes:
                codes.append(code)
    edits: dict[int, str] = {}
    for target, wanted_codes in sorted(wanted.items()):
        line = lines[target - 1]
        body = line.rstrip("\r\n")
        missing = [code for code in wanted_codes if not is_suppressed(code, body)]
        if missing:
            new = _with_codes(body, missing, comments.get(target))
            if new is not None:
                edits[target] = new + line[len(body) :]
    if not edits:
        return text, 0
    new_lines = list(lines)
    for target, new in edits.items():
        new_lines[target - 1] = new
    new_text = "".join(new_lines)
    if not _same_program(text, new_text):
        return text, 0
    covered = noqa_checker(new_text)
    for target in list(edits):
        if not all(covered(code, target) for code in wanted[target]):
            del edits[target]  # not read as a suppression: leave the line as it was
            new_lines[target - 1] = lines[target - 1]
    return "".join(new_lines), len(edits)


def _same_program(old: str, new: str) -> bool:
    """Whether ``new`` compiles to the same syntax tree as ``old`` (comments only differ)."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
