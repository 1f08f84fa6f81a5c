"""Output formats of ``check``: text (flake8's), JSON, SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from lint_rules import __version__
from lint_rules.cli.running import Reported

PROG = "te-microbatch-lint"
FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://example.invalid/te-microbatch-lint"


def format_text(findings: Sequence[Reported]) -> str:
    """flake8's default format, byte for byte: ``path:line:col: CODE message``."""
    return "".join(f"{f.path}:{f.line}:{f.column}: {f.message}\n" for f in findings)


def format_json(findings: Sequence[Reported]) -> str:
    import json

    keys = ("path", "code", "message", "line", "column", "end_line", "end_column", "fixable")
    rows = [{key: getattr(f, key) for key in keys} for f in findings]
    return json.dumps(rows, indent=2) + "\n"


def _escape_github(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(findings: Sequence[Reported]) -> str:
    """GitHub Actions workflow commands (annotations); columns in characters."""
    out = []
    for f in findings:
        props = ",".join(
            (
                f"file={_escape_github(f.path, True)}",
                f"line={f.line}",
                f"col={f.char_column}",
                f"endLine={f.end_line}",
                f"endColumn={f.end_char_column}",
                f"title={f.code}",
            )
        )
        out.append(f"::warning {props}::{_escape_github(f.message)}\n")
    return "".join(out)


def _rule_descriptions() -> dict[str, tuple[str, str]]:
    """(short, full) text of each rule, from the message templates in ``rules.MESSAGES``."""
    from lint_rules.rules import MESSAGES, SUMMARIES

    described = {}
    for code, template in sorted(MESSAGES.items()):
        full = re.sub(r"\{(\w+)\}", r"<\1>", template)
        full = full.replace(code, "", 1).strip() if full.startswith(code) else full
        described[code] = (SUMMARIES[code], full)
    return described


def _artifact_uri(path: str) -> str:
    from urllib.parse import quote

    if os.path.isabs(path):
        return Path(path).as_uri()
    posix = Path(os.path.normpath(path)).as_posix()
    return quote(posix)


def format_sarif(findings: Sequence[Reported], errors: Sequence[tuple[str, str]]) -> str:
    """SARIF 2.1.0 for code scanning; regions in characters (``unicodeCodePoints``)."""
    import json

    descriptions = _rule_descriptions()
    codes = list(descriptions)
    for extra in sorted({f.code for f in findings} - set(codes)):
        codes.append(extra)
        descriptions[extra] = (extra, extra)
    rules = [
        {
            "id": code,
            "name": code,
            "shortDescription": {"text": descriptions[code][0]},
            "fullDescription": {"text": descriptions[code][1]},
            "defaultConfiguration": {"level": "warning"},
        }
        for code in codes
    ]
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": codes.index(f.code),
            "level": "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _artifact_uri(f.path)},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.char_column,
                            "endLine": f.end_line,
                            "endColumn": f.end_char_column,
                        },
                    }
                }
            ],
        }
        for f in findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": reason},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(path)}}}],
        }
        for path, reason in errors
    ]
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": PROG,
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
