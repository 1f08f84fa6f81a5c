"""``prefilter.spelled_only_as_call`` answers from two counts where it can (as many
occurrences of the name as of ``.name(``), and that answer is exactly what the search of
every word occurrence gives, names that overlap themselves (``aa`` in ``aaa``) included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_rules.analysis.prefilter import spelled_only_as_call, words

PIECES = ["a", "aa", "b", ".", "(", ")", " ", "_", "\n", "x.a(", "a(", ".aa(", "é"]
NAMES = ["a", "aa", "aaa", "ab", "ba"]


def by_every_occurrence(source: str, name: str) -> bool:
    """The specification: every word occurrence of ``name`` is ``.name(``."""
    if not source.isascii():
        return False
    return all(
        source[at - 1 : at] == "." and source.startswith("(", at + len(name))
        for at in words(source, name)
    )


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("x.view(1)\ny.view(2)\n", "view", True),
        ("x.view(1)\nview = 2\n", "view", False),
        ("x.views(1)\nx.view(2)\n", "view", True),  # `views` holds no word occurrence
        ("x.aa(1).aaa(2)", "aa", True),
        ("x.aa(aaa)", "aa", True),
        ("x.aa(aa)", "aa", False),
        ("", "view", True),
    ],
)
def test_cases(source: str, name: str, expected: bool) -> None:
    assert spelled_only_as_call(source, name) is expected
    assert by_every_occurrence(source, name) is expected


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(NAMES))
def test_the_counts_answer_as_the_search_does(pieces: list[str], name: str) -> None:
    source = "".join(pieces)
    assert spelled_only_as_call(source, name) == by_every_occurrence(source, name), source
