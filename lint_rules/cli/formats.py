"""Output formats of ``check``: text (flake8's), JSON, SARIF 2.1.0, GitHub annotations.

Paths: the text and JSON formats print them as found (as flake8 does); SARIF and GitHub need
them relative to the repository root (the nearest directory above the current one holding
``.git``, else the current directory), SARIF through ``uriBaseId: %SRCROOT%``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lint_rules import __version__
from lint_rules.cli.running import Reported

PROG = "te-microbatch-lint"
FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://example.invalid/te-microbatch-lint"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "teMicrobatchLint/v1"


@dataclass(frozen=True)
class Problem:
    """A path that could not be read, parsed or explored, with the reason (and where)."""

    path: str
    reason: str
    line: int | None = None
    column: int | None = None


def format_text(findings: Sequence[Reported], marked: bool = False) -> str:
    """flake8's default format, byte for byte: ``path:line:col: CODE message``; ``marked`` (a
    terminal): ``CODE [*] message`` where the fix is safe, as ruff shows it."""
    return "".join(
        f"{f.path}:{f.line}:{f.column}: {_marked(f) if marked else f.message}\n" for f in findings
    )


def _marked(finding: Reported) -> str:
    code, _, rest = finding.message.partition(" ")
    return f"{code} [*] {rest}" if finding.applicability == "safe" else finding.message


def fixable_hint(findings: Sequence[Reported], unsafe_applies: Callable[[str], bool]) -> str:
    """``[*] N fixable with `te-microbatch-lint fix` (M more with `fix --unsafe-fixes`)``, or
    "" when nothing is; ``unsafe_applies(path)``: that file's settings apply unsafe fixes."""
    safe = unsafe = 0
    for f in findings:
        if f.applicability == "safe" or (f.applicability and unsafe_applies(f.path)):
            safe += 1
        elif f.applicability == "unsafe":
            unsafe += 1
    if not safe and not unsafe:
        return ""
    more = f" ({unsafe} more with `fix --unsafe-fixes`)" if unsafe else ""
    return f"[*] {safe} fixable with `{PROG} fix`{more}"


JSON_KEYS = (
    "path",
    "code",
    "message",
    "line",
    "column",
    "end_line",
    "end_column",
    "fixable",
    "applicability",
)


def format_json(findings: Sequence[Reported], problems: Sequence[Problem] = ()) -> str:
    """A list of rows; a file that could not be read or parsed is a row with ``code: null``."""
    import json

    rows: list[dict[str, Any]] = [
        {
            **{key: getattr(f, key) for key in JSON_KEYS},
            "verdict": f.verdict or None,
            "evidence": [
                {"path": p, "line": line, "column": col, "message": text}
                for p, line, col, text in f.evidence
            ],
        }
        for f in findings
    ]
    for problem in problems:
        row = dict.fromkeys(JSON_KEYS)
        row.update(path=problem.path, message=problem.reason, fixable=False)
        row.update(line=problem.line, column=problem.column)
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


def repository_root() -> str:
    from lint_rules.cli.discovery import repository_root as find_root

    return find_root(os.getcwd()) or os.getcwd()


def relative_to_root(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` in POSIX form (no ``./``), or None when outside it."""
    relative = os.path.relpath(os.path.abspath(path), root)
    if relative == ".." or relative.startswith(".." + os.sep) or os.path.isabs(relative):
        return None
    return Path(relative).as_posix()


def _escape_github(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(findings: Sequence[Reported], problems: Sequence[Problem] = ()) -> str:
    """GitHub Actions workflow commands (annotations); repository-relative paths, columns in
    characters; files that could not be read or parsed as ``::error``."""
    root = repository_root()

    def where(path: str) -> str:
        shown = relative_to_root(path, root) or os.path.abspath(path)
        return f"file={_escape_github(shown, True)}"

    out = []
    for f in findings:
        props = ",".join(
            (
                where(f.path),
                f"line={f.line}",
                f"col={f.char_column}",
                f"endLine={f.end_line}",
                f"endColumn={f.end_char_column}",
                f"title={f.code}",
            )
        )
        out.append(f"::warning {props}::{_escape_github(f.message)}\n")
    for problem in problems:
        props = [where(problem.path)]
        if problem.line:
            props.append(f"line={problem.line}")
        if problem.column:
            props.append(f"col={problem.column}")
        out.append(f"::error {','.join(props)}::{_escape_github(problem.reason)}\n")
    return "".join(out)


def rule_descriptions() -> dict[str, dict[str, str]]:
    """``short``, ``full`` and ``help_uri`` of each rule, from the rule table in ``rules``."""
    from lint_rules.rules import RULES

    return {
        code: {
            "short": rule.summary,
            "full": rule.explanation.strip(),
            "help_uri": rule.help_uri,
        }
        for code, rule in sorted(RULES.items())
    }


def _location(path: str, root: str) -> dict[str, Any]:
    relative = relative_to_root(path, root)
    if relative is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    from urllib.parse import quote

    return {"uri": quote(relative), "uriBaseId": SRCROOT}


def format_sarif(findings: Sequence[Reported], problems: Sequence[Problem]) -> str:
    """SARIF 2.1.0 for code scanning; regions in characters (``unicodeCodePoints``)."""
    import json

    root = repository_root()
    described = rule_descriptions()
    codes = list(described)
    for extra in sorted({f.code for f in findings} - set(codes)):
        codes.append(extra)
        described[extra] = {"short": extra, "full": extra, "help_uri": INFORMATION_URI}
    rules = [
        {
            "id": code,
            "name": code,
            "shortDescription": {"text": described[code]["short"]},
            "fullDescription": {"text": described[code]["full"]},
            "helpUri": described[code]["help_uri"],
            "defaultConfiguration": {"level": "warning"},
        }
        for code in codes
    ]
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": codes.index(f.code),
            "level": "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _location(f.path, root),
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.char_column,
                            "endLine": f.end_line,
                            "endColumn": f.end_char_column,
                        },
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        }
        if f.applicability:
            result["properties"] = {"fixApplicability": f.applicability}
        results.append(result)
    notifications = []
    for problem in problems:
        physical: dict[str, Any] = {"artifactLocation": _location(problem.path, root)}
        if problem.line:
            physical["region"] = {"startLine": problem.line}
            if problem.column:
                physical["region"]["startColumn"] = problem.column
        notifications.append(
            {
                "level": "error",
                "message": {"text": problem.reason},
                "locations": [{"physicalLocation": physical}],
            }
        )
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
                "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not problems,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def format_statistics(findings: Sequence[Reported], as_json: bool = False) -> str:
    """Counts per code, most frequent first, with the rule's summary (not one site's text)."""
    counts: dict[str, list[int]] = {}
    for f in findings:
        entry = counts.setdefault(f.code, [0, 0])
        entry[0] += 1
        entry[1] += f.fixable
    described = rule_descriptions()
    ordered = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))
    if as_json:
        import json

        rows = [
            {
                "code": code,
                "count": count,
                "fixable": fixable,
                "summary": described.get(code, {}).get("short", code),
            }
            for code, (count, fixable) in ordered
        ]
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(c[0])) for _, c in ordered), default=1)
    return "".join(
        f"{count:>{width}}  {code}  {described.get(code, {}).get('short', code)}\n"
        for code, (count, _) in ordered
    )
