"""Property-based fuzzing of the analysis core and the fixer (hypothesis + hypothesmith).

For generated programs, and for generated programs with Transformer Engine calls spliced in:

* ``analyze_source`` never crashes (a SyntaxError only where ``ast.parse`` fails too), and every
  finding's position lies inside the text;
* ``fix_source`` output parses, is idempotent (fixing twice == fixing once), differs from the
  input only inside the edit ranges its applied findings report, never touches a finding that
  ``# noqa`` suppresses nor any line under a ``# noqa`` for the code it fixes, keeps every
  comment token of the input (values carry comments inside), applies only safe fixes unless
  asked for unsafe ones, and a program with nothing applied comes back byte-identical.

Budget and seed come from ``fuzz_profiles`` (``HYPOTHESIS_PROFILE=long`` for a local hunt).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

import hypothesmith
import pytest
from fuzz_profiles import fuzz_settings
from hypothesis import assume, event, example, given, note
from hypothesis import strategies as st

from lint_rules import analysis, fixing, noqa
from lint_rules.findings import Finding
from lint_rules.settings import DEFAULT_SETTINGS, Settings
from lint_rules.slotted import replace

pytestmark = [  # hypothesmith's own compile() check warns about odd generated code
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

GUARD_SETTINGS = Settings(fix_strategy="guard")
LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""Physical lines as ``ast`` counts them (str.splitlines also splits at \\x0c, \\u2028)."""


# ------------------------------------------------------------------------------- properties


def physical_lines(text: str) -> list[str]:
    return LINE_RE.findall(text)


def char_offset(lines: list[str], starts: list[int], line: int, byte_col: int) -> int:
    raw = lines[line - 1].encode("utf-8")
    assert 0 <= byte_col <= len(raw), f"column {byte_col} outside line {line} ({len(raw)} bytes)"
    head = raw[:byte_col]
    decoded = head.decode("utf-8")  # a column inside a multi-byte character is a bug
    return starts[line - 1] + len(decoded)


def offsets_of(text: str) -> tuple[list[str], list[int]]:
    lines = physical_lines(text) or [""]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return lines, starts


def check_positions(text: str, findings: list[Finding]) -> None:
    lines, starts = offsets_of(text)
    for f in findings:
        assert f.message.startswith(f.code), f
        assert 1 <= f.line <= f.end_line <= len(lines), f
        start = char_offset(lines, starts, f.line, f.col)
        end = char_offset(lines, starts, f.end_line, f.end_col)
        assert start <= end, f
        if f.fix is not None:
            for edit in f.fix.edits:
                a = char_offset(lines, starts, *edit.start)
                b = char_offset(lines, starts, *edit.end)
                assert a <= b, edit


def assert_changes_only_inside(old: str, new: str, applied: list[Finding]) -> None:
    """``new`` is ``old`` with only the applied edits' ranges replaced (by anything)."""
    lines, starts = offsets_of(old)
    spans = sorted(
        (char_offset(lines, starts, *e.start), char_offset(lines, starts, *e.end))
        for f in applied
        if f.fix is not None
        for e in f.fix.edits
    )
    assert spans, "findings were applied but reported no edit ranges"
    keep: list[str] = []
    cursor = 0
    for start, end in spans:
        keep.append(old[cursor : max(cursor, start)])
        cursor = max(cursor, end)
    keep.append(old[cursor:])
    # Each kept segment appears in order; the first anchors the start, the last the end.
    position = 0
    for index, segment in enumerate(keep):
        if index == 0:
            assert new.startswith(segment), "text before the first edit changed"
            position = len(segment)
        elif index == len(keep) - 1:
            assert new.endswith(segment) and len(new) - len(segment) >= position, (
                "text after the last edit changed"
            )
        else:
            found = new.find(segment, position)
            assert found >= 0, f"text between edits changed: {segment!r}"
            position = found + len(segment)


def comment_tokens(text: str) -> Counter[str]:
    """Every comment token of ``text`` (newlines normalised so that ``\\r`` splits lines)."""
    flat = text.replace("\r\n", "\n").replace("\r", "\n")
    tokens = tokenize.generate_tokens(io.StringIO(flat).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


def key(f: Finding) -> tuple[str, int, int]:
    return (f.code, f.line, f.col)


@dataclass
class Checked:
    findings: list[Finding]
    fixed: fixing.FixResult | None


def check_program(text: str, settings: Settings = DEFAULT_SETTINGS) -> Checked:
    note(f"program:\n{text!r}")
    try:
        findings = analysis.analyze_source(text, settings)
    except SyntaxError:
        with pytest.raises((SyntaxError, ValueError)):
            ast.parse(text)
        return Checked([], None)
    check_positions(text, findings)
    for code in sorted({f.code for f in findings}):
        event(f"finding {code}")

    result = fixing.fix_source(text, settings)  # FixError here is a failure
    note(f"fixed:\n{result.text!r}")
    ast.parse(result.text)
    again = fixing.fix_source(result.text, settings)
    assert again.text == result.text, "fix is not idempotent"
    assert not again.applied, f"second fix applied {again.applied}"

    event("fix applied" if result.applied else "nothing applied")
    lost = comment_tokens(text) - comment_tokens(result.text)
    assert not lost, f"comments lost: {sorted(lost)}"
    if not settings.unsafe_fixes:
        assert all(f.fix is not None and f.fix.applicability == "safe" for f in result.applied)
    suppressed_at = noqa.noqa_checker(text)
    for f in result.applied:
        assert f.fix is not None
        for e in f.fix.edits:
            for line in range(e.start[0], e.end[0] + 1):
                assert not suppressed_at(f.code, line), f"{f.code} fix touched a noqa line {line}"
    if not result.applied:
        assert result.text == text, "nothing applied but the text changed"
        assert not result.changed
    else:
        assert result.changed
        if settings.fix_strategy == "none":
            assert_changes_only_inside(text, result.text, result.applied)
        else:
            guard = settings.guard_import.rpartition(".")[2]
            assert len(re.findall(rf"\bimport\b[^\n\r]*\b{guard}\b", result.text)) <= 1

    kept, suppressed = noqa.filter_noqa(findings, text)
    touched = {key(f) for f in result.applied}
    assert not touched & {key(f) for f in suppressed}, "a # noqa finding was fixed"
    assert touched <= {key(f) for f in kept}
    old_lines, new_lines = physical_lines(text), physical_lines(result.text)
    if settings.fix_strategy == "none" and len(old_lines) == len(new_lines):
        # A noqa comment naming TEM001 protects TEM001 only: another code's fix may edit it.
        edited = {
            line
            for f in result.applied
            if f.fix is not None
            for e in f.fix.edits
            for line in range(e.start[0], e.end[0] + 1)
        }
        for f in suppressed:
            if f.line not in edited:
                assert old_lines[f.line - 1] == new_lines[f.line - 1], "a # noqa line changed"
    return Checked(findings, result)


# ------------------------------------------------------------------------- TE call strategy

IMPORT_STYLES = [
    ("import transformer_engine.pytorch as te\n", "te.{cls}", "te"),
    ("import transformer_engine as te\n", "te.pytorch.{cls}", "te.pytorch"),
    ("from transformer_engine.pytorch import {cls} as TEClass\n", "TEClass", None),
    ("from transformer_engine.pytorch.module.linear import Linear\n", "Linear", None),
    ("import transformer_engine.pytorch\n", "transformer_engine.pytorch.{cls}", None),
]
TE_CLASSES = ["Linear", "LayerNormLinear", "LayerNormMLP", "GroupedLinear"]

ATOMS = [
    "True",
    "False",
    "None",
    "self.flag",
    "flag",
    "i == 0",
    "self.get_flag()",
    "self.config.first",
    "ñame",
    "'é' == ñame",
    "microbatch_id == 0",
    "kwargs.get('is_first_microbatch')",
    "is_first_microbatch",
]
COMBINATORS = [
    "{a} if is_first_microbatch_tracked(self.config) else None",
    "None if not is_first_microbatch_tracked(self.config) else {a}",
    "{a} if {b} is not None else self.flag",
    "None if self.disable_cache else {a}",
    "{a} if is_first_microbatch_tracked(self.config) and {b} else None",
    "not {a}",
    "({a})",
    "{a} and {b}",
    "[{a}][0]",
    "(  # comment inside\n        {a}\n    )",
    "({a}  # inner one\n        and {b}  # inner two\n    )",
    "(\n        # own line\n        {a}\n        or {b}\n    )",
    "{a} if {b} else {a}",
    "lambda: {a}",
]


@st.composite
def values(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(ATOMS))
    template = draw(st.sampled_from(COMBINATORS))
    return template.format(a=draw(values(depth - 1)), b=draw(values(depth - 1)))


NOQA_TAILS = ["", "", "", "  # noqa", "  # noqa: TEM001", "  # noqa:TEM002,TEM003", "  # NOQA"]

SHAPES = [
    "y = self.{m}(x, is_first_microbatch={v}){q}",
    "y = self.{m}(\n    x,  # the input ü\n    is_first_microbatch={v},  # flag{q}\n)",
    "y = self.{m}(x, {v}){q}",
    "y = self.{m}(x, ({v}  # positional note\n    )){q}",
    "y = self.{m}(\n    x,\n    {v}  # positional value{q}\n    # between\n    , None,\n)",
    "y = self.{m}(x, is_first_microbatch={v}  # kw note\n    ){q}",
    "y = self.{m}(x, {v}, None){q}",
    "y = self.{m}(x, m_splits, {v}){q}",
    'kw = {{"is_first_microbatch": {v}}}{q}\ny = self.{m}(x, **kw)',
    'kw = {{}}\nkw["is_first_microbatch"] = {v}{q}\ny = self.{m}(x, **kw)',
    "kw = dict(is_first_microbatch={v}){q}\ny = self.{m}(x, **kw)",
    "fc = {ctor}(4, 4)\ny = fc(x, is_first_microbatch={v}){q}",
    "for _ in range(2):\n    y = self.{m}(y, is_first_microbatch={v}){q}",
    "f = lambda v: self.{m}(v, is_first_microbatch={v}){q}\ny = f(x)",
    "if is_first_microbatch_tracked(self.config):\n    y = self.{m}(x, is_first_microbatch={v}){q}",
    "y = self.{m}.forward(x, is_first_microbatch={v}){q}",
    "y = {ctor}.forward(self.{m}, x, {v}){q}",
    "for layer in self.layers:\n    y = layer(y, is_first_microbatch={v}){q}",
    "y = self.layers[i](y, is_first_microbatch={v}){q}",
    "y = self.{m}(x, \\\n    is_first_microbatch={v}){q}",
    "y = self.{m}(is_first_microbatch={v}, *args){q}",
    "y = g(self.{m}(x, is_first_microbatch={v}), key=(self.{m}(x, is_first_microbatch={v})))",
    "ü = 1; y = self.{m}(x, is_first_microbatch={v}){q}",
    "y = forward_step(x, is_first_microbatch={v}){q}",
    "y = self.forward_internal(x, is_first_microbatch={v}){q}",
    "y = unknown_thing(x, is_first_microbatch={v}){q}",
    "y = self.{m}(x, is_first_microbatch={v}) if x is not None else None{q}",
    "y = [self.{m}(t, is_first_microbatch={v}) for t in x]{q}",
    "with self.ctx(is_first_microbatch={v}):{q}\n    y = x",
]
TE_SCOPED_SHAPES = [
    "with {te}.fp8_autocast(enabled=True, is_first_microbatch={v}):{q}\n    y = x",
    "norm = {te}.LayerNorm(4)\ny = norm(x, is_first_microbatch={v}){q}",
]
ATTRIBUTE_NAMES = ["fc", "proj", "линейный", "fc_é"]


def indent(block: str, unit: str, levels: int) -> str:
    pad = unit * levels
    return "".join(pad + line if line.strip() else line for line in block.splitlines(True))


@st.composite
def te_programs(draw: st.DrawFn, filler: st.SearchStrategy[str] | None = None) -> str:
    """A module with a TE-using class, a few call shapes, and optional generated code."""
    header, ctor_template, te_name = draw(st.sampled_from(IMPORT_STYLES))
    cls = draw(st.sampled_from(TE_CLASSES))
    if "Linear\n" in header:
        cls = "Linear"
    ctor = ctor_template.format(cls=cls)
    header = header.format(cls=cls)
    unit = draw(st.sampled_from(["    ", "\t", "  "]))
    attribute = draw(st.sampled_from(ATTRIBUTE_NAMES))
    shapes = SHAPES + (TE_SCOPED_SHAPES if te_name else [])
    body = []
    for _ in range(draw(st.integers(1, 4))):
        shape = draw(st.sampled_from(shapes))
        body.append(
            shape.format(
                m=attribute,
                v=draw(values()),
                q=draw(st.sampled_from(NOQA_TAILS)),
                ctor=ctor,
                te=te_name or "te",
            )
        )
    prefix = draw(filler) if filler is not None else ""
    inner = draw(filler) if filler is not None and draw(st.booleans()) else ""
    subclass = draw(st.booleans())
    lines = [
        header,
        "import torch\n",
        "from megatron.core.transformer.module import is_first_microbatch_tracked\n"
        if draw(st.booleans())
        else "",
        prefix + ("\n" if prefix and not prefix.endswith(("\n", "\r")) else ""),
        "\n\n",
        f"class Block({ctor if subclass else 'torch.nn.Module'}):\n",
        indent("def __init__(self, config=None):\n", unit, 1),
        indent("super().__init__()\n", unit, 2),
        indent(f"self.{attribute} = {ctor}(4, 4)\n", unit, 2),
        indent(f"self.layers = torch.nn.ModuleList([{ctor}(4, 4) for _ in range(2)])\n", unit, 2),
        indent("self.flag = True\n", unit, 2),
        "\n",
        indent("def forward(self, x, flag=None, i=0, m_splits=None, *args, **kwargs):\n", unit, 1),
        indent(inner + ("\n" if inner and not inner.endswith("\n") else ""), unit, 2),
        indent("".join(b + "\n" for b in body), unit, 2),
        indent("return y\n", unit, 2),
    ]
    if subclass:
        lines.append(
            indent(
                "\ndef forward2(self, x):\n"
                f"    return super().forward(x, is_first_microbatch={draw(values())})\n",
                unit,
                1,
            )
        )
    if draw(st.booleans()):  # no `self` in scope: the guard strategy must fall back to None
        lines.append(
            "\n\ndef helper(x, fc=None):\n"
            f"{unit}local = {ctor}(4, 4)\n"
            f"{unit}y = local(x, is_first_microbatch={draw(values())})\n"
            f"{unit}return fc(y, is_first_microbatch={draw(values())})\n"
        )
    text = "".join(lines)
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    if newline != "\n":
        text = text.replace("\n", newline)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no newline at the end of the file
    return text


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------------ tests


@fuzz_settings(0.5)
@given(hypothesmith.from_grammar())
def test_generated_programs(source: str) -> None:
    # A keyword in a comment defeats the byte prefilter, so the whole program is analysed.
    checked = check_program(source + "\n# is_first_microbatch\n")
    assert checked.fixed is None or not checked.fixed.applied or "is_first_microbatch" in source


@pytest.mark.slow
@fuzz_settings(0.5)
@given(hypothesmith.from_node())
def test_generated_modules(source: str) -> None:
    check_program("# is_first_microbatch\n" + source)


@pytest.mark.slow
@fuzz_settings(3.0)
@given(te_programs())
@example(
    "import transformer_engine.pytorch as te\n\x0c\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n    def forward(self, x):  # \u2028 \x1c\n"
    "        return self.fc(x, is_first_microbatch=True)\n"
)
@example(  # parenthesised positional flag: the keyword form must replace the parentheses too
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n\n    def forward(self, x):\n"
    "        y = self.fc(x, (self.flag))\n"
    "        return self.fc(y, is_first_microbatch=None)\n"
)
def test_te_programs(source: str) -> None:
    assume(parses(source))
    checked = check_program(source)
    assert checked.fixed is not None


@pytest.mark.slow
@fuzz_settings(0.5)
@given(te_programs(filler=hypothesmith.from_node(auto_target=False)))
def test_te_programs_with_generated_code(source: str) -> None:
    assume(parses(source))
    check_program(source)


@fuzz_settings(1.5)
@given(te_programs())
def test_te_programs_guard_strategy(source: str) -> None:
    assume(parses(source))
    check_program(source, GUARD_SETTINGS)


@fuzz_settings(1.0)
@given(te_programs())
def test_te_programs_unsafe_fixes(source: str) -> None:
    assume(parses(source))
    check_program(source, replace(DEFAULT_SETTINGS, unsafe_fixes=True))


@fuzz_settings(1.5)
@given(te_programs(), st.data())
def test_unparsable_variants_are_syntax_errors(source: str, data: st.DataObject) -> None:
    """Truncate or corrupt a TE program: analysis raises SyntaxError only when ast does."""
    cut = data.draw(st.integers(0, len(source)))
    junk = data.draw(st.sampled_from(["", "(", ")", ":", "\\", "'''", "\t", "print 'x'", "é"]))
    broken = source[:cut] + junk + source[cut:]
    try:
        analysis.analyze_source(broken)
    except SyntaxError:
        assert not parses(broken)
        return
    if "is_first_microbatch" in broken and parses(broken):
        check_program(broken)
