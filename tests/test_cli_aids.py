"""Adoption aids, as a ruff user expects them: ``--show-files``, ``--add-noqa``, ``--watch``,
``rule NAME``, ``explain PATH:LINE``, "No Python files found", ``--stdin-filename`` implying
``-``, a quiet exit on a closed pipe, and ``fix``'s "M remaining" equal to what ``check`` then
reports."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers import SAMPLE_PYPROJECT, cli

from lint_rules.cli.command import main

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cli" / "project"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_show_files_lists_what_check_reads(tree: Path, capsys) -> None:
    assert main(["check", "--show-files", "pkg"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "pkg/__init__.py",
        "pkg/clean.py",
        "pkg/model.py",
        "pkg/sub/unresolved.py",
        "pkg/suppressed.py",
    ]


def test_no_python_files_found_is_said(tree: Path, capsys) -> None:
    (tree / "empty").mkdir()
    assert main(["check", "empty"]) == 0
    err = capsys.readouterr().err
    assert err == "te-microbatch-lint: warning: No Python files found under the paths given\n"
    assert main(["check", "--quiet", "empty"]) == 0
    assert capsys.readouterr().err == ""


def test_rule_takes_a_name_as_well_as_a_code(capsys) -> None:
    assert main(["rule", "untracked-flag"]) == 0
    by_name = capsys.readouterr().out
    assert main(["rule", "TEM001"]) == 0
    assert capsys.readouterr().out == by_name
    assert main(["rule", "untracked-flags"]) == 2
    assert "untracked-flag" in capsys.readouterr().err


def test_stdin_filename_implies_stdin(tree: Path) -> None:
    source = (tree / "pkg" / "model.py").read_bytes()
    done = subprocess.run(
        [*cli(), "check", "--stdin-filename", "pkg/model.py"],
        cwd=tree,
        input=source,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout.decode().startswith("pkg/model.py:12:28: TEM001 ")


def test_add_noqa_silences_every_finding_once(tree: Path, capsys) -> None:
    model = tree / "pkg" / "model.py"
    mode = model.stat().st_mode
    before = model.read_text(encoding="utf-8")
    assert main(["check", "--add-noqa", "pkg"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "added `# noqa` to 4 lines" in err
    after = model.read_text(encoding="utf-8")
    assert "y = self.fc(ünï, is_first_microbatch=step == 0)  # noqa: TEM001\n" in after
    assert after.replace("  # noqa: TEM001", "").replace("  # noqa: TEM004", "") == before
    assert model.stat().st_mode == mode
    assert main(["check", "pkg"]) == 0  # nothing left
    capsys.readouterr()
    written = {p: p.stat().st_mtime_ns for p in tree.rglob("*.py")}
    assert main(["check", "--add-noqa", "pkg"]) == 0  # idempotent: nothing written
    assert "to 0 lines" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in tree.rglob("*.py")} == written


def test_add_noqa_joins_an_existing_noqa_and_skips_multiline_strings() -> None:
    from lint_rules.noqa import add_noqa

    text = 'x = f(a)  # noqa: E501\ny = g("""\nz""", b)\n'
    new, changed = add_noqa(text, [(1, "TEM001"), (2, "TEM001"), (2, "TEM004")])
    assert changed == 2
    assert new == 'x = f(a)  # noqa: E501, TEM001\ny = g("""\nz""", b)  # noqa: TEM001, TEM004\n'
    assert add_noqa(new, [(1, "TEM001"), (2, "TEM001")]) == (new, 0)


@pytest.mark.slow
def test_watch_checks_again_on_a_change(tree: Path, capsys) -> None:
    pytest.importorskip("watchfiles")
    from lint_rules.cli.aids import watch

    stop = threading.Event()
    runs = []

    def change_soon() -> None:
        time.sleep(1.0)
        (tree / "pkg" / "clean.py").write_text("x = 2\n", encoding="utf-8")
        stop.wait(30)  # a safety bound: the watch below stops after one re-run
        stop.set()

    touch = threading.Thread(target=change_soon, daemon=True)
    touch.start()
    status = watch(lambda: runs.append(1) or len(runs), ["pkg"], stop_after=1, stop_event=stop)
    stop.set()
    touch.join(5)
    assert runs == [1, 1] and status == 2
    assert "change seen, checking again" in capsys.readouterr().err


def test_closed_pipe_is_quiet_and_exits_0(tree: Path) -> None:
    """``check | head -1``: as ruff does, exit 0 with nothing on stderr."""
    for n in range(400):  # enough output to fill the pipe
        shutil.copy(tree / "pkg" / "model.py", tree / "pkg" / f"copy_{n}.py")
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'{" ".join(cli())} check --no-cache pkg | head -1; echo "${{PIPESTATUS[0]}}" >&2',
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.count("\n") == 1
    assert done.stderr == "0\n"


def test_explain_prints_the_findings_at_a_line(tree: Path, capsys) -> None:
    assert main(["explain", "pkg/model.py:12"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("pkg/model.py:12:28: TEM001 ")
    assert "(project checked: .)" in out  # the root, as the cwd names it
    assert main(["explain", "pkg/model.py:3"]) == 0
    assert "no finding on this line" in capsys.readouterr().out
    assert main(["explain", "pkg/model.py"]) == 2
    # the place as flake8 and ruff print it, column included
    assert main(["explain", "pkg/model.py:12:28"]) == 1
    assert capsys.readouterr().out.startswith("pkg/model.py:12:28: TEM001 ")


def test_fix_remaining_is_what_check_then_reports(tree: Path, capsys) -> None:
    status = main(["fix", "--no-cache", "pkg"])
    err = capsys.readouterr().err
    summary = err.strip().splitlines()[-1]
    remaining = int(summary.split(" remaining")[0].rsplit(" ", 1)[1])
    assert main(["check", "--no-cache", "pkg"]) == (1 if remaining else 0)
    out = capsys.readouterr().out
    reported = sum(1 for line in out.splitlines() if not line.startswith("  note: "))
    assert remaining == reported
    assert status == (1 if remaining else 0)


def test_no_color_env_is_respected_in_process(tree: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert main(["check", "pkg"]) == 1
    assert "\x1b[" in capsys.readouterr().out
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["check", "pkg"]) == 1
    assert "\x1b[" not in capsys.readouterr().out


def test_the_hint_counts_what_fix_applies(tmp_path: Path, monkeypatch, capsys) -> None:
    """A fix that a `# noqa` on a line it spans would stop is not counted as fixable: the hint,
    JSON's ``fixable`` and ``fix``'s "N fixed" agree."""
    import json

    catalogue = Path(__file__).resolve().parent.parent / "fixtures" / "catalogue"
    shutil.copy(catalogue / "flake8_noqa_spanned_line.py", tmp_path / "case.py")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--isolated", "--no-cache", "case.py"]) == 1
    hint = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["check", "--isolated", "--no-cache", "--format", "json", "case.py"]) == 1
    rows = json.loads(capsys.readouterr().out)
    main(["fix", "--isolated", "case.py"])
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    fixed = int(summary.split(" fixed")[0])
    assert hint.startswith(f"[*] {fixed} fixable")
    assert sum(row["fixable"] for row in rows) == fixed
    shutil.copy(catalogue / "flake8_noqa_spanned_line.py", tmp_path / "case.py")
    main(["check", "--isolated", "--no-cache", "--statistics", "--format", "json", "case.py"])
    stats = json.loads(capsys.readouterr().out)
    assert sum(row["fixable"] for row in stats) == fixed
