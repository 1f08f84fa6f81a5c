"""Fixes that never change what a program means (docs/fixes.md): comments kept, ``# noqa``
lines never touched (and the skipped fix reported), unsafe fixes only when asked for.

The catalogue (``fixtures/catalogue/comments_in_values``, ``flake8_noqa_spanned_line``) holds
the whole-file expectations; these tests pin the pieces a face reports.
"""

from __future__ import annotations

import tokenize
from io import StringIO

import pytest

from lint_rules import fixing
from lint_rules.findings import Edit, Finding, Fix
from lint_rules.fixing import fix_source, keep_comments
from lint_rules.settings import DEFAULT_SETTINGS
from lint_rules.slotted import replace

HEADER = (
    "import transformer_engine.pytorch as te\n\n\n"
    "# Linear.forward(inp, is_first_microbatch, ...) takes the flag second.\n"
    "class Block:\n"
    "    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n\n"
)


def comments(text: str) -> list[str]:
    return [
        t.string
        for t in tokenize.generate_tokens(StringIO(text).readline)
        if t.type == tokenize.COMMENT
    ]


def test_noqa_on_the_value_line_skips_the_fix_and_says_so() -> None:
    text = HEADER + (
        "    def forward(self, x):\n"
        "        return self.fc(x, is_first_microbatch=\n"
        "                       self.flag)  # noqa: TEM001\n"
    )
    result = fix_source(text)
    assert result.text == text and not result.applied
    assert [f.code for f in result.skipped] == ["TEM001"]
    assert result.remaining == result.skipped
    assert any("noqa" in note and "not fixed" in note for note in result.notes)


def test_noqa_for_another_code_does_not_protect_the_line() -> None:
    text = HEADER + (
        "    def forward(self, x):\n"
        "        return self.fc(x, is_first_microbatch=\n"
        "                       self.flag)  # noqa: TEM004\n"
    )
    result = fix_source(text)
    assert "is_first_microbatch=\n                       None)  # noqa: TEM004" in result.text
    assert not result.skipped and not result.remaining


def test_disable_noqa_fixes_under_noqa() -> None:
    text = HEADER + (
        "    def forward(self, x):\n"
        "        return self.fc(x, is_first_microbatch=\n"
        "                       self.flag)  # noqa\n"
    )
    assert fix_source(text, disable_noqa=True).applied


@pytest.mark.parametrize(
    "value",
    [
        "(\n            self.a  # note one\n            and self.b  # note two\n        )",
        "self.a  # note one\n            and self.b",
        "(self.a  # one\n  # two\n  # three\n  or self.b)",
        "[  # a\n  self.a,  # b\n][0]",
    ],
)
@pytest.mark.parametrize("form", ["is_first_microbatch={v}", "{v}", "{v}, None"])
def test_every_comment_of_the_value_survives(value: str, form: str) -> None:
    text = HEADER + (
        "    def forward(self, x):\n"
        f"        return self.fc(\n            x,\n            {form.format(v=value)},\n        )\n"
    )
    result = fix_source(text)
    assert result.applied
    assert comments(result.text) == comments(text)


def test_unsafe_fixes_are_left_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "y = f(x, is_first_microbatch=flag)\n"
    fix = Fix((Edit((1, 29), (1, 33), "None"),), applicability="unsafe")
    finding = Finding("TEM001", "TEM001 m", 1, 9, 1, 33, fix)
    monkeypatch.setattr(fixing, "analyze_source", lambda text, settings, **_: [finding])
    kept = fix_source(text)
    assert kept.text == text and kept.unsafe == [finding] and kept.remaining == [finding]
    done = fix_source(text, replace(DEFAULT_SETTINGS, unsafe_fixes=True))
    assert done.text == "y = f(x, is_first_microbatch=None)\n" and done.applied == [finding]
    assert not done.remaining


def test_keep_comments_without_comments_is_the_new_value() -> None:
    assert keep_comments("self.a and self.b", "None") == "None"
    assert keep_comments("'#' + x", "None") == "None"  # a hash inside a string is no comment


GUARD = "megatron.core.transformer.module.is_first_microbatch_tracked"
IMPORT = "from megatron.core.transformer.module import is_first_microbatch_tracked"


@pytest.mark.parametrize(
    ("prelude", "added"),
    [
        # Only an import that runs wherever the module runs counts as the guard being there.
        # Under `if` or in a `try` whose fallback is not a callable, it may not run, so the
        # import is added (a second import of the same name is harmless; a missing one is a
        # NameError or a call of None at run time). Megatron imported only inside `try`: an
        # optional dependency, so the import gets its own `try` block with a fallback `def`.
        (f"try:\n    {IMPORT}\nexcept ImportError:\n    pass\n", "block"),
        (f"if True:\n    {IMPORT}\n", "top"),
        (f"if __name__ == '__main__':\n    {IMPORT}\n", "top"),
        (f"{IMPORT}\n", "none"),
        ("def is_first_microbatch_tracked(config):\n    return True\n", "none"),
        (f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {IMPORT}\n", "top"),
        (f"import typing\nif typing.TYPE_CHECKING:\n    {IMPORT}\n", "top"),
        (f"def helper():\n    {IMPORT}\n", "top"),
        (f"class Holder:\n    {IMPORT}\n", "top"),
    ],
)
def test_guard_import_only_when_not_bound_at_run_time(prelude: str, added: str) -> None:
    text = HEADER.replace("\n\n\n", f"\n{prelude}\n\n", 1) + (
        "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
    )
    text = text.replace("te.Linear(4, 4)\n", "te.Linear(4, 4)\n        self.config = None\n", 1)
    result = fix_source(text, replace(DEFAULT_SETTINGS, fix_strategy="guard"))
    assert "if is_first_microbatch_tracked(self.config) else None" in result.text
    top_level = result.text.splitlines().count(IMPORT) - text.splitlines().count(IMPORT)
    block = "def is_first_microbatch_tracked(*args, **kwargs):" in result.text
    assert (top_level, block) == {"none": (0, False), "top": (1, False), "block": (0, True)}[
        added
    ], result.text


def test_guard_falls_back_where_self_never_has_the_config_attribute() -> None:
    """A class whose whole lineage is in the file and never sets ``self.config``: the guard
    would raise AttributeError, so the fix is None, with a note (catalogue:
    ``guard_config_never_set``)."""
    text = HEADER + (
        "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
    )
    result = fix_source(text, replace(DEFAULT_SETTINGS, fix_strategy="guard"))
    assert "is_first_microbatch=None)" in result.text and IMPORT not in result.text
    assert result.notes == [
        "line 10: guard strategy fell back to None: `Block` never sets `self.config`"
    ]
    custom = replace(DEFAULT_SETTINGS, fix_strategy="guard", guard_config="self.cfg.fp8")
    assert fix_source(text, custom).notes == [
        "line 10: guard strategy fell back to None: `Block` never sets `self.cfg`"
    ]
    assigned = text.replace(
        "self.fc = te.Linear(4, 4)", "self.fc = te.Linear(4, 4)\n        self.cfg = 1"
    )
    assert (
        "if is_first_microbatch_tracked(self.cfg.fp8) else None"
        in fix_source(assigned, custom).text
    )
    outside = text + "\n\nblock = Block()\nblock.config = object()\n"
    assert IMPORT in fix_source(outside, replace(DEFAULT_SETTINGS, fix_strategy="guard")).text


def test_no_fix_leaves_a_local_unused(tmp_path) -> None:
    """docs/fixes.md: pyflakes reports F841 for any unused local (an underscore name too), so
    the None fix deletes the assignment of a local that only fed the flag, and the guard form
    keeps the local in use: neither leaves F841."""
    import subprocess
    import sys
    from pathlib import Path

    case = Path(__file__).resolve().parent.parent / "fixtures" / "catalogue"
    found = {}
    for form in ("py", "fixed", "guard"):
        path = tmp_path / f"{form}.py"
        path.write_text((case / f"fix_folds_unused_local.{form}").read_text())
        found[form] = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select", "F", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    assert found == {"py": "", "fixed": "", "guard": ""}
