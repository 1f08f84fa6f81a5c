"""Output formats of ``check``: text (flake8's), JSON (ruff's keys), GitHub annotations; SARIF
2.1.0 is ``sarif``.

Paths: the text and JSON formats print them as found (as flake8 does); SARIF and GitHub need
them relative to the repository root (the nearest directory above the current one holding
``.git``, else the current directory), SARIF through ``uriBaseId: %SRCROOT%``. A name that is
not UTF-8 (its bytes read back as lone surrogates) is written lossily in every JSON format, each
undecodable byte as U+FFFD, as Rust tools such as ruff write such a path (``json_text``);
SARIF's URIs keep its exact bytes, percent-encoded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from lint_rules.analysis.records import Reported

PROG = "te-microbatch-lint"


class Problem(Frozen):
    """A path that could not be read, parsed or explored, with the reason (and where)."""

    __slots__ = ("path", "reason", "line", "column")

    path: str
    reason: str
    line: int | None
    column: int | None

    def __init__(
        self, path: str, reason: str, line: int | None = None, column: int | None = None
    ) -> None:
        self._fill(locals())


FORMATS = (
    "text",
    "full",
    "concise",
    "grouped",
    "pylint",
    "json",
    "json-lines",
    "junit",
    "gitlab",
    "github",
    "sarif",
)
"""``text`` (= ``full``): flake8's line per finding and its evidence as ``note:`` lines under
it; ``concise``: one line per finding, the evidence in brackets (byte for byte flake8's line);
``grouped``, ``pylint``, ``json-lines``, ``junit``, ``gitlab``: as ruff writes them
(``ciformats``)."""


class Style(Frozen):
    """How text is painted: nothing (a pipe, ``NO_COLOR``) or ANSI colours (a terminal)."""

    __slots__ = ("colour",)

    colour: bool

    def __init__(self, colour: bool = False) -> None:
        self._fill(locals())

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and text else text


PLAIN = Style()
BOLD, RED, CYAN, DIM = "1", "1;31", "36", "2"


def use_colour(choice: str, stream: TextIO) -> bool:
    """``--color auto|always|never``: ``auto`` follows ``NO_COLOR`` (no colour when set and
    not empty), then ``FORCE_COLOR`` (colour when set and not empty), then whether ``stream``
    is a terminal, as ruff and flake8 do."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def _where(path: str, line: int, own: str) -> str:
    if not line:
        return ""
    return f":{line}" if path == own else f"{path}:{line}"


def shown_path(path: str) -> str:
    """``path`` as printed: control characters (a newline, an escape) escaped, so that a
    report line stays one line and the terminal is not driven by a file name."""
    if not any(ord(c) < 32 or ord(c) == 127 for c in path):
        return path
    return "".join(
        c.encode("unicode_escape").decode("ascii") if ord(c) < 32 or ord(c) == 127 else c
        for c in path
    )


def one_line(f: Reported) -> str:
    """The finding's message with its evidence in brackets (what flake8 prints)."""
    from lint_rules.oneline import step_text, with_evidence

    steps = (step_text(msg, _where(path, line, f.path)) for path, line, _, msg in f.evidence)
    prefix = len(f"{f.path}:{f.line}:{f.column}: ")
    return with_evidence(f.message, steps, f"{PROG} explain {f.path}:{f.line}", prefix)


def format_text(findings: Sequence[Reported], style: Style = PLAIN, concise: bool = False) -> str:
    """``path:line:col: CODE message``, flake8's format; with colour (a terminal) the path and
    code are painted and a safe fix is marked ``CODE [*] message``, as ruff shows it. Each
    evidence step follows as ``  note: path:line: message`` (``concise``: in brackets on the
    finding's line instead)."""

    out = []
    for f in findings:
        message = one_line(f) if concise else f.message
        if style.colour:
            code, _, rest = message.partition(" ")
            mark = f" {style.paint('[*]', CYAN)}" if f.applicability == "safe" else ""
            message = f"{style.paint(code, RED)}{mark} {rest}"
        colon = style.paint(":", CYAN)
        out.append(
            f"{style.paint(shown_path(f.path), BOLD)}{colon}{f.line}{colon}{f.column}{colon} "
            f"{message}\n"
        )
        if concise:
            continue
        for path, line, _, text in f.evidence:
            where = f"{shown_path(path)}:{line}: " if line else ""
            out.append(f"  {style.paint('note:', CYAN)} {where}{text}\n")
    return "".join(out)


FixApplies = Callable[["Reported"], bool]
"""Whether ``fix`` (as configured for that finding's file) would apply a finding's fix."""


def fixable_hint(findings: Sequence[Reported], applies: FixApplies) -> str:
    """``[*] N fixable with `te-microbatch-lint fix` (M more with `fix --unsafe-fixes`)``, or
    "" when nothing is."""
    safe = sum(1 for f in findings if applies(f))
    unsafe = sum(1 for f in findings if f.applicability == "unsafe" and not applies(f))
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


def rule_url(code: str | None, docs_url: str) -> str | None:
    """The rule's section of the docs at ``docs_url`` (the ``docs-url`` setting), or None when
    no docs URL is set (no link rather than a dead one)."""
    from lint_rules.rules import RULES

    rule = RULES.get(code or "")
    return f"{docs_url}#{rule.anchor}" if rule and docs_url else None


UrlOf = Callable[["Reported"], "str | None"]
"""A finding's rule URL, from the ``docs-url`` of its file's settings."""


def _no_url(f: Reported) -> str | None:
    return None


def _json_row(f: Reported, applies: FixApplies, url_of: UrlOf = _no_url) -> dict[str, Any]:
    row: dict[str, Any] = {key: getattr(f, key) for key in JSON_KEYS}
    code, _, text = f.message.partition(" ")
    row["message"] = text if code == f.code else f.message
    row["fixable"] = applies(f)
    row["filename"] = os.path.abspath(f.path)
    row["location"] = {"row": f.line, "column": f.char_column}
    row["end_location"] = {"row": f.end_line, "column": f.end_char_column}
    row["noqa_row"] = f.line
    url = url_of(f)
    if url:
        row["url"] = url
    row["fix"] = None
    if f.applicability:
        row["fix"] = {
            "applicability": f.applicability,
            "message": f.fix_message,
            "edits": [
                {
                    "content": content,
                    "location": {"row": line, "column": column},
                    "end_location": {"row": end_line, "column": end_column},
                }
                for line, column, end_line, end_column, content in f.edits
            ],
        }
    row["verdict"] = f.verdict or None
    row["evidence"] = [
        {"path": path, "line": line or None, "column": column or None, "message": text}
        for path, line, column, text in f.evidence
    ]
    return row


def _safe_only(f: Reported) -> bool:
    return f.applicability == "safe"


def json_rows(
    findings: Sequence[Reported],
    problems: Sequence[Problem] = (),
    applies: FixApplies = _safe_only,
    url_of: UrlOf = _no_url,
) -> list[dict[str, Any]]:
    """The rows of ``json`` and ``json-lines``."""
    rows: list[dict[str, Any]] = [_json_row(f, applies, url_of) for f in findings]
    for problem in problems:
        row = dict.fromkeys(JSON_KEYS)
        row.update(path=problem.path, message=problem.reason, fixable=False)
        row.update(line=problem.line, column=problem.column)
        row.update(filename=os.path.abspath(problem.path), fix=None, evidence=[])
        row.update(noqa_row=None, end_location=None, verdict=None)
        row["location"] = {"row": problem.line, "column": problem.column} if problem.line else None
        rows.append(row)
    return rows


def format_json(
    findings: Sequence[Reported],
    problems: Sequence[Problem] = (),
    applies: FixApplies = _safe_only,
    url_of: UrlOf = _no_url,
) -> str:
    """A list of rows, ruff's keys (``filename``, ``location``, ``end_location``, ``fix`` with
    its ``applicability``, ``message`` and ``edits``, ``noqa_row``, and ``url`` where the
    ``docs-url`` setting gives one) beside the first ones (``path``, ``line``, ``column`` in
    UTF-8 bytes as flake8 counts, ...), and the ``evidence``; ``message`` without the code.
    ``fixable``: ``fix`` as configured applies it. A file that could not be read or parsed is a
    row with ``code: null``."""
    return json_text(json_rows(findings, problems, applies, url_of), indent=2) + "\n"


def json_text(data: Any, **options: Any) -> str:
    """``json.dumps(data, **options)``, always valid Unicode: a lone surrogate (a file name's
    undecodable byte, read back by ``os.fsdecode``) in any string or key becomes U+FFFD, which
    every JSON reader accepts, where ``"\\udce9"`` is refused by the strict ones or read as text
    that no UTF-8 can encode."""
    import json

    text = json.dumps(data, **options)
    if "\\ud" not in text:  # no surrogate escaped (``\\ud800`` to ``\\udfff``): the usual case
        return text
    return json.dumps(_valid_unicode(data), **options)


def _valid_unicode(value: Any) -> Any:
    if isinstance(value, str):
        import re

        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, dict):
        return {_valid_unicode(key): _valid_unicode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid_unicode(item) for item in value]
    return value


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
        parts = [where(problem.path)]
        if problem.line:
            parts.append(f"line={problem.line}")
        if problem.column:
            parts.append(f"col={problem.column}")
        out.append(f"::error {','.join(parts)}::{_escape_github(problem.reason)}\n")
    return "".join(out)


def rule_summaries() -> dict[str, str]:
    from lint_rules.rules import RULES

    return {code: rule.summary for code, rule in RULES.items()}


def format_statistics(
    findings: Sequence[Reported], as_json: bool = False, applies: FixApplies = _safe_only
) -> str:
    """Counts per code, most frequent first, with the rule's summary (not one site's text);
    ``fixable`` counts what ``fix`` would apply, as the hint does."""
    from lint_rules.rules import names_unresolved

    counts: dict[str, list[int]] = {}
    for f in findings:
        entry = counts.setdefault(f.code, [0, 0, 0])
        entry[0] += 1
        entry[1] += applies(f)
        entry[2] += names_unresolved(f.message)  # quiet unless `unresolved = "report"`
    summaries = rule_summaries()
    ordered = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))
    if as_json:
        rows = [
            {
                "code": code,
                "count": count,
                "fixable": fixable,
                "unresolved": unresolved,
                "summary": summaries.get(code, code),
            }
            for code, (count, fixable, unresolved) in ordered
        ]
        return json_text(rows, indent=2) + "\n"
    width = max((len(str(c[0])) for _, c in ordered), default=1)
    return "".join(
        f"{count:>{width}}  {code}  {'[*] ' if fixable else ''}{summaries.get(code, code)}"
        f"{f' ({unresolved} unresolved)' if unresolved else ''}\n"
        for code, (count, fixable, unresolved) in ordered
    )
