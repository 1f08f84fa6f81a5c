"""The prefilter's str.find searches answer exactly what its two regular expressions answer.

``prefilter._TE_IMPORT`` and ``prefilter._TE_CLASS_WORD`` stay the specification; the searches
(``_imports_te``, ``_names_te_class``) are what runs, because the regexes cost most of a
cached ``check`` run on megatron-core (see benchmarks/README.md).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_rules.analysis.prefilter import (
    _TE_CLASS_WORD,
    _TE_IMPORT,
    _imports_te,
    _names_te_class,
    mentions_flag,
)

PIECES = [
    "transformer_engine",
    "transformer_engine2",
    "from",
    "import",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    ".",
    "nn.",
    "te.",
    "Linear",
    "LayerNormLinear",
    "GroupedLinear",
    "TELinear",
    "Linear_",
    "LinearX",
    "é",
    "_",
    "#",
    "x",
    "(",
    ")",
    "as",
    "pytorch",
    "MultiheadAttention",
    ",",
    ";",
    ":",
    "\\",
    "\\\n",
    "\\\r\n",
    "\f",
    "try",
    "reimport",
]

CASES = [
    "import transformer_engine",
    "from transformer_engine.pytorch import Linear",
    "  \tfrom\ttransformer_engine import x",
    "fromtransformer_engine",
    "# import transformer_engine",
    "x = 1; import transformer_engine",
    "import transformer_engineX",
    "import transformer_engine_torch",
    "\rimport transformer_engine",
    "a\r\nimport transformer_engine\r\n",
    "nn.Linear",
    "te.Linear",
    "TELinear",
    "Linear",
    "Linearé",
    "éLinear",
    "_Linear",
    "ColumnParallelLinear",
    "x.nn.Linear",
    "nn. Linear",
    "LayerNormLinear(",
    "",
    "try: import transformer_engine.pytorch as te",
    "if HAVE_TE: from transformer_engine.pytorch import Linear",
    "import torch, transformer_engine.pytorch as te",
    "import torch; import transformer_engine.pytorch as te",
    "\fimport transformer_engine",
    "from \\\ntransformer_engine.pytorch import Linear",
    "from \\\r\n  transformer_engine import x",
    "a\rb\rimport transformer_engine\r",
    "import\\transformer_engine",
    "reimport transformer_engine",
    "importtransformer_engine",
    "x = transformer_engine",
    "from megatron.core.extensions import transformer_engine",
    "tenn.Linear",
]


def check(text: str) -> None:
    assert _imports_te(text) == (re.search(_TE_IMPORT, text) is not None), repr(text)
    assert _names_te_class(text) == (re.search(_TE_CLASS_WORD, text) is not None), repr(text)


@pytest.mark.parametrize("text", CASES)
def test_edge_cases(text: str) -> None:
    check(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_generated_texts(pieces: list[str]) -> None:
    check("".join(pieces))


def test_prefilter_still_admits_a_te_class_file() -> None:
    assert mentions_flag("import transformer_engine.pytorch as te\nl = te.Linear(1, 1)\n")
    # `nn` may be TE itself (`import transformer_engine.pytorch as nn`): a class word counts.
    assert mentions_flag("import transformer_engine.pytorch as nn\nl = nn.Linear(1, 1)\n")
    assert mentions_flag("try: import transformer_engine.pytorch as te\nexcept: pass\nte.Linear")
    assert mentions_flag("import torch\rimport transformer_engine.pytorch as te\rte.Linear\r")
    assert not mentions_flag("from torch import nn\nl = nn.Linear(1, 1)\n")
    assert not mentions_flag('x = "requires transformer_engine"\nLinear = 1\n')
