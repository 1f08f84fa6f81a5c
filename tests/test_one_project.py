"""One project, one verdict: a file named alone (``check FILE``, ``fix FILE``, flake8, the libcst
runner) is judged with its whole project, as ``check .`` judges it, and the on-disk index never
serves a stale verdict (docs/rules.md, "Where the faces differ")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import age, run_in_process

ROOT = Path(__file__).resolve().parent.parent
LIFECYCLE = ROOT / "fixtures" / "lifecycle"
LAYERS = "model/layers.py"

WRAPPER = (
    "import transformer_engine.pytorch as te\n\n\n"
    "class TELinear(te.Linear):\n"
    "    def __init__(self, hidden):\n"
    "        super().__init__(hidden, hidden)\n"
    "        self.is_first_microbatch = True\n\n"
    "    def forward(self, x):\n"
    "        out = super().forward(x, is_first_microbatch=self.is_first_microbatch)\n"
    "        self.is_first_microbatch = False\n"
    "        return out\n"
)


def _project(tmp_path: Path, name: str) -> Path:
    """A copy of a lifecycle package as a project of its own (a ``pyproject.toml`` at its
    root)."""
    root = tmp_path / name
    shutil.copytree(LIFECYCLE / name, root)
    (root / "pyproject.toml").write_text("[tool.te-microbatch-lint]\n", encoding="utf-8")
    return root


def _json(args: list[str], cwd: Path) -> list[dict]:
    done = run_in_process(["check", "--output-format", "json", *args], cwd)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _verdicts(found: list[dict], path: str) -> list[tuple]:
    """Codes, lines, verdicts, fix safety and evidence of ``path``'s findings."""
    own = os.path.normpath(path)
    return [
        (
            f["code"],
            f["line"],
            f["column"],
            f.get("verdict"),
            (f.get("fix") or {}).get("applicability"),
            [(os.path.normpath(e["path"]), e["line"], e["message"]) for e in f["evidence"]],
        )
        for f in found
        if os.path.normpath(f["path"]) == own
    ]


def _same_as_fresh(root: Path, path: str, cache: Path) -> list[tuple]:
    """``check FILE`` with the index equals a fresh ``check .`` for that file; its findings."""
    age(root)
    fresh = _verdicts(_json(["--no-cache", "."], root), path)
    alone = _verdicts(_json(["--cache-dir", str(cache), path], root), path)
    assert alone == fresh
    return fresh


def test_single_file_gets_the_project_verdict_through_every_edit(tmp_path: Path) -> None:
    """A re-arm edited, a builder edited, the settings edited, files renamed and copied: each
    time ``check FILE`` (warm index) gives the verdict of a fresh ``check .``."""
    root = _project(tmp_path, "built_under_switch")
    cache = tmp_path / "cache"
    found = _same_as_fresh(root, LAYERS, cache)
    # PlainLinear (built without the switch) and LooseLinear: conditional, re-armed only under
    # `fp8 is not None or use_switch` (module.py)
    assert [f[1] for f in found] == [34, 45]
    assert all(f[3] == "conditional" for f in found)
    _same_as_fresh(root, LAYERS, cache)  # warm, nothing changed
    index = json.loads(next(cache.rglob("*.json")).read_text(encoding="utf-8"))
    assert any(key.endswith("layers.py") for key in index["@stat"])  # known by its stat
    module = root / "model" / "module.py"
    text = module.read_text(encoding="utf-8")
    condition = 'if self.config.fp8 is not None or getattr(self.config, "use_switch", False):'
    assert condition in text
    # the re-arm made unconditional: nothing is stale any more
    module.write_text(text.replace(condition, "if True:"), encoding="utf-8")
    assert _same_as_fresh(root, LAYERS, cache) == []
    module.write_text(text, encoding="utf-8")
    assert len(_same_as_fresh(root, LAYERS, cache)) == 2
    # the builder: LooseLinear's helper now builds it under the switch only
    specs = root / "model" / "specs.py"
    specs.write_text(
        specs.read_text(encoding="utf-8").replace(
            "def make_loose(hidden):\n    return LooseLinear(hidden)\n", ""
        ),
        encoding="utf-8",
    )
    # LooseLinear is now built only under the switch: the index's answer is not served
    assert [f[1] for f in _same_as_fresh(root, LAYERS, cache)] == [34]
    # the settings: TEM001 ignored for the project
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.te-microbatch-lint]\nignore = ["TEM001"]\n', encoding="utf-8")
    assert _same_as_fresh(root, LAYERS, cache) == []
    pyproject.write_text("[tool.te-microbatch-lint]\n", encoding="utf-8")
    _same_as_fresh(root, LAYERS, cache)
    # the re-arm file renamed, then copied: evidence names the file as it is now
    (root / "model" / "module.py").rename(root / "model" / "base.py")
    for name in ("layers.py", "schedule.py", "__init__.py", "specs.py"):
        path = root / "model" / name
        path.write_text(path.read_text(encoding="utf-8").replace(".module", ".base"), "utf-8")
    found = _same_as_fresh(root, LAYERS, cache)
    assert not any("module.py" in step[0] for f in found for step in f[5])
    shutil.copy(root / "model" / "layers.py", root / "model" / "copy.py")
    _same_as_fresh(root, "model/copy.py", cache)
    _same_as_fresh(root, LAYERS, cache)


def test_a_warm_run_reads_the_answers_of_the_run_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a class is built (``builds``) is answered once per content of the project's files:
    a warm ``check FILE`` reads the answers from the index instead of reading every file, and
    answers afresh once a file changes."""
    from lint_rules.analysis import builds

    root = _project(tmp_path, "built_under_switch")
    cache = tmp_path / "cache"
    first = _same_as_fresh(root, LAYERS, cache)
    assert [f[1] for f in first] == [34, 45]
    index = json.loads(next(cache.rglob("*.json")).read_text(encoding="utf-8"))
    assert index["@answers"]  # the questions the verdicts asked, answered
    asked: list[str] = []
    answer = builds.Answers.answer

    def counted(self: builds.Answers, key: str) -> object:
        asked.append(key)
        return answer(self, key)

    monkeypatch.setattr(builds.Answers, "answer", counted)
    warm = _verdicts(_json(["--cache-dir", str(cache), LAYERS], root), LAYERS)
    assert warm == first and asked == []
    specs = root / "model" / "specs.py"  # any file of the run changed: answered again
    specs.write_text(specs.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert _same_as_fresh(root, LAYERS, cache) == first and asked


def test_cache_never_serves_a_directory_result_to_a_file_judged_alone(tmp_path: Path) -> None:
    """reliability-4 #06: a one-file run judged alone (``--isolated``) is not served the
    result a directory run stored for the same content."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "layers.py").write_text(WRAPPER, encoding="utf-8")
    args = ["check", "--isolated"]
    fresh = run_in_process([*args, "--no-cache", "pkg/layers.py"], tmp_path)
    run_in_process([*args, "--cache-dir", "c", "pkg"], tmp_path)
    cached = run_in_process([*args, "--cache-dir", "c", "pkg/layers.py"], tmp_path)
    assert "not seen here" in fresh.stdout or "provisional" in fresh.stdout.lower() or fresh.stdout
    assert (cached.stdout, cached.returncode) == (fresh.stdout, fresh.returncode)


def test_cached_evidence_names_the_file_after_a_rename(tmp_path: Path) -> None:
    """reliability-4 #07: a file renamed (or copied) is served its cached findings with its
    own name in the evidence, as a fresh run names it."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        WRAPPER.replace("class TELinear(te.Linear)", "class B(te.Linear)"), encoding="utf-8"
    )
    run_in_process(["check", "--isolated", "--cache-dir", "c", "pkg"], tmp_path)
    (tmp_path / "pkg" / "m.py").rename(tmp_path / "pkg" / "k.py")
    cached = run_in_process(["check", "--isolated", "--cache-dir", "c", "pkg"], tmp_path)
    fresh = run_in_process(["check", "--isolated", "--no-cache", "pkg"], tmp_path)
    assert "m.py" not in cached.stdout
    assert cached.stdout == fresh.stdout


@pytest.mark.slow
def test_libcst_runner_keeps_the_final_cr_of_a_file_with_nothing_to_fix(tmp_path: Path) -> None:
    """reliability-4 #23: the runner leaves a CR-only file with no TE code byte for byte."""
    raw = b"import os\r\r\rdef f():\r    return os.sep\r"
    (tmp_path / "plain.py").write_bytes(raw)
    done = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "-x",
         "te_microbatch_lint.codemod.TEMicrobatchCodemod", "--no-format", "--hide-progress",
         "plain.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "plain.py").read_bytes() == raw


def test_fix_file_alone_in_its_folder_applies_the_safe_fix_as_fix_dot(tmp_path: Path) -> None:
    """A file alone in its folder (a project of one file): ``fix FILE`` writes what ``fix .``
    writes (the folder is the project: nothing else can re-arm the flag)."""
    for name in ("one", "dot"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text("", encoding="utf-8")
        (tmp_path / name / "m.py").write_text(WRAPPER, encoding="utf-8")
    one = run_in_process(["fix", "--no-cache", "m.py"], tmp_path / "one")
    dot = run_in_process(["fix", "--no-cache", "."], tmp_path / "dot")
    assert one.returncode == dot.returncode == 0, (one.stderr, dot.stderr)
    fixed = (tmp_path / "dot" / "m.py").read_text(encoding="utf-8")
    # judged alone the verdict would be provisional and its fix unsafe
    assert "is_first_microbatch=None" in fixed
    assert (tmp_path / "one" / "m.py").read_text(encoding="utf-8") == fixed


def test_show_settings_names_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("", encoding="utf-8")
    (tmp_path / "m.py").write_text("x = 1\n", encoding="utf-8")
    done = run_in_process(["check", "--show-settings", "m.py"], tmp_path)
    assert "project-root" in done.stdout
    assert "setup.cfg" in done.stdout


def _flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TE_MICROBATCH_LINT_CACHE_DIR": str(cwd / ".c")}
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_flake8_names_the_project_root_only_when_it_is_not_the_current_directory(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    (project / "pkg" / "layers.py").write_text(WRAPPER, encoding="utf-8")
    inside = _flake8(project, "pkg/layers.py")
    assert inside.stdout.count("TEM001") == 1 and "[project" not in inside.stdout, inside.stderr
    outside = _flake8(tmp_path, "proj/pkg/layers.py")
    assert outside.stdout.rstrip().endswith("[project proj]"), outside.stdout + outside.stderr


@pytest.mark.slow
def test_flake8_honours_select_and_ignore_of_the_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "layers.py").write_text(WRAPPER, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nignore = ["TEM001"]\n', encoding="utf-8"
    )
    assert "TEM001" not in _flake8(tmp_path, "pkg/layers.py").stdout
    (tmp_path / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nselect = ["TEM001"]\n', encoding="utf-8"
    )
    assert "TEM001" in _flake8(tmp_path, "pkg/layers.py").stdout


@pytest.mark.slow
def test_processes_sharing_the_index_never_serve_a_stale_verdict(tmp_path: Path) -> None:
    """Several processes write the index at once (flake8 ``-j``, two pre-commit runs): each
    write is whole (a temporary file renamed), so every run reads a valid index, and what the
    last writer left gives the verdict of a fresh run."""
    root = _project(tmp_path, "rearm_under_fp8")
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "lint_rules.cli", "check", "--cache-dir", str(cache)]
    command += ["--output-format", "json"]
    files = [LAYERS, "model/module.py", "model/schedule.py", LAYERS]
    runs = [
        subprocess.Popen([*command, path], cwd=root, env=env, stdout=subprocess.PIPE, text=True)
        for path in files
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert all(run.returncode in (0, 1) for run in runs)
    fresh = _verdicts(_json(["--no-cache", "."], root), LAYERS)
    assert fresh and _verdicts(json.loads(outputs[0]), LAYERS) == fresh
    assert _verdicts(json.loads(outputs[3]), LAYERS) == fresh
    for index in cache.rglob("*.json"):
        json.loads(index.read_text(encoding="utf-8"))  # never torn
    assert _same_as_fresh(root, LAYERS, cache) == fresh


def test_processes_sharing_the_index_run_a_project_once(tmp_path: Path) -> None:
    """Two users of one index (flake8's ``-j`` workers, parallel pre-commit runs): the second
    waits while the first runs the project, then reads what it wrote instead of running the
    project again. Two openings of the lock file exclude each other as two processes do."""
    import threading

    from lint_rules.analysis.records import Outcome
    from lint_rules.analysis.store import ResultCache

    first, second = ResultCache(str(tmp_path)), ResultCache(str(tmp_path))
    assert not first.entries and not second.entries  # both read it empty
    entered, waited = threading.Event(), []

    def other() -> None:
        entered.wait(timeout=60)
        with second.run_once():
            waited.append(dict(second.entries))

    thread = threading.Thread(target=other)
    thread.start()
    with first.run_once():
        entered.set()
        thread.join(timeout=0.3)
        assert thread.is_alive()  # waiting for the first run
        outcome = Outcome("a.py", digest="d" * 40, cacheable=True)
        first.put(outcome)
    thread.join(timeout=60)
    assert waited and "d" * 40 in waited[0]  # read what the first run wrote
