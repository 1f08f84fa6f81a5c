"""The guard strategy never damages a file or changes what it means (reproducers of a
reliability review, each kept as a test).

The guard's import is one text-level insertion: after the docstring, the ``__future__``
imports and the first block of imports, never above a shebang or coding cookie; in its own
``try`` block where megatron is an optional dependency. "Already imported" means a real
``from <guard module> import <name>`` that runs wherever the module runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_rules.cli import main
from lint_rules.fixing import FixError, fix_source
from lint_rules.settings import DEFAULT_SETTINGS
from lint_rules.slotted import replace

GUARD = replace(DEFAULT_SETTINGS, fix_strategy="guard")
IMPORT = "from megatron.core.transformer.module import is_first_microbatch_tracked"
CLASS = (
    "class B:\n    def __init__(self, config):\n        self.config = config\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)
M = "import transformer_engine.pytorch as te\n\n\n" + CLASS


def comment_tokens(text: str) -> list[str]:
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


def _run(text: str, *names: str) -> None:
    """Execute ``text`` with stub TE (and no megatron unless ``names`` give it)."""
    import sys
    import types

    te = types.ModuleType("transformer_engine.pytorch")
    te.Linear = lambda *a: lambda x, is_first_microbatch=None: is_first_microbatch
    stubs = {
        "transformer_engine": types.ModuleType("transformer_engine"),
        "transformer_engine.pytorch": te,
    }
    saved = {k: sys.modules.get(k) for k in [*stubs, "megatron"]}
    sys.modules.update(stubs)
    sys.modules["megatron"] = None  # type: ignore[assignment]  # ImportError on import
    try:
        namespace: dict = {"__name__": "fixed"}
        exec(compile(text, "fixed.py", "exec"), namespace)
        namespace["B"](None).forward(1)
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value


def test_deep_module_keeps_shebang_and_cookie_first(tmp_path: Path) -> None:
    """Past libcst's depth limit the import went to line 0, above the cookie: the latin-1
    file no longer compiled, and fix said `fixed`."""
    text = (
        "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n__all__ = ['B']\n"
        "import transformer_engine.pytorch as te\n\n"
        "TABLE = "
        + " + ".join(f"[{i}]" for i in range(520))
        + "\n\n\n"
        + CLASS.replace("self.flag = True", "self.s = 'caf\xe9'")
    )
    path = tmp_path / "m.py"
    path.write_bytes(text.encode("latin-1"))
    assert main(["fix", "--no-cache", "--fix-strategy", "guard", str(path)]) == 0
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    assert lines[:4] == [
        b"#!/usr/bin/env python",
        b"# -*- coding: latin-1 -*-",
        b"__all__ = ['B']",
        b"import transformer_engine.pytorch as te",
    ]
    assert lines[4] == IMPORT.encode()
    compile(raw, str(path), "exec")


@pytest.mark.parametrize("indent", ["\t", "  ", "            "])
def test_trailing_comments_with_other_indentation_are_kept(indent: str) -> None:
    text = M + f"{indent}# old_forward = self.fc(x)\n{indent}# return old_forward\n"
    new = fix_source(text, GUARD).text
    assert comment_tokens(new) == comment_tokens(text)
    assert new.endswith(f"{indent}# old_forward = self.fc(x)\n{indent}# return old_forward\n")


@pytest.mark.parametrize("fallback", ["is_first_microbatch_tracked = None", "pass"])
def test_an_optional_import_with_a_non_callable_fallback_gets_a_callable_one(
    fallback: str,
) -> None:
    text = (
        "import transformer_engine.pytorch as te\ntry:\n    " + IMPORT + "\nexcept ImportError:\n"
        f"    {fallback}\n\n\n" + CLASS
    )
    _run(text)  # the premise: it runs without megatron
    new = fix_source(text, GUARD).text
    assert "is_first_microbatch_tracked(self.config)" in new
    _run(new)  # TypeError ('NoneType' is not callable) or NameError before


@pytest.mark.parametrize(
    "prelude",
    [
        f"if __name__ == '__main__':\n    {IMPORT}\n",
        "if __name__ == '__main__':\n    pass\nelse:\n    pass\n",
    ],
)
def test_an_import_only_under_main_is_not_the_guard(prelude: str) -> None:
    text = M.replace("\n\n\n", f"\n{prelude}\n\n", 1)
    new = fix_source(text, GUARD).text
    assert IMPORT in new.split("\n")[:3]


@pytest.mark.parametrize(
    "suffix, why",
    [
        (f"{IMPORT}\ndel is_first_microbatch_tracked\n", "deleted"),
        ("is_first_microbatch_tracked = print\n", "bound to something else"),
    ],
)
def test_a_deleted_or_rebound_guard_name_is_refused(suffix: str, why: str) -> None:
    text = M.replace("\n\n\n", f"\n{suffix}\n\n", 1)
    with pytest.raises(FixError, match=why):
        fix_source(text, GUARD)


@pytest.mark.parametrize("guard", ["mylib.te", "mylib.B"])
def test_a_same_named_module_binding_is_never_called_as_the_guard(guard: str) -> None:
    """`--guard-import mylib.te` wrote `te(self.config)` (the TE module); `mylib.B` built a new
    module. The fix is refused instead: importing the guard would rebind that name."""
    with pytest.raises(FixError, match="bound to something else"):
        fix_source(M, replace(GUARD, guard_import=guard))


def test_a_one_line_optional_import_stays_optional() -> None:
    text = (
        "import transformer_engine.pytorch as te\n"
        "try: from megatron.core.transformer.module import MegatronModule\n"
        "except ImportError: MegatronModule = object\n\n\n"
        + CLASS.replace("class B:", "class B(MegatronModule):")
    )
    _run(text)
    new = fix_source(text, GUARD).text
    assert f"\n{IMPORT}\n" not in new  # never a bare, mandatory import
    _run(new)


@pytest.mark.parametrize(
    "config, why",
    [("get_args()", "`get_args` is not in scope"), ("config", "`config` is not in scope")],
)
def test_a_guard_config_root_out_of_scope_is_never_the_receiver(config: str, why: str) -> None:
    result = fix_source(M, replace(GUARD, guard_config=config))
    assert "self()" not in result.text and "tracked(self)" not in result.text
    assert "is_first_microbatch=None" in result.text
    assert any(why in note for note in result.notes)


def test_cr_only_file_keeps_its_final_cr() -> None:
    text = M.replace("\n", "\r")
    new = fix_source(text, GUARD).text
    assert new.endswith("\r") and "\n" not in new
    assert f"\r{IMPORT}\r" in new


@pytest.mark.parametrize(
    "text",
    [
        M.replace("        self.fc = te.Linear", "\f        self.fc = te.Linear"),
        M.replace("    def forward", "\f    def forward"),
    ],
)
def test_form_feeds_in_indentation_are_fixed(text: str) -> None:
    ast.parse(text)
    new = fix_source(text, GUARD).text
    assert IMPORT in new and "\f" in new
    ast.parse(new)


def test_a_backslash_continued_import_is_merged_into_without_breaking_it() -> None:
    text = (
        "import transformer_engine.pytorch as te\n"
        "from megatron.core.transformer.module import MegatronModule, \\\n    fake\n\n\n" + CLASS
    )
    new = fix_source(text, GUARD).text
    ast.parse(new)
    assert "is_first_microbatch_tracked" in new.split("\n\n\n")[0]


def test_the_import_goes_after_the_docstring_and_future_imports() -> None:
    text = '"""Doc."""\nfrom __future__ import annotations\n\nX = 1\n' + M
    lines = fix_source(text, GUARD).text.split("\n")
    assert lines[:5] == [
        '"""Doc."""',
        "from __future__ import annotations",
        "",
        "X = 1",
        "import transformer_engine.pytorch as te",
    ]
    assert lines[5] == IMPORT


def test_fix_twice_changes_nothing_with_the_optional_block() -> None:
    text = (
        "import transformer_engine.pytorch as te\ntry:\n    import megatron\nexcept ImportError:\n"
        "    megatron = None\n\n\n" + CLASS
    )
    once = fix_source(text, GUARD).text
    assert (
        fix_source(once + CLASS.replace("class B", "class C"), GUARD).text.count(
            "def is_first_microbatch_tracked"
        )
        == 1
    )


def test_verification_refuses_lost_comments_and_bytes_that_do_not_parse() -> None:
    from lint_rules.fixing import verify_fixed

    verify_fixed("x = 1  # c\n", "x = None  # c\n")
    with pytest.raises(FixError, match="lose a comment"):
        verify_fixed("x = 1  # c\n# d\n", "x = 1  # c\n")
    moved = "import m\n# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n"
    verify_fixed(moved, moved)  # as text it parses
    with pytest.raises(FixError, match="does not parse"):
        verify_fixed(moved, moved, "latin-1")  # as the bytes written, the cookie is not read


def test_fix_never_says_fixed_for_a_result_it_would_break(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever goes wrong in the fixer, a result that fails the re-check is not written."""
    import lint_rules.fixing as fixing

    path = tmp_path / "m.py"
    path.write_text(M + "# keep me\n")
    monkeypatch.setattr(
        fixing, "add_guard_import", lambda text, dotted: text[: -len("# keep me\n")]
    )
    assert main(["fix", "--no-cache", "--fix-strategy", "guard", str(path)]) == 2
    assert path.read_text() == M + "# keep me\n"
    err = capsys.readouterr().err
    assert (
        "error: not fixed: the fixed text would lose a comment" in err and "fixed m.py" not in err
    )
