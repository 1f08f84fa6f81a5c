"""Every JSON output (``json``, ``json-lines``, ``sarif``, ``gitlab``) is valid UTF-8 JSON whose
strings are all valid Unicode, also for a file whose name is not UTF-8 (``b"caf\\xe9.py"`` on
Linux, read back as ``"caf\\udce9.py"``): the name is written lossily, each undecodable byte as
U+FFFD (as Rust tools such as ruff write a path), and SARIF's URI keeps its exact bytes,
percent-encoded (docs/cli.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

SOURCE = (
    "import transformer_engine.pytorch as te\n\n\nclass Block:\n"
    "    def __init__(self):\n        self.fc = te.Linear(4, 4)\n\n"
    "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
)
NAME = b"caf\xe9.py"
BROKEN = b"bad\xff.py"
"""A file that does not parse: its row (``code: null``) names it too."""


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


@pytest.fixture
def odd_name(tmp_path: Path) -> Path:
    if os.name != "posix":
        pytest.skip("file names are bytes on POSIX only")
    try:
        with open(os.path.join(os.fsencode(tmp_path), NAME), "w", encoding="utf-8") as file:
            file.write(SOURCE)
        with open(os.path.join(os.fsencode(tmp_path), BROKEN), "w", encoding="utf-8") as file:
            file.write(SOURCE.replace("def forward(self, x)", "def forward(self, x"))
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a name that is not UTF-8")
    (tmp_path / "pyproject.toml").write_text("")
    return tmp_path


def documents(fmt: str, raw: bytes) -> list[Any]:
    text = raw.decode("utf-8")  # strictly: no byte that is not UTF-8
    if fmt == "json-lines":
        return [json.loads(line) for line in text.splitlines()]
    return [json.loads(text)]


@pytest.mark.parametrize("fmt", ["json", "json-lines", "sarif", "gitlab"])
def test_json_outputs_are_valid_unicode_for_a_name_that_is_not_utf8(
    odd_name: Path, fmt: str
) -> None:
    done = subprocess.run(
        [*cli(), "check", "--output-format", fmt, "."],
        cwd=odd_name,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr  # the file that does not parse
    found = documents(fmt, done.stdout)
    every = [s for document in found for s in strings(document)]
    for text in every:
        text.encode("utf-8")  # raises on a lone surrogate
    if fmt == "sarif":
        assert any(s.endswith("caf%E9.py") for s in every), every
        assert any(s.endswith("bad%FF.py") for s in every), every
    else:
        assert any(s.endswith("caf\ufffd.py") for s in every), every
        assert any(s.endswith("bad\ufffd.py") for s in every), every
