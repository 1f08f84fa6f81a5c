"""No fix leaves a new pyflakes warning (docs/fixes.md): every expected output of the catalogue
(``x.fixed``, ``x.guard``, ``x.unsafe``) has no pyflakes warning that ``x.py`` lacks, and fixes
that together drop every read of a local delete it with them (one shared fix)."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest
from markers import read_text
from pyflakes.api import check
from pyflakes.reporter import Reporter

from lint_rules.analysis import analyze_source
from lint_rules.fixing import fix_source
from lint_rules.settings import DEFAULT_SETTINGS
from lint_rules.slotted import replace

CATALOGUE = Path(__file__).resolve().parent.parent / "fixtures" / "catalogue"
OUTPUTS = sorted(p for ext in ("fixed", "guard", "unsafe") for p in CATALOGUE.glob(f"*.{ext}"))
UNSAFE = replace(DEFAULT_SETTINGS, unsafe_fixes=True, unresolved="report")


def warnings_of(text: str) -> Counter[str]:
    """pyflakes' warnings without their places (lines move when a fix deletes one)."""
    out, err = io.StringIO(), io.StringIO()
    check(text, "m.py", Reporter(out, err))
    return Counter(
        re.sub(r"line \d+", "line N", line.split(":", 3)[-1].strip())
        for line in out.getvalue().splitlines()
    )


@pytest.mark.parametrize("output", OUTPUTS, ids=[p.name for p in OUTPUTS])
def test_catalogue_fix_adds_no_pyflakes_warning(output: Path) -> None:
    """A safe fix adds none; an unsafe one (``x.unsafe``) only the unused local its note names
    (``leaves `flag` assigned and never used``: the local could not go)."""
    source = read_text(output.with_suffix(".py"))
    new = warnings_of(read_text(output)) - warnings_of(source)
    if output.suffix == ".unsafe":
        notes = fix_source(source, UNSAFE).notes
        for name in re.findall(r"leaves `(\w+)` assigned and never used", " ".join(notes)):
            new.pop(f"local variable '{name}' is assigned to but never used", None)
    assert not new, f"{output.name}: new pyflakes warnings {dict(new)}"


HEAD = (
    "import transformer_engine.pytorch as te\n\n\nclass Block:\n    def __init__(self):\n"
    "        self.fc1 = te.Linear(4, 4)\n        self.fc2 = te.Linear(4, 4)\n"
    "        self.mb_count = 0\n\n    def forward(self, x, **kwargs):\n"
    "        first = self.mb_count == 0\n"
)
BOTH = (
    "        y = self.fc1(x, is_first_microbatch=first)\n"
    "        y = self.fc2(y, is_first_microbatch=first)\n        return y\n"
)


def test_reads_fixed_together_share_one_fix() -> None:
    """Both findings carry the same fix: both reads and the assignment (line 11)."""
    findings = analyze_source(HEAD + BOTH)
    assert [(f.code, f.line) for f in findings] == [("TEM001", 12), ("TEM001", 13)]
    first, second = (f.fix for f in findings)
    assert first is not None and first == second and first.applicability == "safe"
    assert {edit.start[0] for edit in first.edits} == {11, 12, 13}
    result = fix_source(HEAD + BOTH)
    assert not re.search(r"\bfirst\b", result.text) and len(result.applied) == 2
    assert not warnings_of(result.text)
    assert fix_source(result.text).text == result.text


def test_shared_fix_is_unsafe_when_a_part_is() -> None:
    """One read goes into a mapping that is also passed elsewhere (an unsafe fix: the edit
    reaches the other call): the shared fix is unsafe, so ``fix`` applies none of it, and
    ``--unsafe-fixes`` applies all of it, the local with it."""
    text = HEAD + (
        "        y = self.fc1(x, is_first_microbatch=first)\n"
        "        kwargs['is_first_microbatch'] = first\n"
        "        y = self.fc2(y, **kwargs)\n        print(kwargs)\n        return y\n"
    )
    findings = [f for f in analyze_source(text) if f.fix is not None]
    assert len(findings) == 2 and {f.fix.applicability for f in findings} == {"unsafe"}
    assert fix_source(text).text == text
    unsafe = fix_source(text, replace(DEFAULT_SETTINGS, unsafe_fixes=True))
    assert not re.search(r"\bfirst\b", unsafe.text)
    assert not warnings_of(unsafe.text)


def test_shared_fix_waits_for_every_finding_selected() -> None:
    """With one of the codes not selected, its read is not fixed, so neither is the other."""
    text = HEAD + (
        "        y = self.fc1(x, is_first_microbatch=first)\n"
        "        y = self.fc2(y, first)\n        return y\n"
    )
    assert fix_source(text).text.count("None") == 2
    only = replace(DEFAULT_SETTINGS, select=("TEM001",))
    result = fix_source(text, only)
    assert result.text == text and not result.changed
    assert any("goes with TEM002 on line 13" in note for note in result.notes), result.notes


def test_two_locals_dropped_by_one_fix() -> None:
    """``first if ready else None`` becoming None drops the only reads of two locals: both go,
    in one fix."""
    text = HEAD.replace("**kwargs", "ok") + (
        "        ready = ok\n"
        "        return self.fc1(x, is_first_microbatch=first if ready else None)\n"
    )
    result = fix_source(text)
    assert "is_first_microbatch=None" in result.text
    assert not re.search(r"\b(first|ready|flag) =", result.text), result.text
    assert not warnings_of(result.text), result.text


def test_local_read_only_by_a_folded_assignment() -> None:
    """Folding ``flag = first`` drops the only read of ``first``, which goes in its turn."""
    text = HEAD + ("        flag = first\n        return self.fc1(x, is_first_microbatch=flag)\n")
    result = fix_source(text)
    assert "is_first_microbatch=None" in result.text
    assert not re.search(r"\b(first|ready|flag) =", result.text), result.text
    assert not warnings_of(result.text), result.text
