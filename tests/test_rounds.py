"""How many times a cross-file run analyses each file (``analysis.run``).

``fixtures/rounds/pkg``: ``layers.py`` (imports TE) defines ``Base``; ``mid.py`` subclasses
it; ``sub/__init__.py`` passes ``mid.Mid`` on; ``user.py`` exports a subclass of ``Base`` and
one of ``Mid`` taken through ``pkg.sub`` (and reads ``mid.Mid`` directly); ``plain.py`` uses
``Mid`` and exports nothing. After the first pass, ``sub/__init__.py`` and ``user.py`` both
read entries that changed, and both export: ``sub/__init__.py`` is analysed again first,
because ``user.py`` reads what it exports, so ``user.py`` is analysed again once, not twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markers import expected_findings

import lint_rules.analysis
from lint_rules.cli import command

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = ROOT / "fixtures" / "rounds"


def findings(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, set]:
    command.main(["check", "--isolated", "--no-cache", "--format", "json", *args, str(ROUNDS)])
    found: dict[str, set] = {}
    for row in json.loads(capsys.readouterr().out or "[]"):
        path = str(Path(row["path"]).resolve().relative_to(ROUNDS))
        found.setdefault(path, set()).add((row["line"], row["column"], row["code"]))
    return found


def test_a_chain_through_a_package_is_followed_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    analysed: list[str] = []
    analyze = lint_rules.analysis.analyze_source

    def recording(text: str, *args: object, **kwargs: object) -> list:
        analysed.append(text)
        return analyze(text, *args, **kwargs)

    monkeypatch.setattr(lint_rules.analysis, "analyze_source", recording)
    found = findings(capsys, "--jobs", "1")
    expected = {
        str(path.relative_to(ROUNDS)): expected_findings(path)
        for path in sorted(ROUNDS.rglob("*.py"))
        if expected_findings(path)
    }
    assert found == expected and set(found) == {"pkg/user.py", "pkg/plain.py"}
    texts = {str(p.relative_to(ROUNDS)): p.read_text() for p in ROUNDS.rglob("*.py")}
    times = {name: analysed.count(text) for name, text in texts.items()}
    # Each file once in the first pass; then the package, user.py (once, after the package)
    # and plain.py, which reads what user.py's second analysis could change nothing of.
    assert times == {
        "pkg/__init__.py": 0,  # empty: it fails the prefilter
        "pkg/layers.py": 1,
        "pkg/mid.py": 1,
        "pkg/sub/__init__.py": 2,
        "pkg/user.py": 2,
        "pkg/plain.py": 2,
    }


def test_the_same_findings_with_a_pool(capsys: pytest.CaptureFixture[str]) -> None:
    pooled = findings(capsys, "--jobs", "2")
    assert pooled == findings(capsys, "--jobs", "1")
    assert pooled == {  # the marked ones: not two runs that lost them alike
        str(path.relative_to(ROUNDS)): expected_findings(path)
        for path in sorted(ROUNDS.rglob("*.py"))
        if expected_findings(path)
    }
    assert pooled
