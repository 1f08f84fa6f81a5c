"""Reproducers of the fourth reliability review, each kept as a test (the file races #04 and
#05 are in ``test_reliability_files.py``, the fold #19 #20 #22 in ``test_reliability_fold.py``):
``--add-noqa`` (#01 #02 #03 #15), the fixable count (#08), CR-only files (#09), ``--watch``
(#10), SARIF names (#13), the builds reader (#14 #21), ``guard-import`` names (#16), control
characters in names (#17) and ``--show-settings`` (#18)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import other_grammar_env

import lint_rules.fileio as fileio
from lint_rules.cli import main
from lint_rules.fixing import FixError, verify_fixed
from lint_rules.noqa import add_noqa

MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self, config):\n"
    "        self.config = config\n        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n"
    "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
)
CALL = "return self.fc(x, is_first_microbatch=self.flag)"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(text: str) -> str:
    return ast.dump(ast.parse(text))


# ------------------------------------------------------------------------------- --add-noqa


def test_add_noqa_never_edits_a_string_that_spells_noqa(here: Path) -> None:
    """#01: the first ``# noqa`` on the line is inside a string: writing there changes the
    program's data, and a comment after it would not be read (flake8 reads the first)."""
    text = MODULE.replace(f"{CALL}\n", f"{CALL}, '# noqa: E501'\n")
    (here / "m.py").write_text(text)
    main(["check", "--no-cache", "--isolated", "--add-noqa", "m.py"])
    assert (here / "m.py").read_text() == text


def test_add_noqa_never_writes_inside_an_f_string() -> None:
    """#02: on Python 3.12 the tokenizer ends a line inside a triple-quoted f-string's braces;
    the comment goes after the f-string on every Python (a comment in the braces does not
    compile before 3.12)."""
    text = MODULE.replace(
        CALL, 'return f"""{self.fc(x, is_first_microbatch=self.flag,\n        )}"""'
    )
    new, changed = add_noqa(text, [(11, "TEM001")])
    assert changed == 1
    assert new.endswith('        )}"""  # noqa: TEM001\n')
    assert tree(new) == tree(text)


def interpreters() -> dict[tuple[int, int], str]:
    """One interpreter per Python version found: this one, python3.X on PATH, pyenv's."""
    import glob

    candidates = [sys.executable]
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in range(9, 15)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    found: dict[tuple[int, int], str] = {}
    for path in filter(None, candidates):
        done = subprocess.run(
            [path, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode == 0 and done.stdout.strip():
            major, minor = map(int, done.stdout.split())
            if (major, minor) >= (3, 9):
                found.setdefault((major, minor), path)
    return found


@pytest.mark.slow
def test_the_f_string_placement_compiles_on_311_and_312(tmp_path: Path) -> None:
    """#02 across Pythons: ``add_noqa`` run by each interpreter found gives a file that every
    interpreter found compiles."""
    pythons = interpreters()
    if len(pythons) < 2 or min(pythons) >= (3, 12) or max(pythons) < (3, 12):
        pytest.skip("needs a Python 3.12 or later and one before it")
    text = MODULE.replace(
        CALL, 'return f"""{self.fc(x, is_first_microbatch=self.flag,\n        )}"""'
    )
    for writer in pythons.values():
        path = tmp_path / "m.py"
        path.write_text(text)
        script = (
            "import sys; from lint_rules.noqa import add_noqa; p = sys.argv[1]; "
            "t, n = add_noqa(open(p).read(), [(11, 'TEM001')]); open(p, 'w').write(t)"
        )
        env = other_grammar_env()
        subprocess.run([writer, "-c", script, str(path)], check=True, env=env)
        assert "# noqa: TEM001" in path.read_text()
        for reader in pythons.values():
            done = subprocess.run([reader, "-m", "py_compile", str(path)], capture_output=True)
            assert done.returncode == 0, (writer, reader, done.stderr)


@pytest.mark.parametrize(
    "comment, expected",
    [
        ("# noqa: E501 80+ chars ok", "# noqa: E501, TEM001 80+ chars ok"),
        ("# noqa: E501,long line ok", "# noqa: E501, TEM001 long line ok"),
        ("# noqa: E501  # another", "# noqa: E501, TEM001  # another"),
        ("# noqa: E501", "# noqa: E501, TEM001"),
        ("# why not", "# why not  # noqa: TEM001"),
    ],
)
def test_add_noqa_keeps_a_reason_apart_and_is_idempotent(comment: str, expected: str) -> None:
    """#03: the code was glued onto the reason (``TEM00180+ chars ok``)."""
    text = MODULE.replace(f"{CALL}\n", f"{CALL}  {comment}\n")
    new, changed = add_noqa(text, [(11, "TEM001")])
    assert changed == 1 and new.splitlines()[10].endswith(f"{CALL}  {expected}")
    assert add_noqa(new, [(11, "TEM001")]) == (new, 0)


def test_add_noqa_leaves_a_file_edited_since_the_check(
    here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#15: a line added at the top after the check: the check's line numbers are stale, so
    the file is reported (exit 2) and not written."""
    (here / "m.py").write_text(MODULE)
    real, calls = fileio.read_source, []

    def read_source(path: str) -> fileio.SourceFile:
        calls.append(path)
        if len(calls) == 3:  # plan, check, then add-noqa's own read: the user saved before it
            (here / "m.py").write_text("import os\n" + MODULE)
        return real(path)

    monkeypatch.setattr(fileio, "read_source", read_source)
    assert main(["check", "--isolated", "--no-cache", "--add-noqa", "m.py"]) == 2
    assert (here / "m.py").read_text() == "import os\n" + MODULE
    assert "changed on disk since it was checked" in capsys.readouterr().err


# ---------------------------------------------------------------------------- fix and check


def test_the_fixable_count_leaves_out_a_fix_in_debug_text(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#08: ``fix`` refuses an edit inside ``f"{... = }"``; ``check`` must not count it."""
    text = MODULE.replace(CALL, 'print(f"{self.fc(x, is_first_microbatch=self.flag) = }")')
    (here / "m.py").write_text(text)
    assert main(["check", "--isolated", "--no-cache", "--format", "json", "m.py"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding["fixable"] is False
    main(["check", "--isolated", "--no-cache", "m.py"])
    assert "fixable" not in capsys.readouterr().err


def test_a_cr_only_file_with_a_comment_line_is_fixed(here: Path) -> None:
    """#09: the pure-Python tokenizer (3.11 and older) read the header comment to the end of
    a CR-only file, so every fix "would lose a comment"."""
    text = ("# Copyright header\n" + MODULE).replace("\n", "\r")
    (here / "m.py").write_bytes(text.encode())
    assert main(["fix", "--isolated", "--no-cache", "m.py"]) == 0
    assert (here / "m.py").read_bytes() == text.replace("self.flag)", "None)").encode()


def test_guard_import_names_that_cannot_be_imported_are_refused_at_load(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#16: each of these wrote a file that does not compile, or shadowed a builtin, while
    ``fix`` said ``fixed``; now the setting is refused (exit 2), the file untouched."""
    (here / "m.py").write_text(MODULE)
    names = [
        "mod.__debug__", "__future__.annotations", "mod.super", "mod.print", "mod.__name__",
        "mod.ｓｅｌｆ", "mod.if",
    ]  # fmt: skip
    for name in names:
        args = ["fix", "--isolated", "--no-cache", "--fix-strategy", "guard"]
        assert main([*args, "--guard-import", name, "m.py"]) == 2, name
        assert "guard-import" in capsys.readouterr().err
        assert (here / "m.py").read_text() == MODULE


def test_a_fixed_text_that_parses_but_does_not_compile_is_refused() -> None:
    """#16, at the root: ``ast.parse`` accepts ``from m import __debug__``; the compiler not."""
    with pytest.raises(FixError, match="does not compile"):
        verify_fixed("x = 1\n", "from m import __debug__\nx = 1\n")
    verify_fixed("return 1\n", "return 2\n")  # did not compile before either: not the fix's


# ------------------------------------------------------------------------- the builds reader

BUILDS = Path(__file__).resolve().parent.parent / "fixtures" / "lifecycle" / "built_under_switch"


def builds_project(root: Path) -> Path:
    """A project whose lifecycle asks where its TE wrappers are built (megatron-core style):
    a copy of the lifecycle fixture ``built_under_switch``."""
    model = root / "model"
    shutil.copytree(BUILDS / "model", model)
    return model


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_on_the_command_line_never_blocks_the_builds_reader(here: Path) -> None:
    """#14: the builds reader opened every file of the run with a plain ``open``; a FIFO
    (``model/*.py`` names it) blocked it forever, a link to ``/dev/zero`` read to OOM."""
    model = builds_project(here)
    os.mkfifo(model / "pipe.py")
    if os.path.exists("/dev/zero"):
        os.symlink("/dev/zero", model / "zero.py")
    names = sorted(str(p.relative_to(here)) for p in model.iterdir())
    command = [sys.executable, "-m", "lint_rules.cli", "check", "--isolated", "--no-cache"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [*command, *names], cwd=here, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "pipe.py: error: not a regular file" in done.stderr


def test_the_builds_reader_survives_a_long_expression(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#21: a builder file holding a 6,000-term sum raised RecursionError out of the run."""
    model = builds_project(here)
    table = " + ".join(f"[{i}]" for i in range(6000))
    specs = model / "specs.py"
    specs.write_text(specs.read_text() + f"\n\nTABLE = {table}\n")
    sys.setrecursionlimit(1000)  # the default, whatever the test runner set
    assert main(["check", "--isolated", "--no-cache", "model"]) in (0, 1)
    assert "internal error" not in capsys.readouterr().err


# ------------------------------------------------------------------------------ reporting


def test_sarif_takes_a_file_name_that_is_not_utf8(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#13: ``quote`` of a surrogate-escaped name raised UnicodeEncodeError: no SARIF."""
    with open(os.fsencode(here) + b"/lat\xe9.py", "wb") as handle:
        handle.write(MODULE.encode())
    assert main(["check", "--isolated", "--no-cache", "--format", "sarif", "."]) == 1
    sarif = json.loads(capsys.readouterr().out)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    ]
    assert uris == ["lat%E9.py"]


def test_a_file_name_never_forges_a_finding_line(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#17: a newline or an escape in a name is printed escaped, in findings and notes too."""
    (here / "b\nfake.py:1:1: TEM999 forged.py").write_text(MODULE)
    (here / "c\x1b]0;title\x07.py").write_text(MODULE)
    main(["check", "--isolated", "--no-cache", "."])
    out = capsys.readouterr().out
    assert not any(line.startswith("fake.py") for line in out.splitlines())
    assert "\x1b" not in out and "\x07" not in out
    main(["check", "--isolated", "--no-cache", "--show-files", "."])
    assert "\x1b" not in capsys.readouterr().out


def test_show_settings_prints_toml_that_loads_back(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#18: quotes and backslashes were printed raw (``"getattr(self, "config")"``)."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    (here / "m.py").write_text(MODULE)
    (here / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nguard-config = "getattr(self, \\"config\\")"\n'
        'exclude = ["a\\\\b"]\n'
    )
    assert main(["check", "--show-settings", "m.py"]) == 0
    lines = [
        line.split("  # ")[0]
        for line in capsys.readouterr().out.splitlines()
        if not line.startswith("#")
    ]
    table = tomllib.loads("\n".join(lines))
    assert table["guard-config"] == 'getattr(self, "config")'
    assert "a\\b" in table["exclude"]


# ---------------------------------------------------------------------------------- --watch


@pytest.mark.slow
def test_watch_follows_a_directory_deleted_and_made_again(here: Path) -> None:
    """#10: after ``rm -rf w && mkdir w`` the watch heard nothing more."""
    pytest.importorskip("watchfiles")
    from lint_rules.cli.aids import watch

    (here / "w").mkdir()
    (here / "w" / "m.py").write_text(MODULE)
    stop, runs = threading.Event(), []

    def edit() -> None:
        time.sleep(1.5)
        shutil.rmtree(here / "w")
        time.sleep(1.5)
        (here / "w").mkdir()
        (here / "w" / "m.py").write_text(MODULE)
        for n in range(20):  # edits until the watch has run twice since (a safety bound)
            if stop.wait(1.5):
                return
            (here / "w" / "m.py").write_text(MODULE + f"x = {n}\n")
        stop.set()

    editor = threading.Thread(target=edit, daemon=True)
    editor.start()
    watch(lambda: runs.append(os.path.isdir(here / "w")) or 0, ["w"], 4, stop)
    stop.set()
    editor.join(10)
    assert len(runs) == 5, runs  # the first run, then four re-runs
    assert runs[-2:] == [True, True]  # the last two after the directory came back
