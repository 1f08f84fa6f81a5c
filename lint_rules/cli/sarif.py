"""SARIF 2.1.0 for GitHub code scanning (``check --format sarif``).

What code scanning reads, and where it comes from:

- each rule: ``id`` (the code), ``name`` (the rule's name, ``untracked-flag``), a
  ``shortDescription``, a plain-text ``fullDescription`` of at most ``FULL_DESCRIPTION_LIMIT``
  characters, and ``help.text``/``help.markdown`` (the rule's explanation), all from
  ``rules.RULES``;
- each result: its location in characters (``columnKind: unicodeCodePoints``), relative to the
  repository root through ``uriBaseId: %SRCROOT%``; ``partialFingerprints.primaryLocationLineHash``
  computed as GitHub's upload action computes it (``line_hashes``), so that an alert keeps its
  identity when lines above it move; and the finding's evidence as ``relatedLocations`` and a
  ``codeFlows`` thread, in reading order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lint_rules import __version__
from lint_rules.cli.formats import PROG, Problem, relative_to_root, repository_root
from lint_rules.cli.running import Reported

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "teMicrobatchLint/v1"
LINE_HASH_KEY = "primaryLocationLineHash"
FULL_DESCRIPTION_LIMIT = 1024
"""GitHub code scanning truncates a longer ``fullDescription``."""

_BLOCK = 100
_MOD = 37
_MASK = (1 << 64) - 1
_FIRST_MOD = pow(_MOD, _BLOCK, 1 << 64)
_EOF = 65535


def line_hashes(text: str) -> dict[int, str]:
    """``primaryLocationLineHash`` of every line (1-based), as GitHub's ``codeql-action``
    computes it: a rolling hash (base 37, 64-bit) over the next 100 characters from the start of
    the line, spaces and tabs skipped, line endings as ``\\n``, in UTF-16 code units, with
    ``:N`` counting how many earlier lines had the same hash."""
    window = [0] * _BLOCK
    starts = [-1] * _BLOCK
    counts: dict[str, int] = {}
    hashes: dict[int, str] = {}
    state = {"hash": 0, "index": 0, "line": 0, "start": True, "cr": False}

    def output() -> None:
        value = format(state["hash"], "x")
        counts[value] = counts.get(value, 0) + 1
        hashes[starts[state["index"]]] = f"{value}:{counts[value]}"
        starts[state["index"]] = -1

    def update(current: int) -> None:
        index = state["index"]
        begin = window[index]
        window[index] = current
        state["hash"] = (_MOD * state["hash"] + current - _FIRST_MOD * begin) & _MASK
        state["index"] = (index + 1) % _BLOCK

    def process(current: int) -> None:
        if current in (32, 9) or (state["cr"] and current == 10):
            state["cr"] = False
            return
        state["cr"] = current == 13
        if current == 13:
            current = 10
        if starts[state["index"]] != -1:
            output()
        if state["start"]:
            state["start"] = False
            state["line"] += 1
            starts[state["index"]] = state["line"]
        if current == 10:
            state["start"] = True
        update(current)

    for char in text:
        code = ord(char)
        if code > 0xFFFF:  # JavaScript strings count UTF-16 code units
            code -= 0x10000
            process(0xD800 + (code >> 10))
            process(0xDC00 + (code & 0x3FF))
        else:
            process(code)
    process(_EOF)
    for _ in range(_BLOCK):
        if starts[state["index"]] != -1:
            output()
        update(0)
    return hashes


def plain_text(markdown: str) -> str:
    """Markdown as plain text: no code blocks, emphasis or backquotes; paragraphs kept."""
    text = re.sub(r"```.*?```\n?", "", markdown, flags=re.S)
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:  # inline code stays as written, backquotes off
        spans.append(match.group(1))
        return f"\0{len(spans) - 1}\0"

    text = re.sub(r"`([^`]*)`", keep, text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<!\w)\*([^*\s][^*]*)\*(?!\w)", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], text)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paragraphs if p)


def full_description(markdown: str, limit: int = FULL_DESCRIPTION_LIMIT) -> str:
    """The explanation's first paragraph as plain text, cut at a word within ``limit``."""
    first = plain_text(markdown).split("\n\n", 1)[0]
    if len(first) <= limit:
        return first
    cut = first[: limit - 3].rsplit(" ", 1)[0]
    return cut + "..."


def _rules(codes: Sequence[str], docs_url: str = "") -> list[dict[str, Any]]:
    from lint_rules.rules import RULES

    out = []
    for code in codes:
        rule = RULES.get(code)
        if rule is None:
            out.append({"id": code, "shortDescription": {"text": code}})
            continue
        explanation = rule.explanation.strip()
        entry: dict[str, Any] = {
            "id": code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": full_description(explanation)},
            "help": {"text": plain_text(explanation), "markdown": explanation},
        }
        if docs_url:  # no link rather than a dead one: the help text is all there
            entry["helpUri"] = f"{docs_url}#{rule.anchor}"
        entry["defaultConfiguration"] = {"level": "warning"}
        entry["properties"] = {"tags": ["correctness"]}
        out.append(entry)
    return out


def _location(path: str, root: str) -> dict[str, Any]:
    relative = relative_to_root(path, root)
    if relative is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    from urllib.parse import quote

    # The name's own bytes, percent-encoded: a name that is not UTF-8 (read back as lone
    # surrogates) has no other spelling in a URI.
    return {"uri": quote(os.fsencode(relative)), "uriBaseId": SRCROOT}


def _physical(path: str, root: str, line: int, column: int = 0) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _location(path, root)}
    if line:
        physical["region"] = {"startLine": line}
        if column:
            physical["region"]["startColumn"] = column
    return physical


def _hashes_of(paths: set[str]) -> dict[str, dict[int, str]]:
    """Each file's line hashes (files with findings only; one that cannot be read: none)."""
    from lint_rules.fileio import SourceError, read_source

    out = {}
    for path in paths:
        try:
            out[path] = line_hashes(read_source(path).text)
        except (SourceError, OSError):
            out[path] = {}
    return out


def _evidence(f: Reported, root: str) -> dict[str, Any]:
    related = []
    flow = []
    for number, (path, line, column, message) in enumerate(f.evidence, 1):
        location = {"message": {"text": message}}
        if line:
            location["physicalLocation"] = _physical(path, root, line, column)
        related.append({"id": number, **location})
        flow.append({"location": location, "executionOrder": number})
    if not related:
        return {}
    return {
        "relatedLocations": related,
        "codeFlows": [{"threadFlows": [{"locations": flow}]}],
    }


def _result(f: Reported, index: int, root: str, hashes: dict[int, str]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
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
    if f.line in hashes:
        result["partialFingerprints"][LINE_HASH_KEY] = hashes[f.line]
    result.update(_evidence(f, root))
    if f.applicability:
        result["properties"] = {"fixApplicability": f.applicability}
    from lint_rules.rules import names_unresolved

    if names_unresolved(f.message):  # quiet by default: `unresolved = "report"` shows it
        result.setdefault("properties", {})["calleeResolved"] = False
    return result


def format_sarif(
    findings: Sequence[Reported], problems: Sequence[Problem], docs_url: str = ""
) -> str:
    """SARIF 2.1.0 for code scanning; regions in characters (``unicodeCodePoints``).
    ``docs_url`` (the ``docs-url`` setting) gives each rule its ``helpUri`` and the tool its
    ``informationUri``; without it both are left out."""
    from lint_rules.rules import RULES

    root = repository_root()
    codes = sorted(RULES)
    codes += sorted({f.code for f in findings} - set(codes))
    hashes = _hashes_of({f.path for f in findings})
    results = [_result(f, codes.index(f.code), root, hashes[f.path]) for f in findings]
    notifications = [
        {
            "level": "error",
            "message": {"text": problem.reason},
            "locations": [
                {
                    "physicalLocation": _physical(
                        problem.path, root, problem.line or 0, problem.column or 0
                    )
                }
            ],
        }
        for problem in problems
    ]
    driver: dict[str, Any] = {"name": PROG, "version": __version__, "semanticVersion": __version__}
    if docs_url:
        driver["informationUri"] = docs_url
    driver["rules"] = _rules(codes, docs_url)
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {"driver": driver},
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
    from lint_rules.cli.formats import json_text

    return json_text(log, indent=2) + "\n"
