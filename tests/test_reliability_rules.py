"""Suppression and fix applicability edges (reproducers of a reliability review, each kept as a
test): a ``# noqa`` in a CR-only file, a ``:=`` nested in a flag's value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lint_rules.cli import main
from lint_rules.fixing import fix_source
from lint_rules.settings import DEFAULT_SETTINGS
from lint_rules.slotted import replace

CR_MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    '        return self.fc(x, is_first_microbatch=self.flag), """doc\n'
    '        more"""  # noqa: TEM001\n'
).replace("\n", "\r")


def test_noqa_after_a_multiline_string_in_a_cr_only_file(tmp_path: Path) -> None:
    """flake8 honours the comment (it maps the whole logical line); so must check and fix."""
    path = tmp_path / "cr.py"
    path.write_bytes(CR_MODULE.encode())
    assert main(["check", "--no-cache", str(path)]) == 0
    assert main(["fix", "--no-cache", str(path)]) == 0
    assert path.read_bytes() == CR_MODULE.encode()
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TEM", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert flake8.returncode == 0 and not flake8.stdout


def test_a_nested_walrus_in_the_value_has_no_fix_even_unsafe() -> None:
    """docs/fixes.md: a value bound by ``:=`` has no fix; nested too, else a later read of the
    name is a NameError (None drops the binding; a guard binds it only sometimes)."""
    text = (
        "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
        "        self.fc = te.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        y = self.fc(x, is_first_microbatch=(self.a and (f := self.b)))\n"
        "        return y, f\n"
    )
    for settings in (
        replace(DEFAULT_SETTINGS, unsafe_fixes=True),
        replace(DEFAULT_SETTINGS, unsafe_fixes=True, fix_strategy="guard"),
    ):
        result = fix_source(text, settings)
        assert result.text == text and [f.code for f in result.remaining] == ["TEM001"]


def test_a_flag_inside_an_fstring_debug_field_is_left_alone() -> None:
    """``f"{expr = }"`` prints the expression's source text: any edit there changes output."""
    text = (
        "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
        "        self.fc = te.Linear(4, 4)\n\n    def forward(self, x):\n"
        '        print(f"{self.fc(x, is_first_microbatch=self.a) = }")\n'
        "        return self.fc(x, is_first_microbatch=self.a)\n"
    )
    for settings in (DEFAULT_SETTINGS, replace(DEFAULT_SETTINGS, fix_strategy="guard")):
        result = fix_source(text, settings)
        lines = result.text.splitlines()
        assert lines[8] == text.splitlines()[8]
        assert any("f-string's `=` debug text" in note for note in result.notes)
    plain = text.replace("= }", "}")  # no `=`: fixed as anywhere else
    assert fix_source(plain).text.count("is_first_microbatch=None") == 2
