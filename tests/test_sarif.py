"""SARIF as GitHub code scanning reads it, validated against the SARIF 2.1.0 schema.

The schema is the OASIS one (``tests/data/sarif-schema-2.1.0.json``, from the SARIF TC's
repository, ``sarif-2.1/schema/sarif-schema-2.1.0.json``). Code scanning also wants: ``help``
on each rule, a plain-text ``fullDescription`` of at most 1,024 characters, ``name`` the
rule's name, and ``partialFingerprints.primaryLocationLineHash`` computed as GitHub's upload
action computes it (checked here on the test vectors GitHub publishes for that function).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from lint_rules.cli.reporting import reported_findings as _reported
from lint_rules.cli.sarif import FULL_DESCRIPTION_LIMIT, format_sarif, line_hashes
from lint_rules.findings import Evidence, Finding
from lint_rules.rules import RULES

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cli" / "project"

SOURCE = """\
import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)
        self.flag = True

    def forward(self, x):
        y = self.fc(x, is_first_microbatch=self.flag)
        self.flag = False
        return y
"""


def validate(log: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["c129715d7a2bc9a3:1"]),
        (
            " a\nb\n  \t\tc\n d",
            ["271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"],
        ),
        (
            " hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n",
            [
                "e9496ae3ebfced30:1",
                "fb7c023a8b9ccb3f:1",
                "ce8ba1a563dcdaca:1",
                "e20e36e16fcb0cc8:1",
                "b3edc88f2938467e:1",
                "c8e28b0b4002a3a0:1",
                "c129715d7a2bc9a3:1",
            ],
        ),
        (
            "Lorem ipsum dolor sit amet.\n" * 10,
            [
                *(f"a7f2ff13bc495cf2:{n}" for n in range(1, 7)),
                "a7f2ff1481e87703:1",
                "a9cf91f7bbf1862b:1",
                "55ec222b86bcae53:1",
                "cc97dc7b1d7d8f7b:1",
                "c129715d7a2bc9a3:1",
            ],
        ),
    ],
)
def test_line_hash_is_githubs(text: str, expected: list[str]) -> None:
    assert line_hashes(text) == dict(enumerate(expected, 1))


def _log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, findings: list[Finding]) -> dict:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "block.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pkg" / "base.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    reported = _reported("pkg/block.py", SOURCE, findings)
    return json.loads(format_sarif(reported, []))


def finding_with_evidence() -> Finding:
    return Finding(
        "TEM001",
        "TEM001 untracked flag to TE Linear `self.fc`: pass None or guard it",
        10,
        23,
        10,
        48,
        verdict="stale",
        evidence=(
            Evidence("set True in `__init__`", 7, 8),
            Evidence("set False after forward", 11, 8),
            Evidence("never re-armed in the files seen"),
            Evidence("base class defined here", 1, 0, "pkg/base.py"),
        ),
    )


def test_sarif_validates_and_has_what_code_scanning_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path, monkeypatch, [finding_with_evidence()])
    validate(log)
    run = log["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    for code, rule in RULES.items():
        shown = rules[code]
        assert shown["name"] == rule.name
        assert shown["help"]["text"] and shown["help"]["markdown"] == rule.explanation.strip()
        full = shown["fullDescription"]["text"]
        assert 0 < len(full) <= FULL_DESCRIPTION_LIMIT
        assert "`" not in full and not re.search(r"\*\*[A-Z]", full)  # no Markdown left
        assert "```" not in shown["help"]["text"]
    (result,) = run["results"]
    expected = line_hashes(SOURCE)[10]
    assert result["partialFingerprints"]["primaryLocationLineHash"] == expected


def test_evidence_is_related_locations_and_a_code_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path, monkeypatch, [finding_with_evidence()])
    (result,) = log["runs"][0]["results"]
    related = result["relatedLocations"]
    assert [r["message"]["text"] for r in related] == [
        "set True in `__init__`",
        "set False after forward",
        "never re-armed in the files seen",
        "base class defined here",
    ]
    where = [
        (
            r["physicalLocation"]["artifactLocation"]["uri"],
            r["physicalLocation"]["region"]["startLine"],
        )
        for r in related
        if "physicalLocation" in r
    ]
    assert where == [("pkg/block.py", 7), ("pkg/block.py", 11), ("pkg/base.py", 1)]
    (flow,) = result["codeFlows"]
    (thread,) = flow["threadFlows"]
    assert [step["location"]["message"]["text"] for step in thread["locations"]] == [
        r["message"]["text"] for r in related
    ]
    assert [step["executionOrder"] for step in thread["locations"]] == [1, 2, 3, 4]


def test_no_evidence_no_flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = Finding("TEM004", "TEM004 is_first_microbatch rejected", 10, 23, 10, 48)
    log = _log(tmp_path, monkeypatch, [plain])
    validate(log)
    (result,) = log["runs"][0]["results"]
    assert "codeFlows" not in result and "relatedLocations" not in result


def test_cli_sarif_validates(tmp_path: Path) -> None:
    """The command's own output, on the sample project with an unreadable file, validates."""
    import shutil
    import subprocess

    from helpers import cli

    tree = tmp_path / "project"
    shutil.copytree(SAMPLE, tree)
    (tree / "pyproject.toml").write_text("", encoding="utf-8")
    (tree / "pkg" / "broken.py").write_text("is_first_microbatch(\n", encoding="utf-8")
    done = subprocess.run(
        [*cli(), "check", "--format", "sarif", "pkg"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 2  # the broken file
    log = json.loads(done.stdout)
    validate(log)
    results = log["runs"][0]["results"]
    assert results and all("primaryLocationLineHash" in r["partialFingerprints"] for r in results)
