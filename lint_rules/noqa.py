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
from typing import Any

from lint_rules.findings import Finding, split_lines


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


def _noqa_line_mapping(lines: list[str]) -> dict[int, str]:
    """Map each line number to the text flake8 searches for ``noqa`` (its ``processor``)."""
    mapping: dict[int, str] = {}
    try:
        # One "\n" per physical line (CR-only and CRLF too): io.StringIO splits at "\n" only,
        # so a CR-only file would be one line and its noqa comments mapped to none.
        flat = (
            line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in lines
        )
        tokens = list(tokenize.generate_tokens(iter([*flat, ""]).__next__))
    except (tokenize.TokenError, SyntaxError, IndentationError):
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


def filter_noqa(
    findings: list[Finding], text: str, disable_noqa: bool = False
) -> tuple[list[Finding], list[Finding]]:
    """Split findings into (kept, suppressed) exactly as flake8 would."""
    if disable_noqa or not findings:
        return list(findings), []
    if "noqa" not in text.lower():
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
    if disable_noqa or "noqa" not in text.lower():
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


def _token_ranges(lines: list[str]) -> dict[int, int]:
    """For each line inside a multi-line token (string, continuation): the last line of that
    logical line, where a ``# noqa`` comment can go."""
    last: dict[int, int] = {}
    try:
        flat = (  # one "\n" per physical line, as in _noqa_line_mapping (CR-only files)
            line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in lines
        )
        tokens = list(tokenize.generate_tokens(iter([*flat, ""]).__next__))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    first = None
    for tok_type, _, (start_line, _), (end_line, _), _ in tokens:
        if tok_type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        first = start_line if first is None else first
        if tok_type in (tokenize.NL, tokenize.NEWLINE):
            for number in range(first, end_line + 1):
                last[number] = end_line
            first = None
    return last


def add_noqa(text: str, found: Iterable[tuple[int, str]]) -> tuple[str, int]:
    """``text`` with ``# noqa: CODE`` written for each ``(line, code)``: (new text, lines
    changed). The comment goes at the end of the logical line (after a multi-line string),
    codes join an existing ``# noqa: ...``; a code already covered is left alone, so a second
    run changes nothing."""
    lines = split_lines(text)
    last = _token_ranges(lines)
    wanted: dict[int, list[str]] = {}
    for number, code in found:
        target = last.get(number, number)
        if 0 < target <= len(lines):
            codes = wanted.setdefault(target, [])
            if code not in codes:
                codes.append(code)
    changed = 0
    for target, wanted_codes in sorted(wanted.items()):
        line = lines[target - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        missing = [code for code in wanted_codes if not is_suppressed(code, body)]
        if not missing:
            continue
        match = NOQA_INLINE.search(body)
        if match is not None and match.group("codes"):
            body = f"{body[: match.end()].rstrip(', ')}, {', '.join(missing)}{body[match.end() :]}"
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(missing)}"
        lines[target - 1] = body + ending
        changed += 1
    return "".join(lines), changed
