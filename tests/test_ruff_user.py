"""What a ruff or flake8 user expects (issue 31): links that work, every CI format, per-file
ignores, ruff's habits, libraries instead of copies.

The sample tree is ``fixtures/cli/project`` (tests/test_cli.py): ``pkg/model.py`` has a fixable
TEM001 on line 12 and an unfixable TEM004, ``pkg/clean.py`` nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from helpers import SAMPLE_PYPROJECT, run_in_process

from lint_rules.rules import RULES

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "fixtures" / "cli" / "project"
DOCS = "https://git.example.com/ml/te-microbatch-lint/blob/main/docs/rules.md"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT)  # a strict project
    return root


def check(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_process(["check", "--no-cache", *args], tree)


def configure(tree: Path, table: str) -> None:
    """The sample tree's table: a strict project (unresolved callees reported), plus ``table``."""
    (tree / "pyproject.toml").write_text(
        f'[tool.te-microbatch-lint]\nunresolved = "report"\n{table}\n'
    )


# ----------------------------------------------------------------------------------- 1. links


def test_no_link_without_a_docs_url_and_the_help_text_instead(tree: Path) -> None:
    rows = json.loads(check(tree, "--format", "json", "pkg").stdout)
    assert rows and all("url" not in row for row in rows)
    sarif = check(tree, "--format", "sarif", "pkg").stdout
    assert "example.invalid" not in sarif and "helpUri" not in sarif
    driver = json.loads(sarif)["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver
    for rule in driver["rules"]:
        assert rule["help"]["markdown"] == RULES[rule["id"]].explanation.strip()
    assert "example.invalid" not in (PROJECT / "pyproject.toml").read_text(encoding="utf-8")


def test_docs_url_gives_each_rule_its_link(tree: Path) -> None:
    configure(tree, f'docs-url = "{DOCS}"')
    rows = json.loads(check(tree, "--format", "json", "pkg").stdout)
    assert {row["url"] for row in rows if row["code"] == "TEM001"} == {
        f"{DOCS}#{RULES['TEM001'].anchor}"
    }
    driver = json.loads(check(tree, "--format", "sarif", "pkg").stdout)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == DOCS
    assert {r["helpUri"] for r in driver["rules"]} == {
        f"{DOCS}#{rule.anchor}" for rule in RULES.values()
    }


@pytest.mark.parametrize("value", ['"https://example.invalid/x"', '"docs/rules.md"', "3"])
def test_a_docs_url_that_cannot_work_is_refused(tree: Path, value: str) -> None:
    configure(tree, f"docs-url = {value}")
    done = check(tree, "pkg")
    assert done.returncode == 2 and "docs-url" in done.stderr


# --------------------------------------------------------------------------------- 2. formats


def test_gitlab_is_a_code_quality_report(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_PROJECT_DIR", str(tree))
    done = check(tree, "--format", "gitlab", str(tree / "pkg" / "model.py"))
    rows = json.loads(done.stdout)
    assert done.returncode == 1 and {row["check_name"] for row in rows} == {"TEM001", "TEM004"}
    first = next(row for row in rows if row["check_name"] == "TEM001")
    assert set(first) == {"check_name", "description", "severity", "fingerprint", "location"}
    assert first["description"].startswith("TEM001: is_first_microbatch ")
    assert first["severity"] == "major" and len(first["fingerprint"]) == 16
    assert first["location"]["path"] == "pkg/model.py"  # relative to $CI_PROJECT_DIR
    assert first["location"]["positions"]["begin"]["line"] == 12
    assert len({row["fingerprint"] for row in rows}) == len(rows)


def test_junit_has_a_failed_testcase_per_finding(tree: Path) -> None:
    done = check(tree, "--format", "junit", "pkg/model.py")
    root = ElementTree.fromstring(done.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "2"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "pkg/model.py" and suite.get("package") == "org.te-microbatch-lint"
    names = [case.get("name") for case in suite.findall("testcase")]
    assert names == ["org.te-microbatch-lint.TEM001", "org.te-microbatch-lint.TEM004"]
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.text and failure.text.startswith("line 12, col ")
    clean = ElementTree.fromstring(check(tree, "--format", "junit", "pkg/clean.py").stdout)
    assert clean.get("failures") == "0"
    assert clean.find("testsuite/testcase").get("name") == "No errors found"  # type: ignore


def test_a_file_that_cannot_be_parsed_is_an_error_in_junit_and_gitlab(tree: Path) -> None:
    (tree / "pkg" / "broken.py").write_text("def f(:\n    is_first_microbatch\n")
    junit = check(tree, "--format", "junit", "pkg/broken.py")
    root = ElementTree.fromstring(junit.stdout)
    assert junit.returncode == 2 and root.get("errors") == "1"
    assert root.find("testsuite/testcase/error") is not None
    (row,) = json.loads(check(tree, "--format", "gitlab", "pkg/broken.py").stdout)
    assert row["check_name"] == "error" and row["location"]["path"] == "pkg/broken.py"


def test_json_lines_is_one_json_row_per_line(tree: Path) -> None:
    lines = check(tree, "--format", "json-lines", "pkg").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows == json.loads(check(tree, "--format", "json", "pkg").stdout)


def test_pylint_and_grouped(tree: Path) -> None:
    pylint = check(tree, "--format", "pylint", "pkg/model.py").stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in pylint] == [
        "pkg/model.py:12:",
        f"pkg/model.py:{pylint[1].split(':')[1]}:",
    ]
    assert pylint[0].startswith("pkg/model.py:12: [TEM001] is_first_microbatch ")
    grouped = check(tree, "--format", "grouped", "pkg/model.py").stdout.splitlines()
    assert grouped[0] == "pkg/model.py:"
    assert grouped[1].startswith("  12:") and " TEM001 [*] is_first_microbatch " in grouped[1]
    assert grouped[-1] == ""


@pytest.mark.parametrize("form", ["full", "concise", "text"])
def test_statistics_take_every_text_format(tree: Path, form: str) -> None:
    done = check(tree, "--statistics", "--format", form, "pkg/model.py")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].split()[:2] == ["1", "TEM001"]


@pytest.mark.parametrize("form", ["sarif", "github", "junit", "gitlab"])
def test_statistics_refuse_machine_formats(tree: Path, form: str) -> None:
    done = check(tree, "--statistics", "--format", form, "pkg")
    assert done.returncode == 2 and "--statistics" in done.stderr


# ------------------------------------------------------------------------- 3. per-file-ignores


PER_FILE = """per-file-ignores = { "pkg/model.py" = ["TEM004"] }
extend-per-file-ignores = { "!pkg/sub/*" = ["TEM0"] }"""


def test_per_file_ignores_in_the_command(tree: Path) -> None:
    configure(tree, 'per-file-ignores = { "pkg/model.py" = ["TEM004"] }')
    codes = [
        line.split()[1] for line in check(tree, "--format", "concise", "pkg").stdout.splitlines()
    ]
    assert codes == ["TEM001"] * 3  # pkg/model.py's TEM004 left out
    # `extend-` adds; `!glob` is every file the glob does not match; a name matches anywhere
    configure(
        tree,
        'per-file-ignores = { "model.py" = ["TEM004"] }\n'
        'extend-per-file-ignores = { "!pkg/sub/*" = ["TEM001"] }',
    )
    left = check(tree, "--format", "concise", "pkg").stdout.splitlines()
    assert len(left) == 2 and all(line.startswith("pkg/sub/unresolved.py:") for line in left)
    # globs are relative to the configuration's directory, whatever the current one
    done = run_in_process(["check", "--no-cache", "--format", "concise", "model.py"], tree / "pkg")
    assert (done.returncode, done.stdout) == (0, "All checks passed!\n")


def test_extend_per_file_ignores_add_up_through_extend_and_flags(tree: Path) -> None:
    (tree / "base.toml").write_text(
        '[tool.te-microbatch-lint]\nextend-per-file-ignores = { "model.py" = ["TEM004"] }\n'
    )
    configure(tree, 'extend = "base.toml"\nextend-per-file-ignores = { "unresolved.py" = ["TEM"] }')
    lines = check(tree, "--format", "concise", "pkg").stdout.splitlines()
    assert [line.split()[1] for line in lines] == ["TEM001"]  # pkg/model.py's
    flag = check(tree, "--format", "concise", "--extend-per-file-ignores", "pkg/*:TEM001", "pkg")
    assert flag.stdout == "All checks passed!\n"


def test_per_file_ignores_in_flake8_and_the_codemod(tree: Path) -> None:
    configure(tree, 'per-file-ignores = { "pkg/*" = ["TEM001"] }')
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", "pkg/model.py"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert flake8.stdout and "TEM001" not in flake8.stdout and "TEM004" in flake8.stdout
    before = (tree / "pkg" / "model.py").read_text(encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "te_microbatch_lint.codemod.TEMicrobatchCodemod",
            "--no-format",
            "pkg/model.py",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert (tree / "pkg" / "model.py").read_text(encoding="utf-8") == before  # TEM001 not fixed
    fix = run_in_process(["fix", "--diff", "pkg"], tree)
    assert fix.stdout == ""


def test_per_file_ignores_as_flags_and_in_show_settings(tree: Path) -> None:
    done = check(
        tree, "--format", "concise", "--per-file-ignores", "pkg/sub/*:TEM model.py:TEM004", "pkg"
    )
    assert [line.split()[1] for line in done.stdout.splitlines()] == ["TEM001"]
    configure(tree, 'per-file-ignores = { "pkg/*" = ["TEM001"] }')
    shown = run_in_process(["check", "--show-settings", "pkg/model.py"], tree).stdout
    assert 'per-file-ignores = {"pkg/*" = ["TEM001"]}' in shown
    assert 'reported = ["TEM002", "TEM003", "TEM004", "TEM005"]' in shown


def test_a_bad_per_file_ignores_is_one_line(tree: Path) -> None:
    configure(tree, 'per-file-ignores = { "pkg/*" = ["TEM999"] }')
    done = check(tree, "pkg")
    assert done.returncode == 2 and "per-file-ignores" in done.stderr and "TEM999" in done.stderr
    configure(tree, 'per-file-ignores = ["pkg/*"]')
    assert check(tree, "pkg").returncode == 2


# ---------------------------------------------------------------------------------- 4. habits


def test_a_clean_run_says_so_as_ruff_does(tree: Path) -> None:
    done = check(tree, "pkg/clean.py")
    assert (done.returncode, done.stdout) == (0, "All checks passed!\n")
    assert check(tree, "--quiet", "pkg/clean.py").stdout == ""
    assert json.loads(check(tree, "--format", "json", "pkg/clean.py").stdout) == []


@pytest.mark.parametrize(
    ("flag", "hint"), [("--diff", "fix --diff"), ("--unsafe-fixes", "fix --unsafe-fixes")]
)
def test_fix_flags_given_to_check_point_to_fix(tree: Path, flag: str, hint: str) -> None:
    done = check(tree, flag, "pkg")
    assert done.returncode == 2 and f"`te-microbatch-lint {hint} PATH`" in done.stderr
    assert done.stderr.count("\n") == 1


def test_show_settings_alone_is_the_current_directory(tree: Path) -> None:
    configure(tree, 'ignore = ["TEM005"]')
    done = run_in_process(["check", "--show-settings"], tree)
    assert done.returncode == 0 and "# settings for ." in done.stdout
    assert str(tree / "pyproject.toml") in done.stdout


def test_a_config_file_without_our_table_warns(tree: Path) -> None:
    (tree / "other.toml").write_text("[tool.ruff]\nline-length = 100\n")
    done = check(tree, "--config", "other.toml", "pkg/clean.py")
    assert done.returncode == 0
    assert "warning: other.toml has no [tool.te-microbatch-lint] table" in done.stderr


def test_flake8_lines_stay_short_and_point_to_explain() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", "examples"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(len(line) <= 170 for line in lines), lines


# ------------------------------------------------------------------ 5. libraries, not copies


def test_noqa_patterns_are_flake8s_own() -> None:
    import flake8.defaults

    from lint_rules import noqa

    assert noqa.NOQA_INLINE.pattern == flake8.defaults.NOQA_INLINE_REGEXP.pattern
    assert noqa.NOQA_INLINE.flags == flake8.defaults.NOQA_INLINE_REGEXP.flags
    assert noqa.NOQA_FILE.pattern == flake8.defaults.NOQA_FILE.pattern
    assert noqa.NOQA_FILE.flags == flake8.defaults.NOQA_FILE.flags
    source = Path(noqa.__file__).read_text(encoding="utf-8")
    assert "# noqa(?:" not in source and "# flake8[:=]" not in source  # no copy to drift


def test_the_cache_lives_where_platformdirs_says(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from lint_rules.cli import cache

    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda name, appauthor=None: f"/os/{name}")
    assert cache.default_directory() == "/os/te-microbatch-lint"
    monkeypatch.setenv(cache.ENV_DIR, "/mine")
    opened = cache.open_cache(False, None)
    assert opened is not None and "/mine" in vars(opened).values()


def _cgroup(tmp_path: Path, files: dict[str, str], own: str) -> tuple[str, str]:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(own)
    return str(root), str(proc)


@pytest.mark.parametrize(
    ("files", "own", "quota"),
    [
        pytest.param(
            {
                "cgroup.controllers": "cpu",
                "cpu.max": "max 100000",
                "ci/job/cpu.max": "150000 100000",
            },
            "0::/ci/job\n",
            1.5,
            id="v2-quota",
        ),
        pytest.param(
            {"cgroup.controllers": "cpu", "cpu.max": "200000 100000", "ci/cpu.max": "max 100000"},
            "0::/ci\n",
            2.0,
            id="v2-quota-above",
        ),
        pytest.param(
            {"cgroup.controllers": "cpu", "cpu.max": "max 100000"}, "0::/\n", None, id="v2-none"
        ),
        pytest.param(
            {"cpu,cpuacct/cpu.cfs_quota_us": "300000", "cpu,cpuacct/cpu.cfs_period_us": "100000"},
            "2:cpu,cpuacct:/\n0::/\n",
            3.0,
            id="v1-quota",
        ),
        pytest.param(
            {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"},
            "1:cpu:/\n",
            None,
            id="v1-none",
        ),
        pytest.param({}, "", None, id="no-cgroup"),
    ],
)
def test_the_cgroup_cpu_quota_is_read(
    tmp_path: Path, files: dict[str, str], own: str, quota: float | None
) -> None:
    from lint_rules.cli import cpus

    assert cpus.cgroup_quota(*_cgroup(tmp_path, files, own)) == quota


def test_the_pool_stays_within_the_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lint_rules.cli import cpus, running

    root, proc = _cgroup(tmp_path, {"cgroup.controllers": "", "cpu.max": "150000 100000"}, "0::/\n")
    monkeypatch.setattr(cpus, "CGROUP_ROOT", root)
    monkeypatch.setattr(cpus, "PROC_CGROUP", proc)
    monkeypatch.setattr(cpus.cgroup_quota, "__defaults__", (root, proc))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr("os.getloadavg", lambda: (0.0, 0.0, 0.0))
    assert cpus.allowed_cpus() == 2
    assert running.default_cpus() == 2
