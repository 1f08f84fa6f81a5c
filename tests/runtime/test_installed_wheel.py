"""What ships works when installed: a wheel built from this checkout, installed into a folder
of its own, builds the suite's model (its source is package data) and runs the GPU command,
with the checkout nowhere on the path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

PROJECT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from pathlib import Path
import lint_rules
site = Path(sys.argv[1]).resolve()
assert Path(lint_rules.__file__).resolve().is_relative_to(site), lint_rules.__file__
from lint_rules.runtime.shared_layer import build_shared_layer_training, write_variant
from lint_rules.runtime import reference_te
for variant in ("unguarded", "fixed"):
    training = build_shared_layer_training(variant, backend="reference")
    assert isinstance(training.model.mtp_layer, reference_te.Linear)
    training.train_step(training.batch(1))
written = write_variant("fixed", Path(sys.argv[2]))
assert (written.parent / "megatron_guard.py").is_file()
print("installed ok")
"""


@pytest.mark.slow
def test_installed_wheel_builds_the_model_and_runs_gpu_check(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy, so that the build leaves nothing in the checkout
    skip = shutil.ignore_patterns(
        ".git", ".venv*", "__pycache__", "build", "dist", "*.egg-info", ".cache", ".*_cache"
    )
    shutil.copytree(PROJECT, source, ignore=skip)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "lint_rules/runtime/fixtures/shared_layer_model.py" in names
    assert "lint_rules/runtime/fixtures/megatron_guard.py" in names
    assert not any(n.startswith(("tests/", "fixtures/")) for n in names)
    site = tmp_path / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(site), str(elsewhere / "out")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "installed ok" in done.stdout, done.stdout + done.stderr
    check = subprocess.run(
        [sys.executable, "-m", "lint_rules.runtime.gpu_check", "-k", "oracle"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "gradient oracle fixed" in check.stdout and "summary:" in check.stdout, check.stderr
    no_cuda = "no CUDA" in check.stdout.splitlines()[0]
    assert check.returncode == 2 if no_cuda else check.returncode in (0, 1)
