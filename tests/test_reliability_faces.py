"""The faces (libcst's runner, flake8) never run a project's code and never crash on a bad
configuration (reproducers of a reliability review, each kept as a test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self, config):\n"
    "        self.config = config\n        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n"
    "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"
)


def _python(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, input=stdin,
        timeout=300,
    )  # fmt: skip


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A checkout with a `lint_rules/` folder of its own, whose import leaves a mark."""
    (tmp_path / "lint_rules").mkdir()
    (tmp_path / "lint_rules/__init__.py").write_text('open("PWNED", "w").write("repo code ran")\n')
    (tmp_path / "lint_rules/codemod.py").write_text(
        "import libcst.codemod as c\n\n\nclass TEMicrobatchCodemod(c.VisitorBasedCodemodCommand):\n"
        '    DESCRIPTION = "x"\n'
    )
    (tmp_path / "lint_rules/flake8_plugin.py").write_text("TEMicrobatchChecker = None\n")
    (tmp_path / "m.py").write_text(MODULE)
    return tmp_path


def test_the_documented_libcst_command_never_imports_a_local_lint_rules(hostile: Path) -> None:
    proc = _python(
        "-m", "libcst.tool", "codemod", "-x", "te_microbatch_lint.codemod.TEMicrobatchCodemod",
        "--no-format", "--hide-progress", "m.py", cwd=hostile,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not (hostile / "PWNED").exists()
    assert "is_first_microbatch=None" in (hostile / "m.py").read_text()


def test_the_flake8_entry_point_never_imports_a_local_lint_rules(hostile: Path) -> None:
    """``python -m flake8`` loads the entry point by its module name with the current
    directory first on ``sys.path``: the entry point is ``te_microbatch_lint.flake8_plugin``."""
    text = (ROOT / "pyproject.toml").read_text()
    entry = 'TEM = "te_microbatch_lint.flake8_plugin:TEMicrobatchChecker"'
    assert entry in text
    code = (
        "import sys; sys.path.insert(0, ''); "
        "from te_microbatch_lint.flake8_plugin import TEMicrobatchChecker as C; "
        "import lint_rules; print(C.__mro__[1].__module__, lint_rules.__file__)"
    )
    proc = _python("-c", code, cwd=hostile)
    assert proc.returncode == 0, proc.stderr
    assert not (hostile / "PWNED").exists()
    module, where = proc.stdout.split()
    assert module == "lint_rules.flake8_plugin" and Path(where).parent == ROOT / "lint_rules"


def test_a_shadowing_lint_rules_already_loaded_is_refused(hostile: Path) -> None:
    code = "import sys; sys.path.insert(0, ''); import lint_rules; import te_microbatch_lint"
    proc = _python("-c", code, cwd=hostile)
    assert proc.returncode == 1 and "a different `lint_rules` package is loaded" in proc.stderr


def test_the_libcst_runner_keeps_a_cr_only_files_final_cr(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_bytes(MODULE.replace("\n", "\r").encode())
    proc = _python(
        "-m", "libcst.tool", "codemod", "-x", "te_microbatch_lint.codemod.TEMicrobatchCodemod",
        "--no-format", "--hide-progress", "b.py", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    raw = path.read_bytes()
    assert raw == MODULE.replace("\n", "\r").replace("self.flag)", "None)").encode()


def test_flake8_on_stdin_with_a_bad_nested_configuration_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/m.py").write_text(MODULE)
    (tmp_path / "sub/pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nunresolved = "maybe"\n'
    )
    proc = _python(
        "-m", "flake8", "--select", "TEM", "--stdin-display-name", "sub/m.py", "-",
        cwd=tmp_path, stdin=MODULE,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unresolved" in lines[0] and "Traceback" not in proc.stderr


def test_config_naming_a_directory_or_a_device_says_what_it_is(tmp_path: Path) -> None:
    from lint_rules.settings import ConfigResolver, SettingsError

    for path in (str(tmp_path), "/dev/zero"):
        with pytest.raises(SettingsError, match="configuration file is not a regular file"):
            ConfigResolver(config=path)
    with pytest.raises(SettingsError, match="configuration file does not exist"):
        ConfigResolver(config=str(tmp_path / "missing.toml"))
