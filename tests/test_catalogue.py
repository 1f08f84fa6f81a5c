"""The fixture catalogue, checked through flake8's real plugin machinery and the core.

Cases are discovered from files (docs/catalogue.md): ``fixtures/catalogue/*.py`` with inline
``# TEMnnn:col`` markers, their expected fix outputs ``x.fixed`` (strategy ``none``),
``x.guard`` (strategy ``guard``) and ``x.unsafe`` (``--unsafe-fixes``),
``fixtures/options/*.py`` run with the flake8 arguments on their first line, and
``fixtures/errors/syntax_error.py``. Adding a case means adding a file.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
from helpers import te_lint_command
from markers import (
    expected_findings,
    flake8_args,
    read_text,
    settings_overrides,
)

from lint_rules.analysis import analyze_source, mentions_flag
from lint_rules.fixing import fix_source
from lint_rules.noqa import filter_noqa
from lint_rules.rules import FIXABLE_CODES, FLAG, MESSAGES
from lint_rules.settings import DEFAULT_SETTINGS, Settings, load_settings
from lint_rules.slotted import replace

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "fixtures" / "catalogue"
OPTIONS = ROOT / "fixtures" / "options"
SYNTAX_ERROR = ROOT / "fixtures" / "errors" / "syntax_error.py"

CASES = sorted(CATALOGUE.glob("*.py"))
OPTION_CASES = sorted(OPTIONS.glob("*.py"))
FIXED = sorted(CATALOGUE.glob("*.fixed"))
GUARDED = sorted(CATALOGUE.glob("*.guard"))
UNSAFE = sorted(CATALOGUE.glob("*.unsafe"))
GUARD_SETTINGS = replace(DEFAULT_SETTINGS, fix_strategy="guard")
UNSAFE_SETTINGS = replace(DEFAULT_SETTINGS, unsafe_fixes=True, unresolved="report")
"""``.unsafe`` files are what a strict user gets: every callee reported, unsafe fixes applied."""
STRICT_SETTINGS = replace(DEFAULT_SETTINGS, unresolved="report")

REPORT_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$"
)


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


@dataclass
class Report:
    """What one flake8 run printed, per file: (line, col, code) and the full messages."""

    returncode: int
    stdout: str
    stderr: str
    findings: dict[Path, set[tuple[int, int, str]]] = field(default_factory=dict)
    messages: dict[Path, set[tuple[int, int, str]]] = field(default_factory=dict)


def run_flake8(*args: str) -> Report:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    findings: dict[Path, set[tuple[int, int, str]]] = defaultdict(set)
    messages: dict[Path, set[tuple[int, int, str]]] = defaultdict(set)
    for line in proc.stdout.splitlines():
        match = REPORT_LINE.match(line)
        assert match, f"flake8 printed a line that is not `path:line:col: CODE message`: {line!r}"
        path = (ROOT / match["path"]).resolve()
        row, col, code = int(match["line"]), int(match["col"]), match["code"]
        findings[path].add((row, col, code))
        messages[path].add((row, col, f"{code} {match['text']}"))
    return Report(proc.returncode, proc.stdout, proc.stderr, dict(findings), dict(messages))


def describe(path: Path, expected: set, actual: set) -> str:
    """A readable diff of expected and reported findings, with the source lines."""
    lines = read_text(path).splitlines()
    out = [f"{path.relative_to(ROOT)}: flake8 disagrees with the inline markers"]
    for title, items in (("missing", expected - actual), ("unexpected", actual - expected)):
        for row, col, code in sorted(items):
            source = lines[row - 1].strip() if 0 < row <= len(lines) else "?"
            out.append(f"  {title}: {row}:{col} {code}   | {source}")
    return "\n".join(out)


def core_findings(text: str, settings: Settings, path: str = "-") -> set[tuple[int, int, str]]:
    """The core's unsuppressed findings as flake8 would print them: (line, col + 1, message
    with its evidence on the line, ``path`` as flake8 names the file)."""
    from lint_rules.flake8_plugin import flake8_message

    kept, _suppressed = filter_noqa(analyze_source(text, settings), text)
    return {(f.line, f.col + 1, flake8_message(f, path)) for f in kept}


def settings_for(path: Path) -> Settings:
    args = flake8_args(path)
    return load_settings(None, settings_overrides(args)) if args else DEFAULT_SETTINGS


@pytest.fixture(scope="session")
def catalogue_report() -> Report:
    """ONE flake8 run over the whole catalogue, as a user runs it."""
    report = run_flake8("--select", "TEM", str(CATALOGUE.relative_to(ROOT)))
    assert "Traceback" not in report.stderr, report.stderr
    assert report.returncode == 1, report.stderr
    return report


def test_catalogue_is_not_empty() -> None:
    assert len(CASES) >= 40 and FIXED and GUARDED and OPTION_CASES


def test_flake8_exit_code_says_there_are_findings(catalogue_report: Report) -> None:
    assert catalogue_report.returncode == 1
    assert not set(catalogue_report.findings) - set(CASES), "a report for a file outside the list"


# (a) flake8 over the catalogue agrees with the inline markers, file by file.
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_flake8_matches_markers(case: Path, catalogue_report: Report) -> None:
    expected = expected_findings(case)
    actual = catalogue_report.findings.get(case, set())
    assert actual == expected, describe(case, expected, actual)


@pytest.fixture(scope="session")
def strict_report() -> Report:
    """ONE flake8 run over the catalogue as a strict user runs it (``unresolved = "report"``)."""
    report = run_flake8(
        "--select", "TEM", "--te-unresolved=report", str(CATALOGUE.relative_to(ROOT))
    )
    assert "Traceback" not in report.stderr, report.stderr
    return report


# (a') strict: the ``strict:CODE:COL`` markers are reported too, by flake8 and by the core.
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_strict_matches_markers(case: Path, strict_report: Report) -> None:
    expected = expected_findings(case, strict=True)
    actual = strict_report.findings.get(case, set())
    assert actual == expected, describe(case, expected, actual)
    path = str(case.relative_to(ROOT))
    assert core_findings(read_text(case), STRICT_SETTINGS, path) == strict_report.messages.get(
        case, set()
    )


def test_some_findings_are_strict_only() -> None:
    quiet = [c for c in CASES if expected_findings(c, strict=True) - expected_findings(c)]
    assert len(quiet) >= 5


# (b) options fixtures: one flake8 run each, with the arguments on their first line.
@pytest.mark.parametrize("case", OPTION_CASES, ids=_ids(OPTION_CASES))
def test_options_fixture(case: Path) -> None:
    args = flake8_args(case)
    assert args, f"{case.name}: first line must be `# flake8-args: --te-...=...`"
    report = run_flake8("--select", "TEM", *args, str(case.relative_to(ROOT)))
    assert "Traceback" not in report.stderr, report.stderr
    expected = expected_findings(case)
    actual = report.findings.get(case, set())
    assert actual == expected, describe(case, expected, actual)
    assert report.returncode == (1 if expected else 0), report.stderr
    # the core with the same settings says the same thing (faces agree)
    path = str(case.relative_to(ROOT))
    assert core_findings(read_text(case), settings_for(case), path) == report.messages.get(
        case, set()
    )


# (c) a file that does not parse: flake8's own E999, no crash of the plugin.
def test_syntax_error_is_e999_without_traceback() -> None:
    report = run_flake8("--select", "TEM,E999", str(SYNTAX_ERROR.relative_to(ROOT)))
    codes = {code for found in report.findings.values() for _row, _col, code in found}
    assert codes == {"E999"}, report.stdout + report.stderr
    assert "Traceback" not in report.stdout + report.stderr
    assert report.returncode == 1
    with pytest.raises(SyntaxError):
        analyze_source(read_text(SYNTAX_ERROR))


def test_syntax_error_cli_check_exits_2() -> None:
    script = te_lint_command()
    proc = subprocess.run(
        [script, "check", str(SYNTAX_ERROR)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


# (d) the core used directly agrees with flake8 (positions, codes and messages).
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_core_agrees_with_flake8(case: Path, catalogue_report: Report) -> None:
    path = str(case.relative_to(ROOT))
    assert core_findings(read_text(case), DEFAULT_SETTINGS, path) == catalogue_report.messages.get(
        case, set()
    )


def _check_fix(source: Path, expected_path: Path, settings: Settings) -> None:
    text = read_text(source)
    expected = read_text(expected_path)
    result = fix_source(text, settings)
    assert result.text == expected, f"{expected_path.name}: fix output differs"
    assert result.changed
    again = fix_source(expected, settings)
    assert again.text == expected and not again.changed, f"{expected_path.name}: not idempotent"
    # What is left is left on purpose: an unsafe fix not asked for, or a noqa comment on a line
    # the fix would change.
    kept, _ = filter_noqa(analyze_source(expected, settings), expected)
    excused = {id(f) for f in again.unsafe + again.skipped}
    left = sorted(
        (f.line, f.col + 1, f.code)
        for f in again.remaining
        if f.code in FIXABLE_CODES and f.fix is not None and id(f) not in excused
    )
    assert not left, f"{expected_path.name}: fixable findings left after the fix: {left}"
    assert len(again.remaining) == len(kept)


# (e) strategy none: x.py -> x.fixed exactly, idempotent, nothing fixable left.
@pytest.mark.parametrize("expected", FIXED, ids=_ids(FIXED))
def test_fix_none(expected: Path) -> None:
    _check_fix(expected.with_suffix(".py"), expected, DEFAULT_SETTINGS)


# (f) strategy guard: x.py -> x.guard.
@pytest.mark.parametrize("expected", GUARDED, ids=_ids(GUARDED))
def test_fix_guard(expected: Path) -> None:
    _check_fix(expected.with_suffix(".py"), expected, GUARD_SETTINGS)


# (g) every message starts with its code, and every code is a known rule.
def test_messages_start_with_known_codes(catalogue_report: Report) -> None:
    seen = 0
    for messages in catalogue_report.messages.values():
        for _row, _col, message in messages:
            code = message.split(" ", 1)[0]
            assert code in MESSAGES, message
            seen += 1
    for case in CASES:
        for finding in analyze_source(read_text(case)):
            assert finding.code in MESSAGES, finding
            assert finding.message.startswith(finding.code + " "), finding.message
    assert seen


# Consistency of the catalogue itself.
@pytest.mark.parametrize("expected", FIXED + GUARDED + UNSAFE, ids=_ids(FIXED + GUARDED + UNSAFE))
def test_expected_output_has_a_source(expected: Path) -> None:
    assert expected.with_suffix(".py").is_file()


# (h) unsafe fixes: x.py -> x.unsafe with --unsafe-fixes; without x.unsafe the unsafe run
# must give x.fixed (nothing unsafe to apply), or leave the file alone when neither exists.
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_fix_unsafe(case: Path) -> None:
    unsafe, fixed = case.with_suffix(".unsafe"), case.with_suffix(".fixed")
    if unsafe.is_file():
        _check_fix(case, unsafe, UNSAFE_SETTINGS)
        return
    expected = read_text(fixed) if fixed.is_file() else read_text(case)
    assert fix_source(read_text(case), UNSAFE_SETTINGS).text == expected, (
        f"{case.name}: --unsafe-fixes changes more than {fixed.name}: write {unsafe.name}"
    )


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_unfixable_cases_are_left_alone(case: Path) -> None:
    """A case with fixable markers has ``x.fixed`` (or only ``x.unsafe``, when every fix is
    unsafe); the default fix leaves any other case alone."""
    fixable = {code for _row, _col, code in expected_findings(case) if code in FIXABLE_CODES}
    if fixable:
        assert case.with_suffix(".fixed").is_file() or case.with_suffix(".unsafe").is_file(), (
            f"{case.name} needs {case.stem}.fixed or {case.stem}.unsafe"
        )
    if case.with_suffix(".fixed").is_file():
        return
    text = read_text(case)
    for settings in (DEFAULT_SETTINGS, GUARD_SETTINGS):
        result = fix_source(text, settings)
        assert result.text == text and not result.changed


@pytest.mark.parametrize("case", CASES + OPTION_CASES, ids=_ids(CASES + OPTION_CASES))
def test_case_says_what_it_covers(case: Path) -> None:
    text = read_text(case)
    tree = ast.parse(text)
    first = text.lstrip().splitlines()[0]
    assert ast.get_docstring(tree) or first.startswith("#"), f"{case.name}: describe the shape"


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if FLAG.encode() not in c.read_bytes() and not mentions_flag(read_text(c))],
    ids=lambda p: p.name,
)
def test_files_without_the_flag_are_not_parsed(case: Path) -> None:
    with mock.patch.object(ast, "parse", side_effect=AssertionError("parsed")):
        assert analyze_source(read_text(case)) == []


def test_crlf_fixture_keeps_its_newlines() -> None:
    crlf = [c for c in CASES if b"\r\n" in c.read_bytes()]
    assert crlf, "the catalogue needs a CRLF case"
    for case in crlf:
        for expected in (case.with_suffix(".fixed"), case.with_suffix(".guard")):
            if expected.is_file():
                raw = expected.read_bytes()
                assert raw.count(b"\n") == raw.count(b"\r\n"), expected.name
