"""Inline expectations of the fixture catalogue (see docs/catalogue.md).

A finding is expected wherever a comment on the reported line carries ``CODE:COLUMN`` tokens,
for example ``# TEM001:23`` or ``# TEM001:23 TEM005:23``. ``COLUMN`` is the 1-based column that
flake8 prints (the ``ast`` UTF-8 byte offset + 1). Only real comment tokens count, so a
docstring that talks about ``# TEM001:23`` is not an expectation, and ``# noqa: TEM001`` (no
column) is never one. Options fixtures start with ``# flake8-args: --opt=value ...``.
"""

from __future__ import annotations

import io
import re
import shlex
import tokenize
from pathlib import Path

MARKER = re.compile(r"(?<![\w:])(TEM\d{3}):(\d+)\b")
STRICT_MARKER = re.compile(r"\bstrict:(TEM\d{3}):(\d+)\b")
"""``strict:TEM001:23``: reported only with ``unresolved = "report"`` (a callee nobody can show
is TE: quiet by default)."""
ARGS_PREFIX = "# flake8-args:"

Expectation = tuple[int, int, str]
"""(line, flake8 column, code)."""


def read_text(path: Path) -> str:
    """The file's text with its newlines untouched (CRLF stays CRLF), decoded as Python would."""
    raw = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(encoding)


def expected_findings(path: Path, strict: bool = False) -> set[Expectation]:
    """Every ``CODE:COLUMN`` marker in the comments of ``path`` (with ``strict``, the
    ``strict:CODE:COLUMN`` ones too)."""
    found: set[Expectation] = set()
    raw = path.read_bytes()
    for token in tokenize.tokenize(io.BytesIO(raw).readline):
        if token.type != tokenize.COMMENT:
            continue
        for pattern in (MARKER, STRICT_MARKER) if strict else (MARKER,):
            for code, column in pattern.findall(token.string):
                found.add((token.start[0], int(column), code))
    return found


def flake8_args(path: Path) -> list[str]:
    """The extra flake8 arguments an options fixture declares on its first line."""
    first = read_text(path).splitlines()[0] if path.stat().st_size else ""
    if not first.startswith(ARGS_PREFIX):
        return []
    return shlex.split(first[len(ARGS_PREFIX) :])


def settings_overrides(args: list[str]) -> dict[str, str]:
    """``--te-guard-functions=a,b`` -> ``{"guard_functions": "a,b"}`` (for ``load_settings``)."""
    overrides: dict[str, str] = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not (sep and name.startswith("--te-")):
            raise ValueError(f"unsupported flake8-args entry {arg!r}: use --te-NAME=VALUE")
        overrides[name[len("--te-") :].replace("-", "_")] = value
    return overrides
