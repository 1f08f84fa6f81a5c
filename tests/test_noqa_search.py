"""``noqa._spells_noqa`` answers what ``"noqa" in text.lower()`` answers, from the bytes."""

from __future__ import annotations

import sys

import pytest

from lint_rules.noqa import _spells_noqa


def test_no_other_character_lowers_to_a_letter_of_noqa() -> None:
    others = [c for c in map(chr, range(0x80, sys.maxunicode + 1)) if set(c.lower()) & set("noqa")]
    assert others == []


@pytest.mark.parametrize(
    "text",
    [
        "x = 1  # noqa\n",
        "x  # NoQA: TEM001\n",
        "é = 1  # NOQA\n",
        "x = 1\n",
        "é # no qa\n",
        "\udcff noqa",
    ],
)
def test_as_the_text_lowered(text: str) -> None:
    assert _spells_noqa(text) == ("noqa" in text.lower())
