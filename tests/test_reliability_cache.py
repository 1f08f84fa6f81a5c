"""The result cache is ignored when it cannot be read, whatever is at its path (reproducers of
a reliability review, each kept as a test)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

import lint_rules.cli.cache as cache_module
from lint_rules.cli import main

MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)


@pytest.fixture
def warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checked file and its cache file (returned)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(MODULE)
    assert main(["check", "--cache-dir", "c", "m.py"]) == 1
    (found,) = (tmp_path / "c").rglob("*.json")
    return found


def _check(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["check", "--cache-dir", "c", "m.py"])
    out = capsys.readouterr()
    return status, out.out + out.err


def _edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d[next(iter(d))].__setitem__(0, "x"),  # a timestamp that is not a number
        lambda d: d[next(iter(d))].__setitem__(2, [[1, 2]]),  # a finding of the wrong shape
        lambda d: d[next(iter(d))][2][0].__setitem__(2, "ten"),  # a line that is no int
        lambda d: d[next(iter(d))].__setitem__(1, ["e", "x", None]),  # a bad error entry
        lambda d: d.__setitem__("other", ["x", None, [], "", [], [], None, False]),
        lambda d: d.__setitem__("other", [1]),
    ],
)
def test_garbage_entries_are_ignored(
    warm: Path,
    change,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    capsys.readouterr()
    _edit(warm, change)
    status, out = _check(capsys)
    assert status == 1 and "TEM001" in out and "Traceback" not in out
    assert main(["check", "--cache-dir", "c", "m.py"]) == 1  # and after the save


def test_deeply_nested_json_is_ignored(warm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warm.write_text("[" * 100_000 + "]" * 100_000)
    assert _check(capsys)[0] == 1


def test_a_fifo_at_the_cache_path_does_not_hang(
    warm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warm.unlink()
    os.mkfifo(warm)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(_check(capsys)[0]), daemon=True)
    thread.start()
    thread.join(60)
    if thread.is_alive():  # unblock the reader so the test process can end
        with open(warm, "w"):
            pass
        pytest.fail("check blocked on a FIFO at the cache path")
    assert result == [1]


def test_a_link_to_dev_zero_at_the_cache_path_is_ignored(
    warm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warm.unlink()
    warm.symlink_to("/dev/zero")
    assert _check(capsys)[0] == 1


def test_the_cache_never_writes_through_dangling_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    (root / ".gitignore").symlink_to(tmp_path / "victim-gitignore")
    (root / "CACHEDIR.TAG").symlink_to(tmp_path / "victim-tag")
    cache = cache_module.ResultCache(str(root))
    cache.dirty = True
    cache.save()
    assert not (tmp_path / "victim-gitignore").exists()
    assert not (tmp_path / "victim-tag").exists()


def test_the_cache_is_per_interpreter_version(monkeypatch: pytest.MonkeyPatch) -> None:
    first = cache_module.code_hash()
    monkeypatch.setattr(cache_module.sys, "version", "3.99.0 (another interpreter)")
    assert cache_module.code_hash() != first
