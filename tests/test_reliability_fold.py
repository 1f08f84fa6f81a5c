"""The fold of a local that only fed the flag (reproducers #19, #20 and #22 of a reliability
review): the default fix never deletes a local the code still reads dynamically, never leaves a
new pyflakes warning, and never empties a block."""

from __future__ import annotations

import io

import pytest
from pyflakes.api import check
from pyflakes.reporter import Reporter

from lint_rules.fixing import fix_source
from lint_rules.settings import DEFAULT_SETTINGS
from lint_rules.slotted import replace

HEAD = (
    "import contextlib\n\nimport transformer_engine.pytorch as te\n\n\nclass B:\n"
    "    def __init__(self):\n        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n"
    "    def get(self):\n        return self.flag\n\n    def forward(self, x):\n"
)
TAIL = (
    "        y = self.fc(x, is_first_microbatch=_F)\n        self.flag = False\n        return y\n"
)

SHAPES = {
    "plain": "        _F = self.flag\n",
    "annotated": "        _F: bool = self.flag\n",
    "if_else": "        if x is None:\n            _F = self.flag\n        else:\n"
    "            _F = not self.flag\n",
    "try_except": "        try:\n            _F = self.flag\n        except Exception:\n"
    "            _F = False\n",
    "chained_first": "        _F = other = self.flag\n        print(other)\n",
    "chained_last": "        other = _F = (self.flag)\n        print(other)\n",
    "tuple": "        _F, z = self.flag, 1\n        print(z)\n",
    "starred": "        *_F, = [self.flag]\n",
    "with_as_earlier": "        with contextlib.nullcontext() as _F:\n            pass\n"
    "        _F = self.flag\n",
    "type_comment": "        _F = self.flag  # type: bool\n",
    "semicolon": "        _F = self.flag; z = 1\n        print(z)\n",
    "call_value": "        _F = self.get()\n",
    "only_statement_of_with": "        with contextlib.nullcontext():\n"
    "            _F = self.flag\n",
    "only_statements_of_if": "        if x is None:\n            _F = self.flag\n"
    "            _F = not _F\n",
    "augmented": "        _F = self.flag\n        _F += 0\n",
    "walrus": "        print(_F := self.flag)\n",
    "for_target": "        for _F in [self.flag]:\n            pass\n",
    "in_a_loop": "        for _ in range(1):\n            _F = self.flag\n",
}
DYNAMIC = {
    "eval": '        _F = self.flag\n        print(eval("_F"))\n',
    "vars": '        _F = self.flag\n        print(vars()["_F"])\n',
    "locals": "        _F = self.flag\n        print(locals())\n",
    "exec": '        _F = self.flag\n        exec("print(_F)")\n',
}


def warnings_of(text: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    check(text, "m.py", Reporter(out, err))
    return [line.split(":", 3)[-1].strip() for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("unsafe", [False, True], ids=["default", "unsafe"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_no_fold_shape_leaves_a_new_pyflakes_warning(shape: str, unsafe: bool) -> None:
    text = HEAD + SHAPES[shape] + TAIL
    before = warnings_of(text)
    result = fix_source(text, replace(DEFAULT_SETTINGS, unsafe_fixes=unsafe))
    compile(result.text, "m.py", "exec")
    assert "is_first_microbatch=None" in result.text, result.notes  # fixed, never refused
    assert warnings_of(result.text) == before, result.text


@pytest.mark.parametrize("shape", sorted(DYNAMIC))
def test_a_local_read_dynamically_is_never_deleted(shape: str) -> None:
    """#19: ``eval("_F")``, ``vars()``, ``locals()`` and ``exec`` read the local by name; the
    default fix leaves the function alone (the fix is unsafe), the unsafe fix keeps the local."""
    text = HEAD + DYNAMIC[shape] + TAIL
    assert fix_source(text).text == text
    unsafe = fix_source(text, replace(DEFAULT_SETTINGS, unsafe_fixes=True))
    assert "_F = self.flag" in unsafe.text and "is_first_microbatch=None" in unsafe.text


def test_a_fold_that_empties_a_block_writes_pass() -> None:
    """#22: the assignment was the whole of a ``with`` block: it becomes ``pass``."""
    text = HEAD + SHAPES["only_statement_of_with"] + TAIL
    fixed = fix_source(text).text
    assert "        with contextlib.nullcontext():\n            pass\n" in fixed
    assert "_F" not in fixed
