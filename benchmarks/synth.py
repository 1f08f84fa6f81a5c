"""Deterministic synthetic source trees for the scaling benchmark.

A tree holds ``chunks`` folders of 1,000 files each (``chunk_00/pkg_0/mod_000.py`` ...), so that
the N-file tree is simply the first N/1000 chunk folders passed as separate paths: one tree on
disk serves every size. ``fraction`` of the files (exactly every ``1/fraction``-th file) mention
``is_first_microbatch`` with realistic Transformer Engine code: TE imports in the spellings
seen in public code, a module class holding ``self.fc = te.Linear(...)``, calls with a tracking
guard, parameter forwarding, ``None``, non-TE ``forward_step(..., is_first_microbatch=...)``
calls, and a known number of unguarded calls (the expected TEM001/TEM002 findings, recorded in
the manifest). The other files are plain, realistic Python (dataclasses, torch modules,
loops, comprehensions, try/except, f-strings, type hints).

Generated once per (version, fraction, chunks) and cached; ``manifest.json`` marks completion.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

GENERATOR_VERSION = 3
FILES_PER_CHUNK = 1000
FILES_PER_PKG = 100

_WORDS = tuple(
    " ".join(
        (
            "hidden attention router expert token batch layer weight bias scale shard rank grad",
            "buffer cache window stride offset head group bucket stage block embed proj norm",
            "logits mask seq kv query value key step micro tensor param optim sched loss",
        )
    ).split()
)


def _ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(parts))


def _camel(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(_WORDS).capitalize() for _ in range(parts))


def _header(rng: random.Random, te: bool, te_style: int) -> list[str]:
    lines = [
        f'"""{_camel(rng)} utilities for the {_ident(rng)} pipeline.',
        "",
        f"Handles {_ident(rng, 1)} and {_ident(rng, 1)} bookkeeping for distributed training.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "import math",
        "from dataclasses import dataclass, field",
        "from typing import Any, Optional",
        "",
        "import torch",
        "import torch.nn.functional as F",
    ]
    if te:
        lines += [
            [
                "import transformer_engine.pytorch as te",
                "from transformer_engine.pytorch import LayerNormLinear, Linear",
                "import transformer_engine as te",
            ][te_style],
            "",
            "from megatron.core.pipeline_parallel.schedules import forward_step",
            "from megatron.core.transformer.module import is_first_microbatch_tracked",
        ]
    lines += ["", "logger = logging.getLogger(__name__)", "", ""]
    return lines


def _dataclass_block(rng: random.Random) -> list[str]:
    name = _camel(rng) + "Config"
    fields = [f"    {_ident(rng)}: int = {rng.randint(1, 4096)}" for _ in range(rng.randint(3, 7))]
    return [
        "@dataclass",
        f"class {name}:",
        f'    """Configuration of the {_ident(rng, 1)} stage."""',
        "",
        *dict.fromkeys(fields),
        f"    {_ident(rng)}: float = {rng.random():.4f}",
        "    names: list[str] = field(default_factory=list)",
        "",
        "    def validate(self) -> None:",
        "        if not self.names:",
        f'            raise ValueError("{name} needs at least one name")',
        "",
        "",
    ]


def _function_block(rng: random.Random) -> list[str]:
    fn, arg, acc = _ident(rng), _ident(rng, 1), _ident(rng, 1) + "_total"
    return [
        f"def {fn}({arg}: list[int], factor: float = 1.0) -> dict[str, float]:",
        f'    """Reduce ``{arg}`` into summary statistics."""',
        f"    {acc} = 0.0",
        "    out: dict[str, float] = {}",
        f"    for index, item in enumerate({arg}):",
        "        if item < 0:",
        "            continue",
        "        elif item % 2 == 0:",
        f"            {acc} += math.sqrt(item) * factor",
        "        else:",
        f"            {acc} -= item / (index + 1)",
        f'    out["mean"] = {acc} / max(len({arg}), 1)',
        f'    out["max"] = float(max({arg}, default=0))',
        f"    evens = [x for x in {arg} if x % 2 == 0]",
        '    out["evens"] = float(len(evens))',
        f'    logger.debug("%s: %d items", "{fn}", len({arg}))',
        "    return out",
        "",
        "",
    ]


def _io_block(rng: random.Random) -> list[str]:
    fn = "load_" + _ident(rng)
    return [
        f"def {fn}(path: str, default: Optional[dict[str, Any]] = None) -> dict[str, Any]:",
        "    try:",
        '        with open(path, encoding="utf-8") as handle:',
        "            text = handle.read()",
        "    except FileNotFoundError:",
        "        return dict(default or {})",
        "    except OSError as error:",
        f'        logger.warning(f"{fn}: cannot read {{path}}: {{error}}")',
        "        raise",
        "    result: dict[str, Any] = {}",
        "    for line in text.splitlines():",
        '        key, _, value = line.partition("=")',
        "        if key.strip():",
        "            result[key.strip()] = value.strip()",
        "    return result",
        "",
        "",
    ]


def _torch_module_block(rng: random.Random) -> list[str]:
    name = _camel(rng) + "Module"
    a, b = _ident(rng, 1), _ident(rng, 1) + "_out"
    return [
        f"class {name}(torch.nn.Module):",
        f'    """Plain PyTorch {_ident(rng, 1)} module."""',
        "",
        f"    def __init__(self, {a}: int, {b}: int, dropout: float = 0.1) -> None:",
        "        super().__init__()",
        f"        self.proj = torch.nn.Linear({a}, {b})",
        f"        self.norm = torch.nn.LayerNorm({b})",
        "        self.dropout = torch.nn.Dropout(dropout)",
        "",
        "    def forward(",
        "        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None",
        "    ) -> torch.Tensor:",
        "        h = self.proj(x)",
        "        if mask is not None:",
        "            h = h.masked_fill(mask, 0.0)",
        "        h = F.gelu(self.norm(h))",
        "        return self.dropout(h)",
        "",
        "",
    ]


_PLAIN_BLOCKS = (_dataclass_block, _function_block, _io_block, _torch_module_block)


def _te_block(rng: random.Random, te_style: int, n_bad: int, positional: bool) -> list[str]:
    """A TE module class; ``n_bad`` unguarded keyword calls (TEM001), one positional (TEM002)."""
    name = _camel(rng) + "Block"
    linear = ["te.Linear", "Linear", "te.pytorch.Linear"][te_style]
    lnl = ["te.LayerNormLinear", "LayerNormLinear", "te.pytorch.LayerNormLinear"][te_style]
    lines = [
        f"class {name}(torch.nn.Module):",
        f'    """Transformer Engine {_ident(rng, 1)} block."""',
        "",
        "    def __init__(self, config: Any, hidden: int) -> None:",
        "        super().__init__()",
        "        self.config = config",
        f"        self.fc1 = {lnl}(hidden, 4 * hidden, bias=True)",
        f"        self.fc2 = {linear}(4 * hidden, hidden)",
        f"        self.fc3 = {linear}(hidden, hidden)",
    ]
    for i in range(n_bad):
        lines.append(f"        self.out_proj{i} = {linear}(hidden, hidden)")
    if positional:
        lines.append(f"        self.pos_proj = {lnl}(hidden, hidden)")
    lines += [
        "        self.is_first_microbatch = True",
        "",
        "    def forward(self, x: torch.Tensor, is_first_microbatch: Optional[bool] = None):",
        "        # forwarding the caller's flag is the caller's responsibility",
        "        h = self.fc1(x, is_first_microbatch=is_first_microbatch)",
        "        flag = (",
        "            self.is_first_microbatch",
        "            if is_first_microbatch_tracked(self.config)",
        "            else None",
        "        )",
        "        h = self.fc2(F.gelu(h), is_first_microbatch=flag)",
        "        h = self.fc3(h, is_first_microbatch=None)",
    ]
    for i in range(n_bad):
        lines.append(
            f"        h = self.out_proj{i}(h, is_first_microbatch=self.is_first_microbatch)"
        )
    if positional:
        lines.append("        h = self.pos_proj(h, self.is_first_microbatch)")
    lines += [
        "        self.is_first_microbatch = False",
        "        return h",
        "",
        "",
        f"def run_{_ident(rng)}(model: Any, batches: list[Any]) -> list[Any]:",
        "    losses = []",
        "    for index, batch in enumerate(batches):",
        "        losses.append(forward_step(model, batch, is_first_microbatch=index == 0))",
        "    return losses",
        "",
        "",
    ]
    return lines


def generate_file(index: int, relevant: bool, seed: int = 0) -> tuple[str, dict[str, int]]:
    """Source text of file ``index`` and its expected findings by code."""
    rng = random.Random(seed * 1_000_003 + index)
    te_style = rng.randrange(3)
    lines = _header(rng, relevant, te_style)
    expected: dict[str, int] = {}
    target = rng.randint(40, 160)
    te_at = rng.randint(0, 2) if relevant else -1
    block_index = 0
    while len(lines) < target or block_index <= te_at:
        if block_index == te_at:
            n_bad = rng.choice((0, 1, 1, 2))
            positional = rng.random() < 0.25
            lines += _te_block(rng, te_style, n_bad, positional)
            if n_bad:
                expected["TEM001"] = expected.get("TEM001", 0) + n_bad
            if positional:
                expected["TEM002"] = expected.get("TEM002", 0) + 1
        else:
            lines += rng.choice(_PLAIN_BLOCKS)(rng)
        block_index += 1
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n", expected


def _relevant(index: int, fraction: float) -> bool:
    stride = max(1, round(1 / fraction))
    return index % stride == 0


def tree_dir(cache: Path, fraction: float, chunks: int) -> Path:
    pct = f"{fraction * 100:g}".replace(".", "p")
    return cache / "synth" / f"v{GENERATOR_VERSION}-{pct}pct-{chunks * FILES_PER_CHUNK}"


def ensure_tree(cache: Path, fraction: float, chunks: int, seed: int = 0) -> tuple[Path, dict]:
    """Create (once) and return ``(root, manifest)`` for the tree; chunk i is ``root/chunk_ii``."""
    root = tree_dir(cache, fraction, chunks)
    manifest_path = root / "manifest.json"
    if manifest_path.is_file():
        return root, json.loads(manifest_path.read_text(encoding="utf-8"))
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    chunk_stats = []
    try:
        for chunk in range(chunks):
            n_lines = n_bytes = n_relevant = 0
            expected: dict[str, int] = {}
            for local in range(FILES_PER_CHUNK):
                index = chunk * FILES_PER_CHUNK + local
                relevant = _relevant(index, fraction)
                text, found = generate_file(index, relevant, seed)
                path = (
                    tmp
                    / f"chunk_{chunk:02d}"
                    / f"pkg_{local // FILES_PER_PKG}"
                    / f"mod_{local % FILES_PER_PKG:03d}.py"
                )
                path.parent.mkdir(parents=True, exist_ok=True)
                data = text.encode("utf-8")
                path.write_bytes(data)
                n_lines += text.count("\n")
                n_bytes += len(data)
                n_relevant += relevant
                for code, count in found.items():
                    expected[code] = expected.get(code, 0) + count
            for pkg in range(FILES_PER_CHUNK // FILES_PER_PKG):
                (tmp / f"chunk_{chunk:02d}" / f"pkg_{pkg}" / "__init__.py").write_bytes(b"")
            chunk_stats.append(
                {
                    "chunk": f"chunk_{chunk:02d}",
                    "files": FILES_PER_CHUNK + FILES_PER_CHUNK // FILES_PER_PKG,
                    "lines": n_lines,
                    "bytes": n_bytes,
                    "relevant_files": n_relevant,
                    "expected": expected,
                }
            )
        manifest = {
            "generator_version": GENERATOR_VERSION,
            "fraction": fraction,
            "seed": seed,
            "chunks": chunk_stats,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root, manifest


def subset(root: Path, manifest: dict, n_files: int) -> tuple[list[str], dict]:
    """Chunk folder names (relative to ``root``) making an ``n_files`` tree, and its totals."""
    n_chunks = max(1, n_files // FILES_PER_CHUNK)
    chunks = manifest["chunks"][:n_chunks]
    if len(chunks) < n_chunks:
        raise ValueError(f"{root} has only {len(manifest['chunks'])} chunks, need {n_chunks}")
    expected: dict[str, int] = {}
    for c in chunks:
        for code, count in c["expected"].items():
            expected[code] = expected.get(code, 0) + count
    totals = {
        "files": sum(c["files"] for c in chunks),
        "py_files_generated": n_chunks * FILES_PER_CHUNK,
        "lines": sum(c["lines"] for c in chunks),
        "bytes": sum(c["bytes"] for c in chunks),
        "relevant_files": sum(c["relevant_files"] for c in chunks),
        "expected": expected,
    }
    return [c["chunk"] for c in chunks], totals
