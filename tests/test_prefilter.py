"""The byte prefilter: a file is parsed only when it spells the flag, or when it imports TE and
names a TE module class (a positional flag may be named anything there). Every other file
costs a few byte searches."""

import ast
from unittest import mock

import pytest

from lint_rules.analysis import analyze_source, mentions_flag

CALL = "class B:\n    def forward(self, x):\n        return self.fc(x, self.first)\n"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("import torch\n" + CALL, id="no-te"),
        pytest.param("# transformer_engine.pytorch.Linear, in a comment\n" + CALL, id="comment"),
        pytest.param("import transformer_engine.pytorch as te\nte.fp8_autocast()\n", id="no-class"),
        pytest.param('NAME = "transformer_engine"\nLinear = 1\n' + CALL, id="string-only"),
    ],
)
def test_not_parsed(text: str) -> None:
    assert not mentions_flag(text)
    with mock.patch.object(ast, "parse", side_effect=AssertionError("parsed")):
        assert analyze_source(text) == []


@pytest.mark.parametrize(
    "head",
    [
        "import transformer_engine.pytorch as te\n",
        "from transformer_engine.pytorch import Linear\n",
        "try:\n    import transformer_engine as te\nexcept ImportError:\n    te = None\n",
    ],
)
def test_te_files_are_parsed_for_positional_flags(head: str) -> None:
    spelled = "te.pytorch.Linear" if "as te\n" in head and "pytorch" not in head else "te.Linear"
    if "import Linear" in head:
        spelled = "Linear"
    text = head + (
        "class B:\n"
        "    def __init__(self):\n"
        f"        self.fc = {spelled}(4, 4)\n"
        "        self.first = True\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(x, self.first)\n"
    )
    assert mentions_flag(text)
    assert [(f.code, f.line) for f in analyze_source(text)] == [("TEM002", text.count("\n"))]
