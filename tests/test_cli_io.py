"""The command's edges a user meets first: discovery, stdin, machine formats, progress, jobs,
the result cache. Each test is a user-facing behaviour of issue 12 (first list).

Trees are copies of ``fixtures/cli/project`` (see tests/test_cli.py for what it holds); a
``.git`` folder makes a tree a repository root, which is all discovery and the formats look for.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers import (
    IN_PROCESS_UNSAFE,
    SAMPLE_PYPROJECT,
    run_in_process,
    te_lint_command,
    without_notes,
)

import lint_rules.cli.running as running
from lint_rules.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cli" / "project"
FLAG = "is_first_microbatch"
CLEAN = "All checks passed!\n"
"""What a clean ``check`` prints, as ruff does."""


def run(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    if stdin is None and not IN_PROCESS_UNSAFE.intersection(args):
        return without_notes(run_in_process(list(args), cwd))  # (helpers.run_in_process)
    result = subprocess.run(
        [te_lint_command(), *args], cwd=cwd, input=stdin, capture_output=True, timeout=120
    )
    result.stdout = result.stdout.decode("utf-8")
    result.stderr = result.stderr.decode("utf-8")
    return without_notes(result)  # one line per finding


def files_of(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split(":")[0] for line in result.stdout.splitlines() if line != CLEAN.strip()}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT)
    (root / ".git" / "info").mkdir(parents=True)
    return root


# ---------------------------------------------------------------------------------- discovery


def test_gitignore_ignore_and_info_exclude_are_respected(tree: Path) -> None:
    for folder in ("generated", "vendored", "local", "kept"):
        (tree / folder).mkdir()
        shutil.copy(tree / "pkg/model.py", tree / folder / "model.py")
    shutil.copy(tree / "pkg/model.py", tree / "pkg" / "model_gen.py")
    (tree / ".gitignore").write_text("generated/\n*_gen.py\n")
    (tree / "pkg" / ".ignore").write_text("sub/\n")
    (tree / ".git" / "info" / "exclude").write_text("local/\n")
    (tree / "vendored" / ".gitignore").write_text("*.py\n!model.py\n")
    default = run("check", ".", cwd=tree)
    assert files_of(default) == {"./pkg/model.py", "./vendored/model.py", "./kept/model.py"}
    everything = run("check", "--no-respect-gitignore", ".", cwd=tree)
    assert files_of(everything) >= {
        "./generated/model.py",
        "./local/model.py",
        "./pkg/model_gen.py",
        "./pkg/sub/unresolved.py",
    }
    # Named explicitly, an ignored file or directory is still checked (as with excludes) ...
    assert files_of(run("check", "generated", cwd=tree)) == {"generated/model.py"}
    # ... but not with --force-exclude (pre-commit's case).
    forced = run("check", "--force-exclude", "generated/model.py", "pkg/model_gen.py", cwd=tree)
    assert (forced.returncode, forced.stdout) == (0, CLEAN)


def test_gitignore_above_a_named_directory_applies(tree: Path) -> None:
    (tree / ".gitignore").write_text("pkg/sub/\n")
    assert files_of(run("check", "pkg", cwd=tree)) == {"pkg/model.py"}


def test_exclude_replaces_the_configured_list_and_extend_exclude_adds(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nexclude = ["pkg/sub/*"]\nunresolved = "report"\n'
    )
    configured = run("check", ".", cwd=tree)
    assert files_of(configured) == {"./pkg/model.py"}
    replaced = run("check", "--exclude", "nothing_here", ".", cwd=tree)
    assert files_of(replaced) == {"./pkg/model.py", "./pkg/sub/unresolved.py"}
    extended = run("check", "--extend-exclude", "model.py", ".", cwd=tree)
    assert (extended.returncode, extended.stdout) == (0, CLEAN)


def test_non_python_files_named_are_skipped_with_a_note(tree: Path) -> None:
    (tree / "notes.txt").write_text(f"{FLAG}(\n")
    result = run("check", "notes.txt", "pkg/clean.py", cwd=tree)
    assert (result.returncode, result.stdout) == (0, CLEAN)
    assert result.stderr == "notes.txt: note: skipped: not a Python file (*.py, *.pyi)\n"


# --------------------------------------------------------------------------------------- stdin


def test_check_stdin_is_resolved_as_the_named_path(tree: Path) -> None:
    source = (tree / "pkg/model.py").read_bytes()
    on_disk = run("check", "pkg/model.py", cwd=tree)
    piped = run("check", "-", "--stdin-filename", "pkg/model.py", cwd=tree, stdin=source)
    assert (piped.returncode, piped.stdout) == (1, on_disk.stdout)
    anonymous = run("check", "-", cwd=tree, stdin=source)
    assert anonymous.stdout == on_disk.stdout.replace("pkg/model.py:", "-:")
    # noqa is honoured, and the configured excludes apply to the path named.
    suppressed = (tree / "pkg/suppressed.py").read_bytes()
    assert run("check", "-", cwd=tree, stdin=suppressed).stdout == ""
    (tree / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nexclude = ["pkg/*"]\n')
    excluded = run("check", "-", "--stdin-filename", "pkg/model.py", cwd=tree, stdin=source)
    assert (excluded.returncode, excluded.stdout) == (0, "")


def test_fix_stdin_writes_the_result_to_stdout(tree: Path) -> None:
    before = (tree / "pkg/model.py").read_bytes()
    result = run("fix", "-", "--stdin-filename", "pkg/model.py", cwd=tree, stdin=before)
    assert result.returncode == 1, result.stderr  # the TEM004 of model.py remains
    run("fix", "pkg/model.py", cwd=tree)
    assert result.stdout.encode("utf-8") == (tree / "pkg/model.py").read_bytes() != before
    clean = (tree / "pkg/clean.py").read_bytes()
    assert run("fix", "-", cwd=tree, stdin=clean).stdout.encode("utf-8") == clean
    broken = f"{FLAG}(\n".encode()
    failed = run("fix", "-", cwd=tree, stdin=broken)
    assert (failed.returncode, failed.stdout.encode()) == (2, broken)  # the buffer comes back
    assert failed.stderr.startswith("-: error: cannot parse")


# ------------------------------------------------------------------------------------- formats


def _sarif(tree: Path, *args: str, cwd: Path | None = None) -> dict:
    result = run("check", "--format", "sarif", *args, cwd=cwd or tree)
    return json.loads(result.stdout)["runs"][0]


def test_sarif_uris_are_relative_to_the_repository_root(tree: Path) -> None:
    (tree / "pkg" / "broken.py").write_text(f"{FLAG}(\n")
    log = _sarif(tree, ".", cwd=tree / "pkg")
    assert log["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.as_uri() + "/"
    locations = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["results"]
    }
    assert locations == {"pkg/model.py", "pkg/sub/unresolved.py"}
    for result in log["results"]:
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == (
            "%SRCROOT%"
        )
    (error,) = log["invocations"][0]["toolExecutionNotifications"]
    artifact = error["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "pkg/broken.py", "uriBaseId": "%SRCROOT%"}
    for rule in log["tool"]["driver"]["rules"]:
        assert rule.get("helpUri", "https://").startswith("https://")  # with `docs-url`
        assert rule["fullDescription"]["text"]


def test_sarif_fingerprints_survive_edits_above_the_finding(tree: Path) -> None:
    def prints() -> dict[tuple[str, str], tuple[str, int]]:
        log = _sarif(tree, "pkg")
        return {
            (r["ruleId"], r["partialFingerprints"]["teMicrobatchLint/v1"]): (
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in log["results"]
        }

    before = prints()
    model = tree / "pkg/model.py"
    model.write_text("# a new comment\n\nimport os\n" + model.read_text("utf-8"), "utf-8")
    after = prints()
    assert set(before) == set(after) and len(before) >= 3
    moved = [key for key in before if before[key][0] == "pkg/model.py"]
    assert moved and all(after[key][1] == before[key][1] + 3 for key in moved)


def test_github_annotations_use_repository_relative_paths(tree: Path) -> None:
    from_root = run("check", "--format", "github", ".", cwd=tree)
    assert "file=./" not in from_root.stdout
    assert "::warning file=pkg/model.py,line=12," in from_root.stdout
    from_below = run("check", "--format", "github", "model.py", cwd=tree / "pkg")
    assert from_below.stdout.startswith("::warning file=pkg/model.py,line=12,")


def test_json_reports_files_that_cannot_be_read_or_parsed(tree: Path) -> None:
    (tree / "pkg" / "broken.py").write_text(f"x = 1\n{FLAG}(\n")
    (tree / "pkg" / "latin.py").write_bytes(b"x = '\xe9'\n")
    result = run("check", "--format", "json", "pkg", "missing.py", cwd=tree)
    assert result.returncode == 2
    rows = json.loads(result.stdout)
    errors = {row["path"]: row for row in rows if row["code"] is None}
    assert set(errors) == {"missing.py", "pkg/broken.py", "pkg/latin.py"}
    assert errors["pkg/broken.py"]["message"].startswith("cannot parse:")
    assert errors["pkg/broken.py"]["line"] == 2
    assert errors["missing.py"]["message"] == "does not exist"
    assert set(errors["pkg/latin.py"]) == set(rows[0])
    assert any(row["code"] == "TEM001" for row in rows)


def test_output_file_and_statistics(tree: Path) -> None:
    result = run("check", "--output-file", "report.json", "--format", "json", "pkg", cwd=tree)
    assert (result.returncode, result.stdout) == (1, "")
    rows = json.loads((tree / "report.json").read_text("utf-8"))
    stats = run("check", "--statistics", "pkg", cwd=tree)
    lines = stats.stdout.splitlines()
    counts = {line.split()[1]: int(line.split()[0]) for line in lines}
    expected: dict[str, int] = {}
    for row in rows:
        expected[row["code"]] = expected.get(row["code"], 0) + 1
    assert counts == expected and stats.returncode == 1
    assert not any("`" in line for line in lines)  # the rule's summary, not one site's message


# ------------------------------------------------------------------------ progress, jobs, cache


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_throttled_and_shows_rate_and_eta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(600):
        (tmp_path / f"m{index:03d}.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("")
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    assert main(["check", "--no-cache", "--jobs", "1", "."]) == 0
    elapsed = time.monotonic() - started
    redraws = [part for part in terminal.getvalue().split("\r") if "files" in part]
    assert len(redraws) <= 10 * elapsed + 2, (len(redraws), elapsed)
    assert "600/600 files" in redraws[-1]
    assert "files/s" in redraws[-1] and "ETA" in redraws[-1]


def test_default_jobs_start_no_pool_for_little_parsing(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(12):
        shutil.copytree(tree / "pkg", tree / f"copy{index:02d}")

    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a process pool was started")

    monkeypatch.setattr("lint_rules.cli.workers.fork_workers", NoPool)
    monkeypatch.setattr(running, "default_cpus", lambda since=None: 4, raising=False)
    monkeypatch.setattr("lint_rules.cli.cpus.default_cpus", lambda since=None: 4)
    monkeypatch.chdir(tree)
    assert main(["check", "--no-cache", "--quiet", "."]) == 1


def test_cache_reuses_results_and_notices_edits(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tree)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tree.parent / "user-cache"))
    assert main(["check", "--jobs", "1", "pkg"]) == 1
    first = capsys.readouterr().out
    assert (tree.parent / "user-cache" / "te-microbatch-lint" / "CACHEDIR.TAG").is_file()
    assert not [p for p in tree.rglob("*") if "cache" in p.name]  # nothing in the project

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr("lint_rules.analysis.analyze_source", no_parsing)
    assert main(["check", "--jobs", "1", "pkg"]) == 1
    assert capsys.readouterr().out == first
    # A changed file, other settings or --no-cache are parsed again.
    model = tree / "pkg" / "model.py"
    model.write_text(model.read_text("utf-8") + "\n", "utf-8")
    assert "internal error" in _stderr_of(["check", "--jobs", "1", "pkg/model.py"], capsys)
    assert "internal error" in _stderr_of(["check", "--disable-noqa", "pkg/suppressed.py"], capsys)
    assert "internal error" in _stderr_of(["check", "--no-cache", "pkg/sub"], capsys)
    assert "internal error" in _stderr_of(["check", "--unresolved", "ignore", "pkg/sub"], capsys)
    # select/ignore only filter what is reported: still answered from the cache (the same
    # paths: a folder is checked as a project, its files' results depend on what it holds).
    model.write_text(model.read_text("utf-8")[:-1], "utf-8")
    assert main(["check", "--select", "TEM004", "pkg"]) == 1  # pkg/model.py has one
    assert "internal error" not in capsys.readouterr().err


def _stderr_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    main(argv)
    return capsys.readouterr().err


@pytest.mark.parametrize(("load", "workers"), [(0.0, 4), (0.4, 4), (1.0, 3), (2.6, 1), (9.0, 1)])
def test_default_jobs_leave_busy_cores_alone(
    load: float, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr("os.getloadavg", lambda: (load, load, load))
    assert running.default_cpus() == workers
    plan = running.Plan(["a", "b"], [None, None], [("a", None), ("b", None)], 10**7)
    assert running.pool_size(plan, None, running.default_cpus()) == min(workers, 2)
    assert running.pool_size(plan, 3, running.default_cpus()) == 2  # --jobs is obeyed
    small = running.Plan(["a", "b"], [None, None], [("a", None), ("b", None)], 1000)
    assert running.pool_size(small, None, 4) == 1


def test_json_and_sarif_carry_each_fix_applicability(tree: Path) -> None:
    from lint_rules.analysis import analyze_source
    from lint_rules.settings import Settings

    expected = {}
    for name in ("pkg/model.py", "pkg/sub/unresolved.py"):
        strict = Settings(unresolved="report")  # SAMPLE_PYPROJECT's
        for finding in analyze_source((tree / name).read_text("utf-8"), strict):
            fix = finding.fix
            expected[(name, finding.line, finding.code)] = fix.applicability if fix else None
    rows = json.loads(run("check", "--format", "json", "pkg", cwd=tree).stdout)
    assert {(r["path"], r["line"], r["code"]): r["applicability"] for r in rows} == expected
    results = _sarif(tree, "pkg")["results"]
    for result in results:
        location = result["locations"][0]["physicalLocation"]
        key = (
            location["artifactLocation"]["uri"],
            location["region"]["startLine"],
            result["ruleId"],
        )
        assert result.get("properties", {}).get("fixApplicability") == expected[key]


def test_text_findings_stream_as_files_finish(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lint_rules.analysis

    events: list[str] = []
    analyze = lint_rules.analysis.analyze_source

    def recording(text: str, *args: object, **kwargs: object) -> list:
        events.append("parse")
        return analyze(text, *args, **kwargs)

    class Recorder(io.StringIO):
        def write(self, text: str) -> int:
            events.append("write")
            return super().write(text)

    monkeypatch.setattr(lint_rules.analysis, "analyze_source", recording)
    monkeypatch.setattr("sys.stdout", Recorder())
    monkeypatch.chdir(tree)
    assert main(["check", "--no-cache", "--jobs", "1", "pkg/model.py", "pkg/sub"]) == 1
    assert events.count("parse") == 4  # each file of the project that spells the flag, once
    assert events.index("write") < len(events) - 1 - events[::-1].index("parse")


def test_fix_stdin_keeps_crlf_and_an_unwritable_output_file_is_one_line(tree: Path) -> None:
    source = (tree / "pkg/model.py").read_bytes().replace(b"\n", b"\r\n")
    fixed = subprocess.run(
        [te_lint_command(), "fix", "-", "--stdin-filename", "pkg/model.py"],
        cwd=tree,
        input=source,
        capture_output=True,
        timeout=120,
    )
    assert fixed.returncode == 1 and fixed.stdout != source  # the TEM004 of model.py remains
    assert fixed.stdout.count(b"\r\n") == source.count(b"\r\n")
    assert b"\n" not in fixed.stdout.replace(b"\r\n", b"")
    result = run("check", "--output-file", "missing/dir/report.txt", "pkg", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.startswith("te-microbatch-lint: error: missing/dir/report.txt: cannot")
    assert len(result.stderr.splitlines()) == 1


def test_ignore_wins_over_gitignore_in_one_directory(tree: Path) -> None:
    (tree / "pkg" / ".gitignore").write_text("model.py\nsub/\n")
    (tree / "pkg" / ".ignore").write_text("!model.py\n")
    assert files_of(run("check", ".", cwd=tree)) == {"./pkg/model.py"}
