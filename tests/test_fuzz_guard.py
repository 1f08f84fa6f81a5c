"""The guard strategy under the fuzz profile of a reliability review: hypothesmith modules with
TE calls spliced in, nested 5 to 120 levels deep (blocks and parentheses), sometimes past
libcst's depth limit (a 520-term sum), with LF, CRLF and CR newlines, tab or space indentation,
trailing comments of any indentation and no final newline.

Each output compiles (as text, and as the bytes it would be written as, and under a Python
across 3.12's grammar change where one is installed: ``helpers.other_grammar_python``), keeps
every comment token, keeps the final newline, and is idempotent (``test_fuzz.check_program``).
The ``slow`` test is the long hunt; the quick one runs a few examples in the default tier.
"""

from __future__ import annotations

import hypothesmith
import pytest
from fuzz_profiles import fuzz_settings
from helpers import on_other_grammar, other_grammar_python
from hypothesis import assume, example, given
from hypothesis import strategies as st
from test_fuzz import GUARD_SETTINGS, check_program, parses, te_programs

pytestmark = [
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

OTHER = other_grammar_python()
TRAILERS = ["", "\t# old_forward = self.fc(x)\n\t# return old_forward\n", "  # tail\n", "# end\n"]


@st.composite
def deep_programs(draw: st.DrawFn, filler: bool = True) -> str:
    source = draw(te_programs(filler=hypothesmith.from_node(auto_target=False) if filler else None))
    newline = "\r\n" if "\r\n" in source else "\r" if "\r" in source else "\n"
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    init = next(i for i, line in enumerate(lines) if line.strip() == "super().__init__()")
    pad = lines[init][: len(lines[init]) - len(lines[init].lstrip())]
    lines.insert(init + 1, f"{pad}self.config = config")  # so that the guard is used
    at = next((i for i, line in enumerate(lines) if "is_first_microbatch=" in line), None)
    if at is not None and draw(st.booleans()):  # the call nested in blocks, 5 to 90 deep
        line = lines[at]
        pad = line[: len(line) - len(line.lstrip())]
        unit = "\t" if pad.startswith("\t") else "    "
        depth = draw(st.integers(5, 90))
        opening = [f"{pad}{unit * d}if x is not None:" for d in range(depth)]
        if line.rstrip().endswith(("(", ",")) or not line.rstrip().endswith(")"):
            depth = 0  # a call over several lines: leave it
        else:
            lines[at : at + 1] = [*opening, f"{pad}{unit * depth}{line.lstrip()}"]
    text = "\n".join(lines)
    if draw(st.booleans()):  # parentheses around the flag, up to 120 deep
        depth = draw(st.integers(5, 120))
        text = text.replace(
            "is_first_microbatch=self.flag", f"is_first_microbatch={'(' * depth}self.flag"
            f"{')' * depth}", 1
        )  # fmt: skip
    if draw(st.booleans()):  # past libcst's depth limit
        text = text.replace(
            "\n\nclass Block", "\nTABLE = " + " + ".join(f"[{i}]" for i in range(520))
            + "\n\n\nclass Block", 1
        )  # fmt: skip
    ends = text.endswith("\n")
    text = text.rstrip("\n") + "\n" + draw(st.sampled_from(TRAILERS))
    if not ends and draw(st.booleans()):
        text = text.rstrip("\n")
    return text.replace("\n", newline)


def check_guard(source: str) -> None:
    assume(parses(source))
    checked = check_program(source, GUARD_SETTINGS)
    if checked.fixed is None:
        return
    new = checked.fixed.text
    compile(new.encode("utf-8"), "<fixed>", "exec", dont_inherit=True)
    if OTHER is not None and new != source:  # the other grammar (across 3.12) too
        there = on_other_grammar(OTHER, source, [new], [])
        assert there["ours"] == [True] or not there["input"], f"does not compile on {OTHER}"
    for ending in ("\r\n", "\r", "\n"):
        if source.endswith(ending):
            assert new.endswith(ending), f"final {ending!r} lost"
            break


@pytest.mark.slow
@fuzz_settings(1.0)  # 60 examples in CI (about 10 s); HYPOTHESIS_PROFILE=long: 3,000, the hunt
@given(deep_programs())
def test_guard_strategy_on_the_review_profile(source: str) -> None:
    check_guard(source)


REVIEW_MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self, config):\n"
    "        self.config = config\n        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n"
    "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
)


@fuzz_settings(0.1)
@given(deep_programs(filler=False))
@example(REVIEW_MODULE + "\t# old_forward = self.fc(x)\n\t# return old_forward\n")
@example(REVIEW_MODULE.replace("\n", "\r"))
@example(
    REVIEW_MODULE.replace(
        "\n\n\nclass", "\nTABLE = " + " + ".join(f"[{i}]" for i in range(520)) + "\n\n\nclass"
    ).replace(
        "import transformer_engine", "#!/usr/bin/env python\nX = 1\nimport transformer_engine"
    )
)
def test_guard_strategy_on_the_review_profile_quick(source: str) -> None:
    check_guard(source)
