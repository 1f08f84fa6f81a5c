"""``findings.split_lines``: the physical lines Python's tokenizer sees, with their endings;
only ``\\r\\n``, ``\\r`` and ``\\n`` end a line (never a form feed, ``\\x85`` or U+2028, which
``str.splitlines`` would split at and so shift every ``ast`` line number after them)."""

from __future__ import annotations

import ast

from hypothesis import example, given
from hypothesis import strategies as st

from lint_rules.findings import split_lines

TEXTS = st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\f", "\x85", "\u2028", "\u00e9"]))


def _reference(text: str) -> list[str]:
    """The definition, character by character."""
    lines, current, at = [], "", 0
    while at < len(text):
        char = text[at]
        current += char
        if char == "\r" and text[at + 1 : at + 2] == "\n":
            current += "\n"
            at += 1
        if char in "\r\n":
            lines.append(current)
            current = ""
        at += 1
    return [*lines, current] if current else lines


@given(TEXTS)
@example("")
@example("a\n")
@example("a\nb")
@example("a\r\nb\rc\n\x0c\n")
def test_lines_end_only_where_python_ends_them(text: str) -> None:
    assert split_lines(text) == _reference(text)


def test_line_numbers_are_those_of_ast() -> None:
    text = "x = 1\n\x0cy = 2  # \x85\nz = '\u2028'\r\nw = 4\rv = 5"
    lines = split_lines(text)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign):
            name = node.targets[0]
            assert isinstance(name, ast.Name)
            assert f"{name.id} =" in lines[node.lineno - 1]
