"""A finding's evidence in every face: text ``note:`` lines, one line for scripts and flake8,
JSON ``evidence``, and ``explain``'s whole life (SARIF: tests/test_sarif.py).

Findings are built here with their evidence, so the faces are tested whatever the analysis
fills in.
"""

from __future__ import annotations

import json

from lint_rules.cli.aids import explain_text
from lint_rules.cli.formats import format_json, format_text
from lint_rules.cli.reporting import reported_findings as _reported
from lint_rules.findings import Evidence, Finding
from lint_rules.flake8_plugin import flake8_message
from lint_rules.oneline import LINE_LIMIT, MAX_STEPS

SOURCE = "x = 1\n" * 30
MESSAGE = "TEM001 untracked flag to TE Linear `self.fc`: pass None or guard it"


def finding(*steps: Evidence) -> Finding:
    return Finding("TEM001", MESSAGE, 20, 4, 20, 10, evidence=steps)


LIFE = (
    Evidence("set True in `__init__`", 12, 8),
    Evidence("set False after forward", 24, 8),
    Evidence(
        "re-armed by `set_is_first_microbatch` only if `self.config.fp8`", 94, 8, "pkg/module.py"
    ),
    Evidence("re-arming not seen in this file"),
)


def reported(*steps: Evidence, path: str = "pkg/layer.py"):
    return _reported(path, SOURCE, [finding(*steps)])


def test_text_puts_each_step_on_a_note_line() -> None:
    text = format_text(reported(*LIFE))
    assert text.splitlines() == [
        f"pkg/layer.py:20:5: {MESSAGE}",
        "  note: pkg/layer.py:12: set True in `__init__`",
        "  note: pkg/layer.py:24: set False after forward",
        "  note: pkg/module.py:94: re-armed by `set_is_first_microbatch` only if `self.config.fp8`",
        "  note: re-arming not seen in this file",
    ]
    assert format_text(reported()) == f"pkg/layer.py:20:5: {MESSAGE}\n"  # no evidence: flake8's


def test_concise_is_one_line_per_finding_and_flake8s_line() -> None:
    text = format_text(reported(*LIFE[:2]), concise=True)
    assert text == (
        f"pkg/layer.py:20:5: {MESSAGE} (set True in `__init__` (:12); set False after forward "
        "(:24))\n"
    )
    assert text == f"pkg/layer.py:20:5: {flake8_message(finding(*LIFE[:2]), 'pkg/layer.py')}\n"
    whole = format_text(reported(*LIFE), concise=True)
    assert whole == f"pkg/layer.py:20:5: {flake8_message(finding(*LIFE), 'pkg/layer.py')}\n"


def test_the_one_line_form_is_bounded() -> None:
    """flake8's line stays within ``LINE_LIMIT`` (the path, position and message counted): the
    steps that fit, then how many more and where they are all printed."""
    many = tuple(Evidence(f"step {n} " + "x" * 40, n + 1) for n in range(12))
    line = "pkg/layer.py:20:5: " + flake8_message(finding(*many), "pkg/layer.py")
    assert len(line) <= LINE_LIMIT
    assert line.count("; ") <= MAX_STEPS
    assert "`te-microbatch-lint explain pkg/layer.py:20`" in line and "\n" not in line
    tiny = tuple(Evidence(f"s{n}", n + 1) for n in range(12))
    short = "a.py:20:5: " + flake8_message(finding(*tiny), "a.py")
    tail = "(s0 (:1); s1 (:2); s2 (:3); +9 more: `te-microbatch-lint explain a.py:20`)"
    assert short.endswith(tail)
    assert len(short) <= LINE_LIMIT
    assert len(format_text(reported(*LIFE), concise=True).rstrip("\n")) <= LINE_LIMIT


def test_json_lists_the_evidence_with_every_path_filled() -> None:
    (row,) = json.loads(format_json(reported(*LIFE)))
    assert row["evidence"] == [
        {"path": "pkg/layer.py", "line": 12, "column": 9, "message": "set True in `__init__`"},
        {"path": "pkg/layer.py", "line": 24, "column": 9, "message": "set False after forward"},
        {
            "path": "pkg/module.py",
            "line": 94,
            "column": 9,
            "message": "re-armed by `set_is_first_microbatch` only if `self.config.fp8`",
        },
        {
            "path": "pkg/layer.py",
            "line": None,
            "column": None,
            "message": "re-arming not seen in this file",
        },
    ]
    assert row["message"] == MESSAGE.split(" ", 1)[1]


def test_explain_prints_the_whole_life(tmp_path) -> None:
    path = tmp_path / "layer.py"
    path.write_text(SOURCE, encoding="utf-8")
    found = _reported(str(path), SOURCE, [finding(*LIFE)])
    text = explain_text(found, str(path), 20)
    assert text.splitlines()[1:6] == [
        "  the flag's life:",
        f"  1. {path}:12: set True in `__init__`",
        f"  2. {path}:24: set False after forward",
        "  3. pkg/module.py:94: re-armed by `set_is_first_microbatch` only if `self.config.fp8`",
        "  4. re-arming not seen in this file",
    ]
    assert explain_text(found, str(path), 21) == ""


def test_a_one_line_finding_never_drops_the_condition_that_decides_its_verdict() -> None:
    """flake8's line stays within about 160 characters, but a re-arm's condition is what makes
    a verdict conditional: when even it does not fit, its first clause is kept."""
    from lint_rules.oneline import with_evidence

    message = "TEM001 " + "m" * 120
    steps = [
        "`f` set to True in `C.__init__` (:3)",
        "re-armed (True) by `M.set` only if `self.config.fp8 is not None or self.config.fp4 "
        "is not None or getattr(self.config, 'use_kitchen', False)` (module.py:123)",
        "`set` is called from `step` (schedules.py:9)",
    ]
    line = with_evidence(message, steps, "te-microbatch-lint explain m.py:1", prefix=50)
    assert line == f"{message} (re-armed only if `self.config.fp8 is not None …`; +2 more)"
    short = with_evidence("TEM001 m", steps[:1], "x", prefix=10)  # room: everything shown
    assert short == "TEM001 m (`f` set to True in `C.__init__` (:3))"
