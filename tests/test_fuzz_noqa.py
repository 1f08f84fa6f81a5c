"""``check --add-noqa`` under the fuzz profile: generated TE modules with noqa comments of
other tools (with reasons), strings that spell ``# noqa``, multi-line and triple-quoted
f-strings around the flagged call, LF, CRLF and CR newlines.

Each output has the same syntax tree as its input, compiles, suppresses what it was written
for (as ``check`` reads it), and a second run changes nothing. Both grammars are held: the
output is written by this Python and by one across Python 3.12's f-string change (PEP 701,
``helpers.other_grammar_python``), and each output compiles under both wherever the input
does. ``HYPOTHESIS_PROFILE=long`` runs the long hunt (``fuzz_profiles``).
"""

from __future__ import annotations

import ast

import pytest
from fuzz_profiles import fuzz_settings
from helpers import on_other_grammar, other_grammar_python
from hypothesis import assume, example, given, note
from hypothesis import strategies as st
from test_fuzz import parses, te_programs

from lint_rules import analysis
from lint_rules.noqa import add_noqa, filter_noqa
from lint_rules.settings import DEFAULT_SETTINGS

pytestmark = [
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

OTHER = other_grammar_python()
TAILS = [
    "",
    "  # noqa: E501",
    "  # noqa: E501 80+ chars ok",
    "  # noqa:E501,long line",
    "  # noqa: E501, W291  # another comment",
    "  # type: ignore",
    "  # a plain comment",
    "  # noqa",
    ", '# noqa: E501'",
    ', "x # noqa"',
]
WRAPS = [
    "{call}",
    'f"""{{{call}}}"""',
    'f"""{{{call_broken}\n}}"""',
    'f"{{{call}!r:>10}}"',
    "(\n    {call}\n)",
]


@st.composite
def noqa_programs(draw: st.DrawFn) -> str:
    source = draw(te_programs())
    newline = "\r\n" if "\r\n" in source else "\r" if "\r" in source else "\n"
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for at, line in enumerate(lines):
        body = line.rstrip()
        if "is_first_microbatch=" not in body or not body.endswith(")") or "#" in body:
            continue
        pad = body[: len(body) - len(body.lstrip())]
        head, eq, call = body.strip().partition(" = ")
        if not eq:
            head, eq, call = body.strip().partition(" ")
            eq = " " if head == "return" else ""
        if not eq or call.count("(") != call.count(")") or draw(st.integers(0, 3)) == 0:
            continue
        wrap = draw(st.sampled_from(WRAPS))
        broken = call[:-1] + ",\n" + pad + "    )" if call.endswith(")") else call
        value = wrap.format(call=call, call_broken=broken).replace("\n", "\n" + pad)
        lines[at] = f"{pad}{head}{' = ' if eq == ' = ' else ' '}{value}"
        lines[at] += draw(st.sampled_from(TAILS))
    return "\n".join(lines).replace("\n", newline)


def found_in(text: str) -> list[tuple[int, str]]:
    findings = analysis.analyze_source(text, DEFAULT_SETTINGS)
    kept, _ = filter_noqa(findings, text)
    return [(f.line, f.code) for f in kept]


def check_add_noqa(source: str) -> None:
    assume(parses(source))
    note(f"program:\n{source!r}")
    found = found_in(source)
    new, changed = add_noqa(source, found)
    note(f"with noqa:\n{new!r}")
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(source))
    compile(new.encode("utf-8"), "<noqa>", "exec", dont_inherit=True)
    left = found_in(new)
    assert add_noqa(new, left) == (new, 0), "not idempotent"
    written = {line for line, _ in found} & {
        n for n, (a, b) in enumerate(zip(source.splitlines(), new.splitlines()), 1) if a != b
    }
    assert not {line for line, _ in left} & written, "a written line does not suppress"
    if OTHER is not None:
        there = on_other_grammar(OTHER, source, [new], found)
        if there["input"]:
            assert there["ours"] == [True], f"does not compile on {OTHER}"
        theirs = there["theirs"]
        if theirs is not None:
            assert ast.dump(ast.parse(theirs)) == ast.dump(ast.parse(source))
            compile(theirs.encode("utf-8"), "<noqa>", "exec", dont_inherit=True)


REVIEW = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    '        return f"""{self.fc(x, is_first_microbatch=self.flag,\n        )}"""\n'
)


@pytest.mark.slow
@fuzz_settings(1.0)  # 60 examples in CI; HYPOTHESIS_PROFILE=long: 3,000, the hunt
@given(noqa_programs())
def test_add_noqa_on_the_review_profile(source: str) -> None:
    check_add_noqa(source)


@fuzz_settings(0.1)
@given(noqa_programs())
@example(REVIEW)
@example(REVIEW.replace("\n", "\r"))
@example(REVIEW.replace('f"""{self', "(self").replace(')}"""', "), '# noqa: E501'"))
@example(REVIEW.replace('f"""{self', "(self").replace(')}"""', ")  # noqa: E501 80+ chars ok"))
def test_add_noqa_on_the_review_profile_quick(source: str) -> None:
    check_add_noqa(source)


def test_the_other_grammar_is_checked() -> None:
    """Say so when only one grammar is held (no interpreter across 3.12 is installed)."""
    if OTHER is None:
        pytest.skip("no Python on the other side of 3.12 installed: one grammar checked")
