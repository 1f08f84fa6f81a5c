"""Real-code regression tests: the pinned findings on megatron-core and transformer-engine.

Corpora (recorded here; change them only together with the expectations below):

- megatron-core 0.19.2 (PyPI wheel, cp312; downloaded with ``--python-version 3.12`` since it
  installs only on Python >= 3.12, never installed): exactly three TEM001 findings, the
  ``super().forward(..., is_first_microbatch=<local>)`` calls of ``TELinear``,
  ``TELayerNormColumnParallelLinear`` and ``TEGroupedLinear`` in
  ``megatron/core/extensions/transformer_engine.py`` (see ``docs/te-facts.md``);
- transformer-engine 2.20.2 (PyPI wheel, py3-none-any): zero findings in
  ``transformer_engine/pytorch`` and in the whole package (TE forwards its parameter);
- released code with the shapes listed in ``docs/te-facts.md`` (``RELEASES`` below, marked
  slow): megatron-core 0.8.0, 0.10.0 and 0.14.0 (the TE wrapper classes' ``super().forward``
  reported as resolved TE calls; 0.10.0 ``cuda_graphs.py``, an in-file non-TE runner, not
  reported; 0.8.0's graphed callables and 0.14.0's ``nvidia_kitchen`` subclasses, nobody can
  show are TE, quiet by default and reported as unresolved by a strict run), megatron-bridge
  0.6.2 (an in-file ``TransformerLayer`` subclass), nemo_toolkit 1.23.0 (``layer =
  self._get_layer(i)`` resolved to TE) and transformer-engine 1.13.0 (clean).

The wheels are fetched once by ``benchmarks/corpora.py`` (the benchmark's cache:
``$TE_LINT_CACHE`` or the user cache directory) and every test here skips, with the reason, when the
package registry cannot be reached (short timeouts) or ``$TE_LINT_OFFLINE`` is set and the
corpus is not cached yet. The fix tests work on a copy in a temporary directory.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpora import (  # noqa: E402
    ACCEPTANCE,
    MEGATRON_CORE,
    TRANSFORMER_ENGINE,
    CorpusSpec,
    CorpusUnavailable,
    corpus_info,
    fetch_corpus,
)

pytestmark = pytest.mark.network

MEGATRON_CORE_VERSION = "0.19.2"
TRANSFORMER_ENGINE_VERSION = "2.20.2"
MEGATRON_PY_FILES = 542
TE_PY_FILES = 222

TE_EXTENSIONS = "megatron/core/extensions/transformer_engine.py"
MEGATRON_EXPECTED = {
    (TE_EXTENSIONS, 1088, "TEM001"),  # TELinear.forward
    (TE_EXTENSIONS, 1336, "TEM001"),  # TELayerNormColumnParallelLinear.forward
    (TE_EXTENSIONS, 2430, "TEM001"),  # TEGroupedLinear.forward
}
MEGATRON_FIX_LINES = {1088, 1336, 2430}
GUARD = "is_first_microbatch_tracked"

_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


# ------------------------------------------------------------------------------------ helpers


def _corpus(spec: CorpusSpec, version: str) -> Path:
    assert spec.version == version, "benchmarks/corpora.py and this test disagree on the pin"
    try:
        root = fetch_corpus(spec, timeout=120, socket_timeout=10)
    except CorpusUnavailable as error:
        pytest.skip(f"{spec.requirement} unavailable (package registry unreachable?): {error}")
    info = corpus_info(root)
    assert (info["name"], info["version"]) == (spec.name, version)
    return root


@pytest.fixture(scope="session")
def megatron_core() -> Path:
    return _corpus(MEGATRON_CORE, MEGATRON_CORE_VERSION)


@pytest.fixture(scope="session")
def transformer_engine() -> Path:
    return _corpus(TRANSFORMER_ENGINE, TRANSFORMER_ENGINE_VERSION)


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("te-microbatch-lint")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from lint_rules.cli import main; sys.exit(main())"]


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def flake8_findings(cwd: Path, path: str) -> tuple[int, set[tuple[str, int, str]], str]:
    proc = _run([sys.executable, "-m", "flake8", "--select", "TEM", "--isolated", path], cwd)
    found = set()
    for line in proc.stdout.splitlines():
        match = _LOCATION.match(line)
        assert match, f"unexpected flake8 output line: {line!r}"
        found.add((os.path.normpath(match["path"]), int(match["line"]), match["code"]))
    return proc.returncode, found, proc.stderr


def check_findings(cwd: Path, *paths: str) -> tuple[int, set[tuple[str, int, str]], str]:
    proc = _run([*_cli(), "check", *paths, "--isolated", "--format", "json"], cwd)
    rows = json.loads(proc.stdout) if proc.stdout.strip() else []
    found = {(os.path.normpath(r["path"]), r["line"], r["code"]) for r in rows}
    assert len(found) == len(rows), "a finding was reported twice"
    return proc.returncode, found, proc.stderr


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` (not only .py): relative path -> (bytes, mtime_ns)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def changed_lines(before: bytes, after: bytes) -> set[int]:
    """The lines of ``before`` that ``after`` replaces; the lines it deletes must be whole
    assignments of a local the fix left unused (``_is_first_microbatch = (...)``)."""
    import difflib

    old, new = before.splitlines(), after.splitlines()
    replaced: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag == "replace":
            assert i2 - i1 == j2 - j1, "a fix replaces lines one for one"
            replaced.update(range(i1 + 1, i2 + 1))
        elif tag == "delete":
            assert old[i1].strip().startswith(b"_is_first_microbatch = "), old[i1:i2]
        elif tag == "insert":
            raise AssertionError(f"the None fix added lines: {new[j1:j2]}")
    return replaced


def pyflakes(cwd: Path, path: str) -> list[str]:
    """flake8's pyflakes warnings, without their line numbers (they move when lines go)."""
    proc = _run([sys.executable, "-m", "flake8", "--isolated", "--select", "F", path], cwd)
    return sorted(re.sub(r":\d+:\d+:", ":", line) for line in proc.stdout.splitlines())


@pytest.fixture
def megatron_copy(megatron_core: Path, tmp_path: Path) -> Path:
    """A writable copy of the ``megatron`` package (the cached corpus is never modified)."""
    shutil.copytree(megatron_core / "megatron", tmp_path / "megatron", symlinks=True)
    return tmp_path


# ----------------------------------------------------------------------------------- corpora


def test_corpus_versions(megatron_core: Path, transformer_engine: Path) -> None:
    for root, spec, version, n_files in (
        (megatron_core, MEGATRON_CORE, MEGATRON_CORE_VERSION, MEGATRON_PY_FILES),
        (transformer_engine, TRANSFORMER_ENGINE, TRANSFORMER_ENGINE_VERSION, TE_PY_FILES),
    ):
        info = corpus_info(root)
        assert info["version"] == version
        assert info["wheel"].startswith(f"{spec.name.replace('-', '_')}-{version}-")
        assert sum(1 for _ in (root / spec.package_dir).rglob("*.py")) == n_files


# ------------------------------------------------------------------------------ megatron-core


@pytest.mark.realcode
def test_megatron_core_flake8_plugin(megatron_core: Path) -> None:
    rc, found, err = flake8_findings(megatron_core, "megatron")
    assert found == MEGATRON_EXPECTED, err
    assert rc == 1


def test_megatron_core_check_json(megatron_core: Path) -> None:
    rc, found, err = check_findings(megatron_core, "megatron")
    assert found == MEGATRON_EXPECTED, err
    assert rc == 1


@pytest.mark.realcode
def test_megatron_core_check_parallel_is_identical(megatron_core: Path) -> None:
    outputs = set()
    for jobs in ("1", "2", "1"):
        proc = _run([*_cli(), "check", "megatron", "--isolated", "--jobs", jobs], megatron_core)
        assert proc.returncode == 1, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


# ------------------------------------------------------------------------- transformer-engine


@pytest.mark.parametrize("path", ["transformer_engine/pytorch", "transformer_engine"])
def test_transformer_engine_check_clean(transformer_engine: Path, path: str) -> None:
    rc, found, err = check_findings(transformer_engine, path)
    assert found == set(), err
    assert rc == 0, err


@pytest.mark.realcode
def test_transformer_engine_flake8_plugin_clean(transformer_engine: Path) -> None:
    # The whole package (transformer_engine/pytorch included): one flake8 run.
    rc, found, err = flake8_findings(transformer_engine, "transformer_engine")
    assert found == set(), err
    assert rc == 0, err


# ---------------------------------------------------------------- fix on a copy (issue 3)


@pytest.mark.realcode
def test_megatron_core_fix_none_strategy(megatron_copy: Path) -> None:
    before = snapshot(megatron_copy)
    flakes = pyflakes(megatron_copy, TE_EXTENSIONS)
    proc = _run([*_cli(), "fix", "megatron", "--isolated"], megatron_copy)
    assert proc.returncode == 0, proc.stderr
    after = snapshot(megatron_copy)
    assert pyflakes(megatron_copy, TE_EXTENSIONS) == flakes, "the fix added a pyflakes warning"
    assert "FP8 weight caching" in proc.stderr, "the fix must say it gives up FP8 caching"

    assert before.keys() == after.keys()
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed == {TE_EXTENSIONS}
    untouched_mtime = {p for p in before if p not in changed and before[p][1] != after[p][1]}
    assert untouched_mtime == set(), "files with nothing to fix were rewritten"
    assert changed_lines(before[TE_EXTENSIONS][0], after[TE_EXTENSIONS][0]) == MEGATRON_FIX_LINES
    fixed = after[TE_EXTENSIONS][0]
    ast.parse(fixed)
    original = before[TE_EXTENSIONS][0].splitlines()
    for line in MEGATRON_FIX_LINES:  # the call lines, now passing None
        call = original[line - 1].replace(b"=_is_first_microbatch", b"=None")
        assert call in fixed.splitlines(), call
    assert b"_is_first_microbatch = " not in fixed  # the unused locals went with them

    rc, found, err = check_findings(megatron_copy, "megatron")
    assert (rc, found) == (0, set()), err

    again = _run([*_cli(), "fix", "megatron", "--isolated"], megatron_copy)
    assert again.returncode == 0, again.stderr
    assert snapshot(megatron_copy) == after, "a second fix changed something"


@pytest.mark.realcode
def test_megatron_core_fix_guard_strategy(megatron_copy: Path) -> None:
    """With the guard the project has (released megatron-core lacks it: Megatron-LM pull
    request 6965 adds it to ``transformer/module.py``); without it, see below."""
    module = megatron_copy / "megatron" / "core" / "transformer" / "module.py"
    lacking = _run(
        [*_cli(), "fix", "megatron", "--isolated", "--fix-strategy", "guard", "--diff"],
        megatron_copy,
    )
    assert (
        "fell back to None: `megatron/core/transformer/module.py` (in the run) defines no"
        in lacking.stdout + lacking.stderr
    )
    assert f"import {GUARD}" not in lacking.stdout
    with module.open("a", encoding="utf-8") as file:
        file.write(f"\n\ndef {GUARD}(config):\n    return config.fp8 is not None\n")
    before = snapshot(megatron_copy)
    flakes = pyflakes(megatron_copy, TE_EXTENSIONS)
    proc = _run(
        [*_cli(), "fix", "megatron", "--isolated", "--fix-strategy", "guard"], megatron_copy
    )
    assert proc.returncode == 0, proc.stderr
    after = snapshot(megatron_copy)
    assert pyflakes(megatron_copy, TE_EXTENSIONS) == flakes, "the fix added a pyflakes warning"
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed == {TE_EXTENSIONS}

    text = after[TE_EXTENSIONS][0].decode("utf-8")
    tree = ast.parse(text)
    imports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == GUARD for a in node.names)
    ]
    assert len(imports) == 1, f"the guard must be imported exactly once, got {len(imports)}"
    assert imports[0].module == "megatron.core.transformer.module"
    guard_calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == GUARD
    ]
    assert len(guard_calls) == len(MEGATRON_FIX_LINES)

    rc, found, err = check_findings(megatron_copy, "megatron")
    assert (rc, found) == (0, set()), err
    again = _run(
        [*_cli(), "fix", "megatron", "--isolated", "--fix-strategy", "guard"], megatron_copy
    )
    assert again.returncode == 0, again.stderr
    assert snapshot(megatron_copy) == after, "a second guard fix changed something"


# ------------------------------------------------------------ released code shapes (issue 10)

CG = "megatron/core/transformer/custom_layers/transformer_engine.py"
EXT = "megatron/core/extensions/transformer_engine.py"
KITCHEN = "megatron/core/extensions/kitchen.py"
NEMO = "nemo/collections/nlp/modules/common/megatron/transformer.py"
BRIDGE = "megatron/bridge/models/gpt_full_te_layer_autocast_spec.py"
RESOLVED, UNRESOLVED = "TE", "unresolved"
RELEASES: dict[str, tuple[str, set[tuple[str, int, str, str]]]] = {
    # corpus key: (path to check, {(path, line, code, how the callee is named)}): exactly these.
    # 0.8.0 re-arms its wrappers' flag on every step (module.py:90, no condition) and the
    # schedule sets `current_microbatch` every microbatch: maintained, nothing to report.
    "megatron-core-0.8.0": ("megatron", set()),
    "megatron-core-0.10.0": (
        "megatron",
        {(EXT, 220, "TEM001", RESOLVED), (EXT, 372, "TEM001", RESOLVED)}
        | {(EXT, 904, "TEM001", RESOLVED)},  # and not transformer/cuda_graphs.py:250
    ),
    # 0.14.0 re-arms `if fp8 is not None or use_kitchen`, and builds its kitchen modules only
    # where `use_kitchen` is set (KitchenSpecProvider, in models/gpt/gpt_layer_specs.py):
    # wherever they exist their flag is re-armed. The three TE wrappers are reported.
    "megatron-core-0.14.0": (
        "megatron",
        {(EXT, 385, "TEM001", RESOLVED), (EXT, 573, "TEM001", RESOLVED)}
        | {(EXT, 1199, "TEM001", RESOLVED)},
    ),
    "megatron-bridge-0.6.2": ("megatron", {(BRIDGE, 254, "TEM001", RESOLVED)}),
    # a microbatch counter wrapped modulo the microbatches re-arms it in forward: maintained
    "nemo_toolkit-1.23.0": ("nemo", set()),
    "transformer-engine-1.13.0": ("transformer_engine", set()),
}


def _named(message: str) -> str:
    """How the message names the callee: a resolved TE module, or unresolved."""
    if "unresolved `" in message or "not resolved" in message:
        return UNRESOLVED
    return RESOLVED if re.search(r"\bTE (\w+ )?`", message) else message


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(RELEASES))
def test_released_code_shapes(key: str) -> None:
    spec = ACCEPTANCE[key]
    root = _corpus(spec, spec.version)
    path, expected = RELEASES[key]
    proc = _run([*_cli(), "check", path, "--isolated", "--format", "json"], root)
    rows = json.loads(proc.stdout) if proc.stdout.strip() else []
    found = {
        (os.path.normpath(r["path"]), r["line"], r["code"], _named(r["message"])) for r in rows
    }
    assert found == expected, proc.stderr
    assert proc.returncode == (1 if expected else 0), proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("key", ["megatron-core-0.10.0", "megatron-core-0.14.0"])
def test_released_code_evidence_names_the_fp8_re_arm(key: str) -> None:
    """From 0.10.0 on, ``set_is_first_microbatch`` re-arms the flag only under FP8: each TE
    wrapper site is reported as kept only under that condition, and its evidence says where."""
    spec = ACCEPTANCE[key]
    root = _corpus(spec, spec.version)
    proc = _run([*_cli(), "check", "megatron", "--isolated", "--format", "json"], root)
    rows = [r for r in json.loads(proc.stdout) if r["path"].endswith("transformer_engine.py")]
    assert len(rows) == 3, proc.stderr
    for row in rows:
        assert row["verdict"] == "conditional"
        steps = [(os.path.normpath(e["path"]), e["message"]) for e in row["evidence"]]
        assert any(
            path == "megatron/core/transformer/module.py"
            and "set_is_first_microbatch" in text
            and "self.config.fp8 is not None" in text
            for path, text in steps
        ), steps
        assert any("schedules.py" in p or "combined_1f1b.py" in p for p, _ in steps), steps


@pytest.mark.slow
def test_kitchen_modules_are_quiet_by_default_and_named_when_strict() -> None:
    """0.14.0's kitchen subclasses (of ``nvidia_kitchen`` modules, a known TE look-alike) are
    not TE: quiet by default. A strict run (``--unresolved report``) reports them, named as the
    look-alike; checked without ``gpt_layer_specs.py`` (which builds their provider only ``if
    use_kitchen``), the three sites are conditional."""
    spec = ACCEPTANCE["megatron-core-0.14.0"]
    root = _corpus(spec, spec.version)
    files = [KITCHEN, "megatron/core/transformer/module.py"]
    files.append("megatron/core/pipeline_parallel/schedules.py")
    quiet = _run([*_cli(), "check", *files, "--isolated", "--format", "json"], root)
    assert (quiet.returncode, json.loads(quiet.stdout)) == (0, []), quiet.stderr
    strict = [*files, "--isolated", "--format", "json", "--unresolved", "report"]
    proc = _run([*_cli(), "check", *strict], root)
    rows = json.loads(proc.stdout)
    assert {(r["path"], r["line"], _named(r["message"])) for r in rows} == {
        (KITCHEN, line, UNRESOLVED) for line in (352, 673, 999)
    }, proc.stderr
    assert all("(a TE look-alike: NVIDIA Kitchen)" in r["message"] for r in rows)
    assert {r["verdict"] for r in rows} == {"conditional"}


@pytest.mark.slow
def test_graphed_callables_of_0_8_0_are_quiet_by_default() -> None:
    """0.8.0's ``self.cuda_graphs[l][mb](h, is_first_microbatch=...)`` (transformer_block.py:436)
    holds ``make_graphed_callables`` results filled outside the file: nobody can show it is TE,
    so it is quiet by default; a strict run reports it, unresolved, with no fix."""
    spec = ACCEPTANCE["megatron-core-0.8.0"]
    root = _corpus(spec, spec.version)
    args = [BLOCK, "--isolated", "--format", "json"]
    quiet = _run([*_cli(), "check", *args], root)
    assert json.loads(quiet.stdout) == [], quiet.stderr
    strict = _run([*_cli(), "check", *args, "--unresolved", "report"], root)
    rows = json.loads(strict.stdout)
    assert [(r["line"], _named(r["message"]), r["fix"]) for r in rows] == [
        (436, UNRESOLVED, None)
    ], strict.stderr


@pytest.mark.slow
def test_megatron_bridge_evidence_says_nothing_re_arms() -> None:
    spec = ACCEPTANCE["megatron-bridge-0.6.2"]
    root = _corpus(spec, spec.version)
    proc = _run([*_cli(), "check", "megatron", "--isolated", "--format", "json"], root)
    (row,) = json.loads(proc.stdout)
    assert row["verdict"] == "stale"
    assert any("nothing in the files seen re-arms" in e["message"] for e in row["evidence"])


@pytest.mark.slow
@pytest.mark.parametrize("key", ["megatron-core-0.10.0", "megatron-core-0.8.0"])
def test_released_code_flake8_sees_one_file(key: str) -> None:
    """flake8 sees one file: the wrappers' re-arm (module.py) is not in it, so every wrapper
    site is reported, its evidence saying that the project is not seen."""
    spec = ACCEPTANCE[key]
    root = _corpus(spec, spec.version)
    path = EXT if key.endswith("0.10.0") else CG
    proc = _run([sys.executable, "-m", "flake8", "--select", "TEM", "--isolated", path], root)
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout + proc.stderr


# ------------------------------------------------------- unsafe fixes on released code (issue 11)

BLOCK = "megatron/core/transformer/transformer_block.py"


@pytest.mark.slow
def test_megatron_core_0_8_0_fix_changes_nothing(tmp_path: Path) -> None:
    """0.8.0 keeps its flags (re-armed every step; transformer_block.py:436's graphed call
    compares `current_microbatch`, which the schedule sets every microbatch): neither fix
    touches a file."""
    spec = ACCEPTANCE["megatron-core-0.8.0"]
    root = _corpus(spec, spec.version)
    shutil.copytree(root / "megatron", tmp_path / "megatron", symlinks=True)
    before = snapshot(tmp_path)
    for extra in ([], ["--unsafe-fixes"]):
        proc = _run([*_cli(), "fix", "megatron", "--isolated", *extra], tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert snapshot(tmp_path) == before


# --------------------------------------------------- one project, one verdict (issue 28)

ONE_PROJECT: dict[str, tuple[str, set[int]]] = {
    # corpus key: (the TE wrapper file, the lines of its sites every face reports)
    "megatron-core-0.8.0": (CG, set()),  # re-armed every step (module.py:90): maintained
    "megatron-core-0.10.0": (EXT, {220, 372, 904}),
    "megatron-core-0.14.0": (EXT, {385, 573, 1199}),
    "megatron-core-0.19.2": (EXT, set(MEGATRON_FIX_LINES)),
}


def _release(key: str) -> Path:
    spec = ACCEPTANCE.get(key) or MEGATRON_CORE
    assert key == f"{spec.name}-{spec.version}"
    return _corpus(spec, spec.version)


def _index_env(cache: Path) -> dict[str, str]:
    return {**os.environ, "TE_MICROBATCH_LINT_CACHE_DIR": str(cache)}


@pytest.mark.slow
@pytest.mark.realcode
@pytest.mark.parametrize("key", sorted(ONE_PROJECT))
def test_flake8_and_check_file_judge_a_wrapper_with_its_project(key: str, tmp_path: Path) -> None:
    """flake8 over ``megatron/core`` and ``check FILE`` on the wrapper file named alone give
    the project's verdict: 0.8.0 nothing; later releases the three TE wrapper sites, each
    with the FP8 condition of the re-arm in its evidence."""
    root = _release(key)
    wrapper, lines = ONE_PROJECT[key]
    env = _index_env(tmp_path / "index")
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", "megatron/core"],
        cwd=root, capture_output=True, text=True, timeout=1800, env=env,
    )  # fmt: skip
    found = [_LOCATION.match(line) for line in proc.stdout.splitlines()]
    assert all(found), proc.stdout
    assert {(os.path.normpath(m["path"]), int(m["line"])) for m in found if m} == {
        (wrapper, line) for line in lines
    }, proc.stdout + proc.stderr
    assert all("self.config.fp8 is not None" in line for line in proc.stdout.splitlines())
    for index in ("warm", "cold"):
        if index == "cold":
            env = _index_env(tmp_path / "cold")
        done = subprocess.run(
            [*_cli(), "check", "--output-format", "json", wrapper],
            cwd=root, capture_output=True, text=True, timeout=1800, env=env,
        )  # fmt: skip
        rows = json.loads(done.stdout)
        assert {r["line"] for r in rows} == lines, done.stderr
        for row in rows:
            assert row["verdict"] == "conditional"
            assert any("self.config.fp8 is not None" in e["message"] for e in row["evidence"])


@pytest.mark.slow
@pytest.mark.realcode
def test_pre_commit_on_one_staged_wrapper_file_gives_the_project_verdict(tmp_path: Path) -> None:
    """``pre-commit run --files`` passes the one staged file; the hook judges it with the
    repository it is in: the three wrapper sites, conditional on FP8."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install .[test])")
    repo = tmp_path / "repo"
    shutil.copytree(_release("megatron-core-0.19.2") / "megatron", repo / "megatron")
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: te-microbatch-lint\n"
        "    name: te-microbatch-lint\n    entry: te-microbatch-lint check --force-exclude\n"
        "    language: system\n    types: [python]\n    require_serial: true\n",
        encoding="utf-8",
    )
    env = {
        **_index_env(tmp_path / "index"),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pc"),
        "PRE_COMMIT_COLOR": "never",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }  # fmt: skip
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        assert subprocess.run(command, cwd=repo, env=env, timeout=120).returncode == 0
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--files", EXT],
        cwd=repo, capture_output=True, text=True, timeout=1800, env=env,
    )  # fmt: skip
    found = {int(m["line"]) for m in map(_LOCATION.match, proc.stdout.splitlines()) if m}
    assert found == MEGATRON_FIX_LINES, proc.stdout + proc.stderr
    assert proc.returncode == 1
