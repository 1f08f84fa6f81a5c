"""The output formats CI systems read, as ruff writes them (``check --output-format``).

- ``grouped``: the findings under their file's name, ``  LINE:COL CODE [*] message`` (column in
  characters; ``[*]`` where ``fix`` applies the fix), each with its evidence as ``note:`` lines,
  and a blank line after each file;
- ``pylint``: ``path:line: [CODE] message``, one line per finding;
- ``json-lines``: the rows of ``json``, one compact object per line (keys sorted, as ruff's);
- ``junit``: JUnit XML, one ``testsuite`` per file and a failed ``testcase`` per finding
  (``org.te-microbatch-lint.CODE``); a file that could not be read or parsed is an ``error``;
  a clean run is one passing ``testcase``, as ruff's;
- ``gitlab``: GitLab's code quality report: ``check_name``, ``description`` (``CODE: message``),
  ``severity``, a ``fingerprint`` that survives edits above the finding, and ``location`` with
  its ``positions``, the path relative to ``$CI_PROJECT_DIR`` (else the current directory).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lint_rules.cli.formats import (
    PROG,
    FixApplies,
    Problem,
    UrlOf,
    json_rows,
    relative_to_root,
)

TYPE_CHECKING = False  # the per-file machinery is not loaded for a type (an empty folder)
if TYPE_CHECKING:
    from lint_rules.analysis.records import Reported

PACKAGE = f"org.{PROG}"


def _text(f: Reported) -> str:
    """The message without its leading code."""
    code, _, rest = f.message.partition(" ")
    return rest if code == f.code else f.message


def format_grouped(
    findings: Sequence[Reported], problems: Sequence[Problem], applies: FixApplies
) -> str:
    by_file: dict[str, list[Reported]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    out = []
    for path, group in by_file.items():
        rows = max(len(str(f.line)) for f in group)
        cols = max(len(str(f.char_column)) for f in group)
        out.append(f"{path}:\n")
        for f in group:
            mark = "[*] " if applies(f) else ""
            where = f"{f.line:>{rows}}:{f.char_column:<{cols}}"
            out.append(f"  {where} {f.code} {mark}{_text(f)}\n")
            for step_path, line, _, message in f.evidence:
                place = f"{step_path}:{line}: " if line else ""
                out.append(f"    note: {place}{message}\n")
        out.append("\n")
    for problem in problems:
        where = f"{problem.line or 1}:{problem.column or 1}"
        out.append(f"{problem.path}:\n  {where} error: {problem.reason}\n\n")
    return "".join(out)


def format_pylint(findings: Sequence[Reported], problems: Sequence[Problem]) -> str:
    lines = [f"{f.path}:{f.line}: [{f.code}] {_text(f)}\n" for f in findings]
    lines += [f"{p.path}:{p.line or 1}: [error] {p.reason}\n" for p in problems]
    return "".join(lines)


def format_json_lines(
    findings: Sequence[Reported], problems: Sequence[Problem], applies: FixApplies, url_of: UrlOf
) -> str:
    rows = json_rows(findings, problems, applies, url_of)
    from lint_rules.cli.formats import json_text

    return "".join(json_text(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows)


def _attr(value: object) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr(str(value))


def _escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text)


def format_junit(findings: Sequence[Reported], problems: Sequence[Problem]) -> str:
    from lint_rules.analysis.records import Reported

    by_file: dict[str, list[Any]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    for p in problems:
        by_file.setdefault(p.path, []).append(p)
    total = len(findings) + len(problems)
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n']
    out.append(
        f'<testsuites name={_attr(PROG)} tests="{max(total, 1)}" skipped="0" '
        f'failures="{len(findings)}" errors="{len(problems)}">\n'
    )
    if not total:
        out.append(
            f'    <testsuite name={_attr(PROG)} tests="1" skipped="0" errors="0" failures="0" '
            f"package={_attr(PACKAGE)}>\n"
            f'        <testcase name="No errors found" classname={_attr(PROG)}/>\n'
            "    </testsuite>\n"
        )
    for path, items in by_file.items():
        failures = sum(isinstance(i, Reported) for i in items)
        errors = len(items) - failures
        classname = os.path.splitext(path)[0]
        out.append(
            f'    <testsuite name={_attr(path)} tests="{len(items)}" skipped="0" '
            f'errors="{errors}" failures="{failures}" package={_attr(PACKAGE)}>\n'
        )
        for item in items:
            if isinstance(item, Reported):
                name, line, column, text = item.code, item.line, item.char_column, _text(item)
                tag = "failure"
            else:
                name, line, column, text = "error", item.line or 1, item.column or 1, item.reason
                tag = "error"
            out.append(
                f"        <testcase name={_attr(f'{PACKAGE}.{name}')} classname={_attr(classname)} "
                f'line="{line}" column="{column}">\n'
                "            <properties>\n"
                '                <property name="severity" value="error"/>\n'
                "            </properties>\n"
                f"            <{tag} message={_attr(text)}>"
                f"line {line}, col {column}, {_escape(text)}</{tag}>\n"
                "        </testcase>\n"
            )
        out.append("    </testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


def _gitlab_path(path: str) -> str:
    root = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    return relative_to_root(path, root) or os.path.abspath(path)


def _fingerprint(*parts: str) -> str:
    from hashlib import blake2b

    return blake2b("\0".join(parts).encode("utf-8", "backslashreplace"), digest_size=8).hexdigest()


def format_gitlab(findings: Sequence[Reported], problems: Sequence[Problem]) -> str:
    rows = []
    for f in findings:
        path = _gitlab_path(f.path)
        rows.append(
            {
                "check_name": f.code,
                "description": f"{f.code}: {_text(f)}",
                "severity": "major",
                "fingerprint": _fingerprint(path, f.code, f.fingerprint or f"{f.line}"),
                "location": {
                    "path": path,
                    "positions": {
                        "begin": {"line": f.line, "column": f.char_column},
                        "end": {"line": f.end_line, "column": f.end_char_column},
                    },
                },
            }
        )
    for p in problems:
        path = _gitlab_path(p.path)
        line, column = p.line or 1, p.column or 1
        rows.append(
            {
                "check_name": "error",
                "description": f"error: {p.reason}",
                "severity": "blocker",
                "fingerprint": _fingerprint(path, "error", p.reason),
                "location": {
                    "path": path,
                    "positions": {
                        "begin": {"line": line, "column": column},
                        "end": {"line": line, "column": column},
                    },
                },
            }
        )
    from lint_rules.cli.formats import json_text

    return json_text(rows, indent=2) + "\n"
