"""Fetch and cache the real-code corpora (PyPI wheels, unpacked) used by benchmarks and tests.

The corpora are never committed: each wheel is downloaded once with ``pip download`` (the
ordinary registry client, honouring the user's pip configuration), unpacked into
``<cache>/corpora/<name>-<version>/`` and reused. ``<cache>`` is ``$TE_LINT_CACHE`` or
``benchmarks`` in the linter's user cache directory, never inside this repository
(``cache_root``).

Importable from the test-suite (``from benchmarks.corpora import ...`` with the repository
root on ``sys.path``) and from ``benchmarks/run.py``. Standard library, and ``platformdirs``
(a dependency of the linter).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE_ENV = "TE_LINT_CACHE"
OFFLINE_ENV = "TE_LINT_OFFLINE"
"""Set (to anything) to never download: only already cached corpora are used."""
FLAG = "is_first_microbatch"


@dataclass(frozen=True)
class CorpusSpec:
    """One pinned wheel from the package registry."""

    name: str
    """Distribution name as pip spells it."""
    version: str
    python_version: str | None = None
    """Interpreter for ``pip download --python-version`` (the wheel need not install here)."""
    package_dir: str = ""
    """Directory inside the unpacked wheel that holds the Python package (for convenience)."""

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


MEGATRON_CORE = CorpusSpec("megatron-core", "0.19.2", python_version="3.12", package_dir="megatron")
"""megatron-core 0.19.2 needs Python >= 3.12 to install; its wheel downloads anywhere."""
TRANSFORMER_ENGINE = CorpusSpec("transformer-engine", "2.20.2", package_dir="transformer_engine")
"""transformer-engine 2.20.2 is a py3-none-any wheel carrying ``transformer_engine/pytorch``."""

CORPORA: dict[str, CorpusSpec] = {
    "megatron-core": MEGATRON_CORE,
    "transformer-engine": TRANSFORMER_ENGINE,
}

NO_TE: dict[str, CorpusSpec] = {
    "nemo_toolkit": CorpusSpec("nemo_toolkit", "1.23.0", package_dir="nemo"),
    "transformers": CorpusSpec("transformers", "5.23.0", package_dir="transformers"),
}
"""Large trees that never use TE (``benchmarks/goal.py``): where the command must cost least."""

# Released code the real-code acceptance tests pin (tests/test_real_code.py); not benchmarked.
# The megatron-core wheels of these releases are CPython 3.11 builds (any registry client on
# another interpreter still downloads them with --python-version).
ACCEPTANCE: dict[str, CorpusSpec] = {
    spec.key: spec
    for spec in (
        MEGATRON_CORE,
        CorpusSpec("megatron-core", "0.8.0", python_version="3.11", package_dir="megatron"),
        CorpusSpec("megatron-core", "0.10.0", python_version="3.11", package_dir="megatron"),
        CorpusSpec("megatron-core", "0.14.0", python_version="3.11", package_dir="megatron"),
        CorpusSpec("megatron-bridge", "0.6.2", python_version="3.12", package_dir="megatron"),
        CorpusSpec("nemo_toolkit", "1.23.0", package_dir="nemo"),
        CorpusSpec("transformer-engine", "1.13.0", package_dir="transformer_engine"),
        TRANSFORMER_ENGINE,
    )
}
"""Keyed ``name-version``."""


class CorpusUnavailable(RuntimeError):
    """The registry could not be reached (or the wheel could not be fetched) within the timeout."""


def cache_root() -> Path:
    """``$TE_LINT_CACHE`` if set, else ``benchmarks`` in the linter's user cache directory
    (``platformdirs``). Never inside this repository: a corpus there would be a file of this
    project, which every face judges with this project's settings and excludes."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir("te-microbatch-lint", appauthor=False)) / "benchmarks"


def corpus_dir(spec: CorpusSpec, cache: Path | None = None) -> Path:
    return (cache or cache_root()) / "corpora" / spec.key


def _marker(path: Path) -> Path:
    return path / ".te-lint-corpus.json"


def cached_corpus(spec: CorpusSpec, cache: Path | None = None) -> Path | None:
    """The unpacked corpus if a complete copy is cached, else None (never touches the network)."""
    target = corpus_dir(spec, cache)
    return target if _marker(target).is_file() else None


def download_wheel(
    spec: CorpusSpec, dest: Path, timeout: float = 120.0, socket_timeout: float = 15.0
) -> Path:
    """``pip download --no-deps`` the pinned wheel into ``dest``; raise CorpusUnavailable.

    ``timeout`` bounds the whole download, ``socket_timeout`` each connection attempt (pip's
    ``--timeout``; one retry), so an unreachable registry fails within seconds.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for existing in dest.glob("*.whl"):
        if _wheel_matches(existing, spec):
            return existing
    if os.environ.get(OFFLINE_ENV):
        raise CorpusUnavailable(
            f"{spec.requirement} is not cached and ${OFFLINE_ENV} forbids downloading it"
        )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--retries",
        "1",
        "--timeout",
        f"{socket_timeout:g}",
        "-d",
        str(dest),
        spec.requirement,
    ]
    if spec.python_version:
        cmd[5:5] = ["--python-version", spec.python_version]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise CorpusUnavailable(
            f"pip download {spec.requirement} timed out after {timeout:.0f}s"
        ) from error
    except OSError as error:
        raise CorpusUnavailable(f"cannot run pip: {error}") from error
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise CorpusUnavailable(
            f"pip download {spec.requirement} failed (exit {proc.returncode}): " + " | ".join(tail)
        )
    for wheel in dest.glob("*.whl"):
        if _wheel_matches(wheel, spec):
            return wheel
    raise CorpusUnavailable(f"pip download {spec.requirement} produced no matching wheel in {dest}")


def _wheel_matches(wheel: Path, spec: CorpusSpec) -> bool:
    dist, _, rest = wheel.name.partition("-")
    version = rest.partition("-")[0]
    normal = spec.name.replace("-", "_").lower()
    return dist.replace("-", "_").lower() == normal and version == spec.version


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_corpus(
    spec: CorpusSpec,
    cache: Path | None = None,
    timeout: float = 120.0,
    socket_timeout: float = 15.0,
) -> Path:
    """Return the unpacked corpus directory, downloading and unpacking it on first use.

    Safe against concurrent callers (unpacks into a temporary sibling, then renames).
    Raises :class:`CorpusUnavailable` when the registry cannot be reached.
    """
    cache = cache or cache_root()
    target = corpus_dir(spec, cache)
    if _marker(target).is_file():
        return target
    wheel = download_wheel(spec, cache / "wheels", timeout, socket_timeout)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.key}-", dir=target.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(tmp)
        info = {
            "name": spec.name,
            "version": spec.version,
            "wheel": wheel.name,
            "sha256": _sha256(wheel),
            "py_files": sum(1 for _ in tmp.rglob("*.py")),
        }
        _marker(tmp).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        if target.exists():  # a half-made copy from an interrupted run, or a concurrent winner
            if _marker(target).is_file():
                return target
            shutil.rmtree(target)
        try:
            tmp.rename(target)
        except OSError:
            if _marker(target).is_file():  # lost a race to another process: fine
                return target
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def corpus_info(path: Path) -> dict[str, object]:
    """What ``fetch_corpus`` recorded about the corpus (name, version, wheel, sha256)."""
    return json.loads(_marker(path).read_text(encoding="utf-8"))


def python_files(root: Path) -> list[Path]:
    """Every ``*.py`` file under ``root``, sorted (stable across runs)."""
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def count_lines(paths: list[Path]) -> tuple[int, int]:
    """(lines, bytes) over ``paths``: lines as ``wc -l`` counts them, plus a final partial line."""
    lines = size = 0
    for path in paths:
        data = path.read_bytes()
        size += len(data)
        lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return lines, size


if __name__ == "__main__":  # python benchmarks/corpora.py: fetch everything, print where it is
    for corpus in {**CORPORA, **ACCEPTANCE}.values():
        where = fetch_corpus(corpus)
        files = python_files(where)
        n_lines, n_bytes = count_lines(files)
        print(f"{corpus.key}: {where} ({len(files)} .py files, {n_lines} lines, {n_bytes} bytes)")
