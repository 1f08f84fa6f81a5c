"""The installed ``te-microbatch-lint`` command, run as a user runs it, on temporary trees.

The sample tree is ``fixtures/cli/project``: ``pkg/model.py`` has a fixable TEM001 (after
non-ASCII text on its line) and an unfixable TEM004, ``pkg/suppressed.py`` a finding under
``# noqa``, ``pkg/clean.py`` nothing, ``pkg/sub/unresolved.py`` two calls to an unresolved
callee (one of them tracked by a guard function named ``tracked``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    IN_PROCESS_UNSAFE,
    SAMPLE_PYPROJECT,
    run_in_process,
    te_lint_command,
    without_notes,
)

from lint_rules import __version__
from lint_rules.analysis import analyze_source
from lint_rules.noqa import filter_noqa
from lint_rules.settings import Settings

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cli" / "project"
FLAG = "is_first_microbatch"
CLEAN = "All checks passed!\n"
"""What a clean ``check`` prints, as ruff does."""


command = te_lint_command


def run(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    """The command; stdout without the evidence's ``note:`` lines (one line per finding). In
    this process where nothing needs a process of its own (``helpers.run_in_process``)."""
    if not kwargs and not IN_PROCESS_UNSAFE.intersection(args):
        return without_notes(run_in_process(list(args), cwd))
    done = subprocess.run(
        [command(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        **kwargs,
    )
    return without_notes(done)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the sample tree, with its own pyproject.toml (a strict project: unresolved
    callees reported) so no outer one applies."""
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT)
    return root


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


STRICT = Settings(unresolved="report")
"""The sample tree's settings (``SAMPLE_PYPROJECT``)."""


def expected_text(root: Path, relative: str, shown: str | None = None) -> list[str]:
    """flake8's format of what the core reports for one file (the sample tree's settings),
    noqa applied."""
    text = (root / relative).read_text(encoding="utf-8")
    kept, _ = filter_noqa(analyze_source(text, STRICT), text)
    shown = shown or relative
    return [
        f"{shown}:{f.line}:{f.col + 1}: {f.message}" for f in sorted(kept, key=lambda f: f.sort_key)
    ]


def flag_columns(path: Path, line: int) -> tuple[int, int]:
    """(1-based byte column, 1-based character column) of the flag keyword on ``line``."""
    text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    chars = text.index(FLAG)
    return len(text[:chars].encode("utf-8")) + 1, chars + 1


# ------------------------------------------------------------------------------------ check


def test_text_output_is_flake8s_format_exactly(tree: Path) -> None:
    result = run("check", "pkg", cwd=tree)
    assert result.returncode == 1, result.stderr
    assert result.stderr == FIXABLE_HINT
    want = []
    for relative in ("pkg/clean.py", "pkg/model.py", "pkg/sub/unresolved.py", "pkg/suppressed.py"):
        want += expected_text(tree, relative)
    assert result.stdout.splitlines() == want
    # Anchors that do not depend on the core: model.py line 12's keyword, byte column + 1.
    model = [line for line in want if line.startswith("pkg/model.py:")]
    byte_col, char_col = flag_columns(tree / "pkg/model.py", 12)
    assert byte_col != char_col  # the line has non-ASCII text before the keyword
    assert model[0].startswith(f"pkg/model.py:12:{byte_col}: TEM001 ")
    assert model[1].startswith("pkg/model.py:13:") and ": TEM004 " in model[1]
    assert not any(line.startswith("pkg/suppressed.py") for line in want)


FIXABLE_HINT = "[*] 1 fixable with `te-microbatch-lint fix` (2 more with `fix --unsafe-fixes`)\n"
"""model.py's TEM001 has a safe fix, TEM004 none, the two unresolved callees unsafe ones."""


def test_fixable_hint_is_on_stderr_and_not_with_quiet(tree: Path) -> None:
    assert run("check", "--quiet", "pkg", cwd=tree).stderr == ""
    assert run("check", "--select", "TEM004", "pkg", cwd=tree).stderr == ""
    assert run("check", "--format", "json", "pkg", cwd=tree).stderr == ""


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_fixable_findings_are_marked_on_a_terminal_only(tree: Path) -> None:
    """On a terminal, a finding with a safe fix reads ``CODE [*] message``, as in ruff, with
    the path, the code and the mark in colour; through a pipe (tools, CI) the lines stay byte
    for byte flake8's."""
    import pty

    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    with os.fdopen(primary, "rb", buffering=0) as reader:
        process = subprocess.Popen(
            [command(), "check", "pkg"],
            cwd=tree,
            stdout=secondary,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = reader.read(4096)
            except OSError:  # EIO: the other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=60) == 1
    painted = b"".join(chunks).decode().replace("\r\n", "\n")
    assert "\x1b[1;31mTEM001\x1b[0m" in painted
    shown = [line for line in ANSI.sub("", painted).splitlines() if not line.startswith("  note:")]
    piped = run("check", "pkg", cwd=tree).stdout.splitlines()
    assert len(shown) == len(piped)
    flake8_line = re.compile(
        r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$"
    )
    for mine, plain in zip(shown, piped):
        assert flake8_line.match(mine) and flake8_line.match(plain)
        if plain.startswith("pkg/model.py:12:"):
            assert mine == plain.replace(" TEM001 ", " TEM001 [*] ", 1)
        else:
            assert mine == plain


@pytest.mark.parametrize(
    ("flags", "env", "coloured"),
    [
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "always"), {"NO_COLOR": "1"}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        ((), {}, False),
    ],
)
def test_colour_follows_no_color_force_color_and_the_flag(
    tree: Path, flags: tuple, env: dict, coloured: bool
) -> None:
    """``NO_COLOR`` wins over ``FORCE_COLOR``, and ``--color always|never`` over both; a pipe
    without them gets no colour. Coloured, the safe fix is marked ``[*]`` as on a terminal."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    result = run("check", *flags, "pkg", cwd=tree, env={**base, **env})
    assert result.returncode == 1
    assert ("\x1b[" in result.stdout) is coloured
    assert ("[*]" in result.stdout) is coloured
    plain = run("check", "pkg", cwd=tree, env=base).stdout
    assert ANSI.sub("", result.stdout).replace(" [*]", "") == plain


def test_text_output_matches_flake8_plugin(tree: Path) -> None:
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", "pkg"],
        cwd=tree,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    ours = run("check", "--output-format", "concise", "pkg", cwd=tree)
    assert sorted(ours.stdout.splitlines()) == sorted(flake8.stdout.splitlines())
    # the evidence on the finding's one line, as much as fits in 160 characters (here none:
    # the message fills the line; `explain` and the text format show every step). The message
    # itself is never cut: a strict project's provenance note can carry it past 160 alone.
    lines = flake8.stdout.splitlines()
    assert all(len(line) <= 160 or ("(:" not in line and "explain" not in line) for line in lines)
    assert any(len(line) <= 160 for line in lines)


def test_full_text_puts_the_evidence_under_each_finding(tree: Path) -> None:
    """The default text output: each finding's line as flake8 prints it without the evidence,
    then one ``  note: PATH:LINE: step`` line per step (the evidence of the analysis)."""
    done = subprocess.run(
        [command(), "check", "pkg/model.py"], cwd=tree, capture_output=True, text=True
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pkg/model.py:12:28: TEM001 is_first_microbatch given to")
    assert lines[1].startswith("  note: pkg/model.py:12: ")
    concise = run("check", "--output-format", "concise", "pkg/model.py", cwd=tree)
    step = lines[1].split(": ", 2)[2]
    assert concise.stdout.splitlines()[0] in (lines[0], f"{lines[0]} ({step} (:12))")


def test_directory_argument_paths_are_joined_like_flake8(tree: Path) -> None:
    result = run("check", ".", cwd=tree)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == expected_text(tree, "pkg/model.py", "./pkg/model.py")[0]


def test_clean_tree_exits_0_and_says_so(tree: Path) -> None:
    result = run("check", "pkg/clean.py", "pkg/suppressed.py", "pkg/__init__.py", cwd=tree)
    assert (result.returncode, result.stdout, result.stderr) == (0, CLEAN, "")


def test_exit_zero_keeps_the_findings_but_not_the_status(tree: Path) -> None:
    result = run("check", "--exit-zero", "pkg", cwd=tree)
    assert result.returncode == 0
    assert result.stdout == run("check", "pkg", cwd=tree).stdout != ""
    assert run("check", "--exit-zero", "pkg", "missing.py", cwd=tree).returncode == 2


def test_disable_noqa_reports_suppressed_findings(tree: Path) -> None:
    result = run("check", "--disable-noqa", "pkg/suppressed.py", cwd=tree)
    assert result.returncode == 1
    assert result.stdout.startswith("pkg/suppressed.py:10:")


def test_bad_files_are_named_with_reason_and_the_rest_still_checked(tree: Path) -> None:
    (tree / "pkg" / "broken.py").write_text(f"def f(:\n    {FLAG}\n")
    (tree / "pkg" / "latin.py").write_bytes(b"s = '\xe9'\n")
    result = run("check", "pkg", "missing.py", cwd=tree)
    assert result.returncode == 2
    errors = result.stderr.splitlines()
    assert any(e.startswith("pkg/broken.py: error: cannot parse") for e in errors), errors
    assert any(e.startswith("pkg/latin.py: error: ") and "UTF-8" in e for e in errors), errors
    assert any(e.startswith("missing.py: error: ") for e in errors), errors
    assert len(errors) == 4 and errors[-1] + "\n" == FIXABLE_HINT
    assert expected_text(tree, "pkg/model.py")[0] in result.stdout.splitlines()


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--format", "xml", "pkg"),
        ("check", "--jobs", "0", "pkg"),
        ("lint", "pkg"),
        ("check", "--te-unresolved", "sometimes", "pkg"),
        ("check", "--config", "nowhere.toml", "pkg"),
    ],
)
def test_usage_errors_exit_2(tree: Path, args: tuple[str, ...]) -> None:
    result = run(*args, cwd=tree)
    assert result.returncode == 2
    assert result.stdout == ""
    # one line, as for a configuration error; not argparse's usage block
    assert result.stderr.startswith("te-microbatch-lint: error: ")
    assert result.stderr.count("\n") == 1, result.stderr


def test_usage_error_unknown_option_is_one_line(tree: Path) -> None:
    result = run("check", "--unresolved", "maybe", "pkg", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("te-microbatch-lint: error: argument --unresolved")
    assert "'maybe'" in result.stderr


def test_options_are_never_abbreviated(tree: Path) -> None:
    """A ruff habit, `check --fix`, is not taken for `--fix-strategy` (argparse's prefix
    matching): it is an unknown option, with the command that fixes named; no file changes."""
    before = snapshot(tree)
    result = run("check", "--fix", "none", "pkg", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "unrecognized arguments: --fix" in result.stderr
    assert "te-microbatch-lint fix PATH" in result.stderr
    assert snapshot(tree) == before
    shortened = run("check", "--sel", "TEM001", "pkg", cwd=tree)
    assert shortened.returncode == 2
    assert "unrecognized arguments: --sel" in shortened.stderr


def test_output_format_is_ruffs_spelling_of_format(tree: Path) -> None:
    ruff_style = run("check", "--output-format", "json", "pkg", cwd=tree)
    ours = run("check", "--format", "json", "pkg", cwd=tree)
    assert ruff_style.returncode == ours.returncode == 1
    assert json.loads(ruff_style.stdout) == json.loads(ours.stdout)


@pytest.mark.parametrize("command_name", ["check", "fix"])
def test_no_path_means_the_current_directory(tree: Path, command_name: str) -> None:
    """As in ruff and flake8: no PATH is `.`."""
    named = (
        run(command_name, "--diff", ".", cwd=tree)
        if command_name == "fix"
        else run("check", ".", cwd=tree)
    )
    bare = (
        run(command_name, "--diff", cwd=tree) if command_name == "fix" else run("check", cwd=tree)
    )
    assert bare.returncode == named.returncode == 1
    assert bare.stdout == named.stdout != ""


def test_invalid_config_exits_2(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nunresolved = "maybe"\n')
    result = run("check", "pkg", cwd=tree)
    assert result.returncode == 2
    assert "unresolved" in result.stderr


def test_version(tree: Path) -> None:
    result = run("--version", cwd=tree)
    assert (result.returncode, result.stdout.strip()) == (0, f"te-microbatch-lint {__version__}")


def test_select_and_ignore(tree: Path) -> None:
    only = run("check", "--select", "TEM004", "pkg", cwd=tree)
    assert [line.split(": ")[1].split()[0] for line in only.stdout.splitlines()] == ["TEM004"]
    assert only.returncode == 1
    none = run("check", "--ignore", "TEM", "pkg", cwd=tree)
    assert (none.returncode, none.stdout) == (0, CLEAN)


def test_json_format(tree: Path) -> None:
    text = run("check", "pkg", cwd=tree).stdout.splitlines()
    result = run("check", "--format", "json", "pkg", cwd=tree)
    assert result.returncode == 1
    rows = json.loads(result.stdout)
    assert len(rows) == len(text)
    keys = {"path", "code", "message", "line", "column", "end_line", "end_column", "fixable"}
    keys |= {"applicability", "filename", "location", "end_location", "noqa_row"}  # no `url`:
    # no `docs-url` is set (tests/test_ruff_user.py)
    keys |= {"fix", "evidence", "verdict"}
    for row, line in zip(rows, text):
        assert set(row) == keys
        # As in ruff: the message without the code, which has its own key.
        assert (
            line == f"{row['path']}:{row['line']}:{row['column']}: {row['code']} {row['message']}"
        )
        assert not row["message"].startswith(row["code"])
        assert (row["end_line"], row["end_column"]) >= (row["line"], row["column"])
        assert row["filename"] == str((tree / row["path"]).resolve())
        assert row["location"]["row"] == row["line"]  # columns: characters, not bytes
        assert row["location"]["column"] <= row["column"]
        assert (row["fix"] is None) == (row["applicability"] is None)
    by_code = {(r["path"], r["code"]): r for r in rows}
    assert by_code[("pkg/model.py", "TEM001")]["fixable"] is True
    assert by_code[("pkg/model.py", "TEM004")]["fixable"] is False
    assert (
        by_code[("pkg/model.py", "TEM001")]["column"] == flag_columns(tree / "pkg/model.py", 12)[0]
    )
    assert json.loads(run("check", "--format", "json", "pkg/clean.py", cwd=tree).stdout) == []


def check_sarif_shape(log: dict) -> None:
    """The parts of the SARIF 2.1.0 schema that code-scanning uploads rely on."""
    assert log["version"] == "2.1.0"
    assert "sarif" in log["$schema"] and "2.1.0" in log["$schema"]
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run_ = log["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "te-microbatch-lint"
    assert driver.get("informationUri", "https://").startswith(("http://", "https://"))
    ids = [rule["id"] for rule in driver["rules"]]
    assert len(ids) == len(set(ids)) and ids
    for rule in driver["rules"]:
        assert re.fullmatch(r"TEM\d{3}", rule["id"])
        assert (
            isinstance(rule["shortDescription"]["text"], str) and rule["shortDescription"]["text"]
        )
        assert "{" not in rule["shortDescription"]["text"]
    assert run_.get("columnKind", "utf16CodeUnits") in ("utf16CodeUnits", "unicodeCodePoints")
    for result in run_["results"]:
        assert result["ruleId"] in ids
        if "ruleIndex" in result:
            assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert isinstance(result["message"]["text"], str)
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert isinstance(physical["artifactLocation"]["uri"], str)
        region = physical["region"]
        for key in ("startLine", "startColumn", "endLine", "endColumn"):
            assert isinstance(region[key], int) and region[key] >= 1
        assert (region["endLine"], region["endColumn"]) >= (
            region["startLine"],
            region["startColumn"],
        )


def test_sarif_format(tree: Path) -> None:
    result = run("check", "--format", "sarif", "pkg", cwd=tree)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    check_sarif_shape(log)
    results = log["runs"][0]["results"]
    assert len(results) == len(run("check", "pkg", cwd=tree).stdout.splitlines())
    tem001 = next(
        r
        for r in results
        if r["ruleId"] == "TEM001"
        and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/model.py"
    )
    region = tem001["locations"][0]["physicalLocation"]["region"]
    _, char_col = flag_columns(tree / "pkg/model.py", 12)
    assert (region["startLine"], region["startColumn"]) == (12, char_col)  # characters, not bytes
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_reports_unreadable_files_as_notifications(tree: Path) -> None:
    result = run("check", "--format", "sarif", "pkg/clean.py", "missing.py", cwd=tree)
    assert result.returncode == 2
    log = json.loads(result.stdout)
    check_sarif_shape(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "missing.py"


def test_github_format(tree: Path) -> None:
    result = run("check", "--format", "github", "pkg/model.py", cwd=tree)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    pattern = re.compile(
        r"::warning file=pkg/model\.py,line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+),"
        r"title=(TEM\d{3})::(.*)"
    )
    first = pattern.fullmatch(lines[0])
    assert first, lines[0]
    _, char_col = flag_columns(tree / "pkg/model.py", 12)
    assert first.group(1, 2, 5) == ("12", str(char_col), "TEM001")
    assert first.group(6).startswith("TEM001 ")
    assert pattern.fullmatch(lines[1]).group(5) == "TEM004"


# ---------------------------------------------------------------------------------- discovery


def test_default_skipped_directories_and_explicit_files(tree: Path) -> None:
    for folder in (".hidden", "build", "venv", ".venv", "node_modules", "__pycache__", "dist"):
        (tree / folder).mkdir()
        shutil.copy(tree / "pkg/model.py", tree / folder / "model.py")
    (tree / "pkg" / "notes.txt").write_text(f"{FLAG}=True\n")
    shutil.copy(tree / "pkg/model.py", tree / "pkg" / "stub.pyi")
    result = run("check", ".", cwd=tree)
    files = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert files == {"./pkg/model.py", "./pkg/stub.pyi", "./pkg/sub/unresolved.py"}
    named = run("check", "build/model.py", cwd=tree)
    assert named.stdout.startswith("build/model.py:12:")
    forced = run("check", "--force-exclude", "build/model.py", ".hidden/model.py", cwd=tree)
    assert (forced.returncode, forced.stdout) == (0, CLEAN)


def test_exclude_globs(tree: Path) -> None:
    by_name = run("check", "--exclude", "sub", ".", cwd=tree)
    assert {line.split(":")[0] for line in by_name.stdout.splitlines()} == {"./pkg/model.py"}
    by_path = run("check", "--exclude", "pkg/mod*.py", "--exclude", "x,y", ".", cwd=tree)
    assert {line.split(":")[0] for line in by_path.stdout.splitlines()} == {
        "./pkg/sub/unresolved.py"
    }
    everything = run("check", "--exclude", "*.py", ".", cwd=tree)
    assert (everything.returncode, everything.stdout) == (0, CLEAN)


def test_config_exclude_is_anchored_at_the_config_file(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nexclude = ["pkg/sub/*"]\nunresolved = "report"\n'
    )
    for cwd, arg in ((tree, "."), (tree / "pkg", "."), (tree.parent, "project")):
        result = run("check", arg, cwd=cwd)
        assert "unresolved.py" not in result.stdout, (cwd, result.stdout)
        assert "model.py" in result.stdout
    # A file named explicitly is checked anyway, unless --force-exclude (pre-commit's case).
    named = run("check", "pkg/sub/unresolved.py", cwd=tree)
    assert named.returncode == 1
    forced = run("check", "--force-exclude", "pkg/sub/unresolved.py", "pkg/model.py", cwd=tree)
    assert {line.split(":")[0] for line in forced.stdout.splitlines()} == {"pkg/model.py"}


# ---------------------------------------------------------------------------- configuration


def test_config_then_flags(tree: Path) -> None:
    target = "pkg/sub/unresolved.py"

    def lines(*args: str) -> list[int]:
        out = run("check", *args, target, cwd=tree).stdout.splitlines()
        return [int(line.split(":")[1]) for line in out if line != CLEAN.strip()]

    assert lines() == [14, 15]
    (tree / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nunresolved = "ignore"\nguard-functions = ["tracked"]\n'
    )
    assert lines() == []
    assert lines("--te-unresolved", "report") == [14]  # the config's guard still applies
    assert lines("--te-unresolved", "report", "--te-guard-functions", "other") == [14, 15]
    assert lines("--isolated") == []  # unresolved callees are quiet by default
    assert lines("--isolated", "--unresolved", "report") == [14, 15]
    other = tree.parent / "other.toml"
    other.write_text(
        '[tool.te-microbatch-lint]\nguard-functions = ["tracked"]\nunresolved = "report"\n'
    )
    assert lines("--config", str(other)) == [14]


# ------------------------------------------------------------------------------------------ fix


def test_fix_diff_writes_nothing_and_shows_the_fix(tree: Path) -> None:
    before = snapshot(tree)
    result = run("fix", "--diff", "pkg", cwd=tree)
    assert result.returncode == 1, result.stderr  # something would change (and TEM004 stays)
    assert snapshot(tree) == before
    diff = result.stdout
    assert diff.startswith("--- a/pkg/model.py\n+++ b/pkg/model.py\n@@ ")
    removed = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    added = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert removed == ["        y = self.fc(ünï, is_first_microbatch=step == 0)"] + removed[1:]
    assert added[0] == "        y = self.fc(ünï, is_first_microbatch=None)"
    assert "suppressed.py" not in diff and "clean.py" not in diff
    # The diff is exactly what `fix` then writes.
    fixed = run("fix", "pkg", cwd=tree)
    assert fixed.returncode == 1  # TEM004 and the unsafe fixes remain
    after = (tree / "pkg/model.py").read_text(encoding="utf-8").splitlines()
    assert "        y = self.fc(ünï, is_first_microbatch=None)" in after
    assert run("fix", "--diff", "pkg", cwd=tree).stdout == ""


def test_fix_check(tree: Path) -> None:
    before = snapshot(tree)
    result = run("fix", "--check", "pkg", cwd=tree)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "would fix pkg/model.py" in result.stderr
    assert snapshot(tree) == before
    assert run("fix", "--check", "pkg/clean.py", "pkg/suppressed.py", cwd=tree).returncode == 0
    both = run("fix", "--check", "--diff", "pkg/model.py", cwd=tree)
    assert both.returncode == 1 and both.stdout.startswith("--- a/pkg/model.py")
    assert snapshot(tree) == before


def test_fix_writes_only_what_changes_and_is_idempotent(tree: Path) -> None:
    old = 1_000_000_000_000_000_000
    for path in tree.rglob("*.py"):
        os.utime(path, ns=(old, old))
    mode = (tree / "pkg/model.py").stat().st_mode
    first = run("fix", "pkg", cwd=tree)
    assert first.returncode == 1, first.stderr  # findings remain (TEM004, unsafe fixes)
    assert "fixed pkg/model.py" in first.stderr
    state = snapshot(tree)
    changed = {name for name, (_, mtime) in state.items() if mtime != old and name.endswith(".py")}
    # Unresolved callees have unsafe fixes: left to --unsafe-fixes.
    assert changed == {"pkg/model.py"}
    assert (tree / "pkg/model.py").stat().st_mode == mode
    # What is left is what has no automatic fix or an unsafe one; a second run changes nothing.
    codes = {
        line.split(": ")[1].split()[0] for line in run("check", "pkg", cwd=tree).stdout.splitlines()
    }
    assert codes == {"TEM004", "TEM001"}
    second = run("fix", "pkg", cwd=tree)
    assert second.returncode == 1
    assert snapshot(tree) == state
    assert not [p for p in tree.rglob("*.tmp")]


def test_fix_keeps_crlf_newlines(tree: Path) -> None:
    model = tree / "pkg/model.py"
    model.write_bytes(model.read_bytes().replace(b"\n", b"\r\n"))
    assert run("fix", "pkg/model.py", cwd=tree).returncode == 1  # TEM004 remains
    data = model.read_bytes()
    assert b"is_first_microbatch=None)\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_fix_reports_unparsable_files_and_fixes_the_rest(tree: Path) -> None:
    broken = tree / "pkg" / "broken.py"
    broken.write_text(f"x = ({FLAG}=1\n")
    result = run("fix", "pkg", cwd=tree)
    assert result.returncode == 2
    assert "pkg/broken.py: error: cannot parse" in result.stderr
    assert broken.read_text() == f"x = ({FLAG}=1\n"
    assert "is_first_microbatch=None" in (tree / "pkg/model.py").read_text(encoding="utf-8")


def test_fix_strategy_from_config_and_flag(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nfix-strategy = "guard"\nguard-import = "my_guards.tracked"\n'
        'guard-config = "step"\n'  # Block never sets self.config (that guard falls back)
    )
    guarded = run("fix", "--diff", "pkg/model.py", cwd=tree)
    assert guarded.returncode == 1, guarded.stderr
    assert (
        "+from my_guards import tracked" in guarded.stdout or "+import my_guards" in guarded.stdout
    )
    assert "tracked(step) else None" in guarded.stdout
    plain = run("fix", "--diff", "--fix-strategy", "none", "pkg/model.py", cwd=tree)
    assert "tracked" not in plain.stdout
    assert "+        y = self.fc(ünï, is_first_microbatch=None)" in plain.stdout


# ---------------------------------------------------------------------------------- parallelism


@pytest.fixture
def many(tree: Path) -> Path:
    """Forty-odd files, so that a pool really splits the work."""
    for index in range(12):
        folder = tree / f"copy{index:02d}"
        shutil.copytree(tree / "pkg", folder)
    return tree


@pytest.mark.parametrize(
    "args",
    [
        ("check",),
        ("check", "--format", "json"),
        ("check", "--format", "sarif"),
        ("fix", "--diff"),
    ],
)
def test_jobs_do_not_change_the_output(many: Path, args: tuple[str, ...]) -> None:
    (many / "copy05" / "broken.py").write_text(f"{FLAG}(\n")
    one = run(*args, "--jobs", "1", ".", cwd=many)
    two = run(*args, "--jobs", "2", ".", cwd=many)
    default = run(*args, ".", cwd=many)
    assert one.returncode == two.returncode == default.returncode == 2
    assert one.stdout == two.stdout == default.stdout
    assert one.stderr == two.stderr == default.stderr
    assert len(one.stdout) > 1000


def test_parallel_fix_equals_sequential_fix(many: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(many, copy)
    assert run("fix", "--jobs", "1", ".", cwd=many).returncode == 1  # TEM004 remains
    assert run("fix", "--jobs", "2", ".", cwd=copy).returncode == 1
    ours = {k: v[0] for k, v in snapshot(many).items()}
    theirs = {k: v[0] for k, v in snapshot(copy).items()}
    assert ours == theirs


# ------------------------------------------------------------------------------ terminal, start-up


def test_progress_only_on_a_terminal(tmp_path: Path) -> None:
    for index in range(205):
        (tmp_path / f"m{index:03d}.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("")
    piped = run("check", "--jobs", "1", ".", cwd=tmp_path)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, CLEAN, "")
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [command(), "check", "--jobs", "1", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=follower,
    ) as process:
        os.close(follower)
        chunks = []
        while True:  # read while it runs: a full terminal buffer would block the command
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        stdout = process.stdout.read() if process.stdout else b""
        assert process.wait(timeout=120) == 0
    assert stdout == CLEAN.encode()
    assert b"205/205 files" in b"".join(chunks)
    quiet = run("check", "--quiet", ".", cwd=tmp_path)
    assert quiet.stderr == ""


def test_check_imports_neither_libcst_nor_flake8(tree: Path) -> None:
    probe = (
        "import sys\n"
        "from lint_rules.cli import main\n"
        "code = main(['check', '--jobs', '1', '--format', 'sarif', 'pkg'])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'libcst', 'flake8'})\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tree, capture_output=True, text=True, timeout=120
    )
    assert result.stderr.strip() == "1 []", result.stderr


def test_a_cached_check_does_not_load_the_analysis(tree: Path, tmp_path: Path) -> None:
    """Once every file is in the result cache (or ruled out by the prefilter), `check` reads
    the cache and never imports the analysis core: its start-up is the run's cost."""
    cache = tmp_path / "cache"
    probe = (
        "import sys\n"
        "from lint_rules.cli import main\n"
        f"code = main(['check', '--jobs', '1', '--cache-dir', {str(cache)!r}, 'pkg'])\n"
        "core = 'lint_rules.analysis.core' in sys.modules\n"
        "print(code, core, file=sys.stderr)\n"
    )
    argv = [sys.executable, "-c", probe]
    first = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=120)
    assert first.stderr.strip().endswith("1 True"), first.stderr  # analysed, then cached
    again = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=120)
    assert again.stderr.strip().endswith("1 False"), again.stderr


def test_file_symlinks_in_a_tree_are_followed_and_a_second_name_noted(tree: Path) -> None:
    """A symlink to a .py file in the walked tree is checked under its own name; a second name
    for a file already in the run is skipped with a note (fixing one file twice could race
    under --jobs)."""
    (tree / "pkg" / "zz_link.py").symlink_to(Path("sub") / "unresolved.py")
    (tree / "pkg" / "zz_model.py").symlink_to("model.py")
    result = run("check", "pkg", cwd=tree)
    paths = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert paths == {"pkg/model.py", "pkg/sub/unresolved.py"}
    assert "pkg/zz_model.py: note: skipped: the same file as pkg/model.py" in result.stderr
    assert "pkg/zz_link.py: note: skipped: the same file as pkg/sub/unresolved.py" in result.stderr
    assert "zz_model" not in run("check", "--quiet", "pkg", cwd=tree).stderr


def test_a_walk_skips_file_symlinks_out_of_the_tree(tree: Path) -> None:
    """A walk never reaches (or rewrites) a file outside the directory it was asked to walk;
    the same link named on the command line is followed and written through."""
    outside = tree.parent / "outside.py"
    shutil.copy(tree / "pkg" / "model.py", outside)
    before = outside.read_bytes()
    (tree / "pkg" / "vendored.py").symlink_to(outside)
    result = run("check", "pkg", cwd=tree)
    paths = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert paths == {"pkg/model.py", "pkg/sub/unresolved.py"}
    assert "pkg/vendored.py: note: skipped: symlink to a file outside pkg\n" in result.stderr
    fixed = run("fix", "pkg", cwd=tree)
    assert fixed.returncode == 1, fixed.stderr
    assert "vendored" not in fixed.stdout
    assert outside.read_bytes() == before and (tree / "pkg" / "vendored.py").is_symlink()
    named = run("fix", "pkg/vendored.py", cwd=tree)
    assert named.returncode == 1, named.stderr
    assert outside.read_bytes() != before and (tree / "pkg" / "vendored.py").is_symlink()


def test_a_file_with_two_names_is_reported_under_the_one_that_is_not_a_symlink(
    tree: Path,
) -> None:
    """alias.py sorts before model.py: the finding still goes to the real file's path."""
    (tree / "pkg" / "alias.py").symlink_to("model.py")
    expected = expected_text(tree, "pkg/model.py")
    result = run("check", "pkg", cwd=tree)
    assert [line for line in result.stdout.splitlines() if "pkg/model.py" in line] == expected
    assert "alias.py:" not in result.stdout
    assert "pkg/alias.py: note: skipped: the same file as pkg/model.py" in result.stderr
    named = run("check", "pkg/alias.py", "pkg/model.py", cwd=tree)
    assert "alias.py:" not in named.stdout and expected[0] in named.stdout
    assert "pkg/alias.py: note: skipped: the same file as pkg/model.py" in named.stderr


@pytest.mark.parametrize("args", [("rule",), ("rule", "TEM999"), ("rule", "--all", "TEM001")])
def test_rule_usage_errors_are_the_same_one_line(tree: Path, args: tuple[str, ...]) -> None:
    result = run(*args, cwd=tree)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("te-microbatch-lint: error: ")
    assert result.stderr.count("\n") == 1
