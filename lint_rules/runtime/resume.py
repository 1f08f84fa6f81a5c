"""Three-leg resume check: does save-and-resume reproduce a straight-through run bit for bit?

Why three legs in separate processes: an unguarded ``is_first_microbatch`` flag is ``True`` once
per *process* (set in ``__init__``, cleared after the first forward, never re-armed without
FP8). Running the same training twice (an A/A check) replays the same first call in both runs
and cannot see anything. Only a run that is split by a process restart can: leg A trains
straight through N steps, leg B trains M < N steps and saves model, optimizer and RNG state,
leg C starts fresh, loads B's checkpoint and trains on to N. With a correct flag A and C are
byte-identical; with the unguarded flag C's first step after the resume (step M+1) overwrites a
gradient that A accumulated, and the per-step digests name that step.

Factory protocol (what you point the harness at)
------------------------------------------------
``--factory module.path:callable`` (or ``path/to/file.py:callable``; the file's folder is put on
``sys.path`` first so it can import its siblings). The harness calls::

    factory(device="cpu" | "cuda" | ..., seed=<int>, **factory_kwargs)

after seeding every RNG with ``seed`` and switching on deterministic algorithms. It returns an
object with these attributes (a :class:`ResumeSetup`, a ``SimpleNamespace``, a mapping with
these keys, or a tuple in this order):

- ``model``: a ``torch.nn.Module``; its ``state_dict()`` is saved and restored.
- ``optimizer``: a ``torch.optim.Optimizer``; its ``state_dict()`` is saved and restored.
- ``batch(step) -> batch``: the data of 1-based optimizer step ``step``. It must be a pure
  function of ``step`` (seed a local ``torch.Generator`` from it, or index a fixed data set):
  that is how a real data loader resumes from a sample offset, and it keeps the data out of
  the comparison.
- ``train_step(batch) -> loss`` (optional): one whole optimizer step, including gradient
  accumulation over microbatches, zeroing of ``main_grad`` buffers and ``optimizer.step()``.
  Default: ``optimizer.zero_grad(); model(batch).backward(); optimizer.step()``.
- ``tensors() -> dict[str, Tensor]`` (optional): what is hashed after every step and compared
  at the end. Default: :func:`state_tensors` (parameters, their ``main_grad`` buffers, buffers
  and optimizer state).

Everything else the legs need (RNG state of torch CPU/CUDA and Python's ``random``, the step
counter, the digests of the steps already run) is the harness's job.

Command line
------------
``python -m lint_rules.runtime.resume run --factory M:F --steps 6 --resume-at 3 --workdir DIR``
runs A, A' (a repeat of A), B and C as subprocesses and prints the report; exit status 0 when A
and C (and A and A') are byte-identical, 1 when they differ, 2 on errors. ``leg`` runs one leg
(what ``run`` spawns) and ``compare A.pt C.pt`` compares two leg outputs.

This module imports torch only inside functions: ``lint_rules`` must stay importable (and the
linter usable) without torch.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lint_rules.runtime.snapshot import (
    CompareReport,
    TensorDiff,
    bitwise_equal,
    compare_leg_outputs,
    compare_states,
    first_divergence,
    load_checkpoint,
    rng_state,
    rng_tensors,
    save_checkpoint,
    state_tensors,
    tensor_digests,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = [
    "DETERMINISM_ENV",
    "CompareReport",
    "LegError",
    "ResumeCheckResult",
    "ResumeSetup",
    "TensorDiff",
    "bitwise_equal",
    "build_setup",
    "compare_leg_outputs",
    "compare_states",
    "first_divergence",
    "load_checkpoint",
    "load_factory",
    "main",
    "make_deterministic",
    "run_leg",
    "run_resume_check",
    "save_checkpoint",
    "state_tensors",
    "tensor_digests",
    "train",
]

DETERMINISM_ENV: dict[str, str] = {
    # cuBLAS picks reduction-splitting workspaces nondeterministically unless this is set
    # before the CUDA context exists; torch.use_deterministic_algorithms insists on it.
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
    # TE's switch for its own nondeterministic kernels (for example in attention backward).
    "NVTE_ALLOW_NONDETERMINISTIC_ALGO": "0",
    "PYTHONHASHSEED": "0",
    # One intra-op thread (see make_deterministic); also keeps parallel legs from fighting
    # over a small CI runner's cores.
    "OMP_NUM_THREADS": "1",
}
"""Environment every leg runs with (set before torch initialises CUDA)."""


class LegError(RuntimeError):
    """A leg subprocess failed; the message carries its command and the tail of its output."""


# --------------------------------------------------------------------------------------------
# Set-up


def make_deterministic(
    seed: int,
    *,
    device: str = "cpu",
    threads: int | None = 1,
    deterministic_algorithms: bool = True,
) -> None:
    """Seed every RNG and ask torch for deterministic kernels.

    ``torch.use_deterministic_algorithms(True)`` makes torch raise on a kernel that has no
    deterministic implementation instead of silently varying between legs (those are
    accelerator kernels; ``device`` is recorded for the error message only). ``threads=1`` by
    default: CPU reductions can split work differently with another thread count, and the legs
    of one check must agree with each other, not be fast. Pass ``None`` to keep torch's
    default. (In torch 2.x both this call and the first ``torch.optim`` optimizer import
    ``torch._dynamo``, about two CPU seconds per leg; that is most of a tiny leg's cost.)
    """
    for key, value in DETERMINISM_ENV.items():
        os.environ.setdefault(key, value)
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if threads is not None:
        torch.set_num_threads(threads)
    if deterministic_algorithms and hasattr(torch, "use_deterministic_algorithms"):
        try:
            torch.use_deterministic_algorithms(True)
        except RuntimeError as error:  # pragma: no cover - depends on the torch build
            raise RuntimeError(f"cannot make {device} runs deterministic: {error}") from error
    if hasattr(torch.backends, "cudnn"):
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True


def load_factory(spec: str) -> Callable[..., Any]:
    """Resolve ``module.path:callable`` or ``path/to/file.py:callable`` to the callable."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ValueError(
            f"factory must look like 'module:callable' or 'file.py:callable': {spec!r}"
        )
    if _is_file_spec(target):
        path = Path(target).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"factory file not found: {path}")
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # let the file import its siblings
        name = f"_resume_check_factory_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is not callable")
    return obj


@dataclass
class ResumeSetup:
    """What a factory returns (see the module docstring for the protocol)."""

    model: Any
    optimizer: Any
    batch: Callable[[int], Any]
    train_step: Callable[[Any], Any] | None = None
    tensors: Callable[[], Mapping[str, torch.Tensor]] | None = None

    def run_step(self, batch: Any) -> Any:
        """One optimizer step with the factory's ``train_step`` or the plain default."""
        if self.train_step is not None:
            return self.train_step(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model(batch)
        loss.backward()
        self.optimizer.step()
        return loss

    def current_tensors(self) -> dict[str, torch.Tensor]:
        """The tensors hashed after each step and compared at the end."""
        if self.tensors is not None:
            return dict(self.tensors())
        return state_tensors(self.model, self.optimizer)


def _as_setup(obj: Any) -> ResumeSetup:
    """Accept the shapes the protocol allows and return a :class:`ResumeSetup`."""
    if isinstance(obj, ResumeSetup):
        return obj
    names = ("model", "optimizer", "batch", "train_step", "tensors")
    if isinstance(obj, Mapping):
        return ResumeSetup(**{k: obj[k] for k in names if k in obj})
    if isinstance(obj, tuple):
        return ResumeSetup(*obj)
    missing = [k for k in names[:3] if not hasattr(obj, k)]
    if missing:
        raise TypeError(
            f"factory result lacks {', '.join(missing)} (see lint_rules.runtime.resume's protocol)"
        )
    return ResumeSetup(**{k: getattr(obj, k) for k in names if getattr(obj, k, None) is not None})


def build_setup(
    factory: str | Callable[..., Any],
    *,
    device: str = "cpu",
    seed: int = 0,
    factory_kwargs: Mapping[str, Any] | None = None,
    threads: int | None = 1,
) -> ResumeSetup:
    """Make the process deterministic, then call the factory (a spec string or a callable)."""
    make_deterministic(seed, device=device, threads=threads)
    fn = load_factory(factory) if isinstance(factory, str) else factory
    return _as_setup(fn(device=device, seed=seed, **dict(factory_kwargs or {})))


def train(
    setup: ResumeSetup,
    first_step: int,
    last_step: int,
    digests: dict[int, dict[str, str]] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> dict[int, dict[str, str]]:
    """Run steps ``first_step..last_step`` (1-based, inclusive), recording a digest per step."""
    digests = {} if digests is None else digests
    for step in range(first_step, last_step + 1):
        setup.run_step(setup.batch(step))
        digests[step] = tensor_digests(setup.current_tensors())
        if on_step is not None:
            on_step(step)
    return digests


def run_leg(
    factory: str | Callable[..., Any],
    *,
    steps: int,
    out: str | Path,
    device: str = "cpu",
    seed: int = 0,
    factory_kwargs: Mapping[str, Any] | None = None,
    save_at: int | None = None,
    checkpoint: str | Path | None = None,
    resume_from: str | Path | None = None,
    threads: int | None = 1,
) -> dict[str, Any]:
    """One leg, in this process: build, optionally resume, train to ``steps``, save the result.

    ``save_at``/``checkpoint``: save a checkpoint after step ``save_at`` (leg B, with
    ``steps == save_at``). ``resume_from``: load that checkpoint first (leg C). The output file
    holds the final tensors, the RNG state and every step's digests.
    """
    import torch

    if (save_at is None) != (checkpoint is None):
        raise ValueError("save_at and checkpoint go together")
    setup = build_setup(
        factory, device=device, seed=seed, factory_kwargs=factory_kwargs, threads=threads
    )
    start = 0
    digests: dict[int, dict[str, str]] = {}
    if resume_from is not None:
        start, digests = load_checkpoint(resume_from, setup)

    def maybe_save(step: int) -> None:
        if save_at is not None and step == save_at and checkpoint is not None:
            save_checkpoint(checkpoint, setup, step, digests)

    train(setup, start + 1, steps, digests, maybe_save)
    result = {
        "step": steps,
        "resumed_from": start if resume_from is not None else None,
        "tensors": {k: v.detach().cpu().clone() for k, v in setup.current_tensors().items()},
        "rng": rng_tensors(rng_state()),
        "digests": digests,
    }
    torch.save(result, out)
    return result


# --------------------------------------------------------------------------------------------
# Orchestration (subprocesses)


@dataclass
class ResumeCheckResult:
    """Outcome of :func:`run_resume_check`: the reports and what each leg cost."""

    a_vs_c: CompareReport
    a_vs_a: CompareReport | None
    leg_seconds: dict[str, float] = field(default_factory=dict)
    workdir: Path | None = None

    @property
    def ok(self) -> bool:
        """A and C byte-identical (and A reproducible): resuming is exact."""
        return self.a_vs_c.identical and (self.a_vs_a is None or self.a_vs_a.identical)

    def __str__(self) -> str:
        parts = [str(self.a_vs_c)]
        if self.a_vs_a is not None:
            parts.append(str(self.a_vs_a))
        timing = ", ".join(f"{k} {v:.1f}s" for k, v in self.leg_seconds.items())
        parts.append(f"legs: {timing}")
        return "\n".join(parts)


def _is_file_spec(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def _absolute_spec(spec: str) -> str:
    """Make a ``file.py:callable`` spec absolute: the legs run with the work folder as cwd."""
    target, sep, attr = spec.rpartition(":")
    if sep and _is_file_spec(target):
        return f"{Path(target).resolve()}:{attr}"
    return spec


def _leg_argv(
    factory: str,
    steps: int,
    out: Path,
    device: str,
    seed: int,
    factory_kwargs: Mapping[str, Any],
    python: str,
    extra: Sequence[str] = (),
) -> list[str]:
    argv = [python, "-m", "lint_rules.runtime.resume", "leg", "--factory", factory]
    argv += ["--steps", str(steps), "--out", str(out), "--device", device, "--seed", str(seed)]
    for key, value in factory_kwargs.items():
        argv += ["--kwarg", f"{key}={json.dumps(value)}"]
    return argv + list(extra)


def start_leg(argv: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """A leg process, its output (stdout and stderr together) piped for ``finish_leg``."""
    return subprocess.Popen(
        argv,
        env=dict(env),
        cwd=str(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish_leg(name: str, proc: subprocess.Popen[str], timeout: float) -> None:
    """Wait for a leg process; a time-out or a failure is a ``LegError`` with its output's tail."""
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        raise LegError(
            f"leg {name} timed out after {timeout}s: {proc.args!r}\n{output[-3000:]}"
        ) from None
    if proc.returncode != 0:
        raise LegError(
            f"leg {name} failed with exit status {proc.returncode}: "
            f"{' '.join(map(str, proc.args))}\n{output[-3000:]}"  # type: ignore[arg-type]
        )


def run_resume_check(
    factory: str,
    *,
    steps: int,
    resume_at: int,
    workdir: str | Path,
    device: str = "cpu",
    seed: int = 0,
    factory_kwargs: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    repeat_a: bool = True,
    parallel: bool = True,
    timeout: float = 300.0,
    python: str = sys.executable,
) -> ResumeCheckResult:
    """Run legs A (and A'), B and C as subprocesses and compare them bitwise.

    ``factory`` is a spec string (it has to cross a process boundary). ``env`` is added to the
    legs' environment on top of :data:`DETERMINISM_ENV` (for example a backend switch).
    ``parallel`` starts A, A' and B together (C needs B's checkpoint), which matters on a
    2-core CI runner because each leg pays the torch import.
    """
    if not 0 < resume_at < steps:
        raise ValueError(f"need 0 < resume_at < steps, got resume_at={resume_at}, steps={steps}")
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    factory = _absolute_spec(factory)
    leg_env = {**os.environ, **DETERMINISM_ENV, **dict(env or {})}
    # The legs must import this package even from a source checkout that is not installed.
    package_root = str(Path(__file__).resolve().parents[2])
    leg_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, leg_env.get("PYTHONPATH", "")) if p
    )
    # Same working directory as the caller, so a `module:callable` factory that is importable
    # here (python -m puts the cwd on sys.path) is importable in the legs too.
    cwd = Path.cwd()
    kwargs = dict(factory_kwargs or {})
    ckpt = work / "B.ckpt.pt"
    argvs = {
        "A": _leg_argv(factory, steps, work / "A.pt", device, seed, kwargs, python),
        "B": _leg_argv(
            factory,
            resume_at,
            work / "B.pt",
            device,
            seed,
            kwargs,
            python,
            ["--save-at", str(resume_at), "--checkpoint", str(ckpt)],
        ),
    }
    if repeat_a:
        argvs["A'"] = _leg_argv(factory, steps, work / "A2.pt", device, seed, kwargs, python)
    c_argv = _leg_argv(
        factory, steps, work / "C.pt", device, seed, kwargs, python, ["--resume-from", str(ckpt)]
    )
    seconds: dict[str, float] = {}
    first_wave = ["A", "A'", "B"] if repeat_a else ["A", "B"]
    if parallel:
        started = time.perf_counter()
        procs = {name: start_leg(argvs[name], leg_env, cwd) for name in first_wave}
        for name in first_wave:
            finish_leg(name, procs[name], timeout)
            seconds[name] = time.perf_counter() - started
    else:
        for name in first_wave:
            started = time.perf_counter()
            finish_leg(name, start_leg(argvs[name], leg_env, cwd), timeout)
            seconds[name] = time.perf_counter() - started
    started = time.perf_counter()
    finish_leg("C", start_leg(c_argv, leg_env, cwd), timeout)
    seconds["C"] = time.perf_counter() - started
    a_vs_c = compare_leg_outputs(work / "A.pt", work / "C.pt", label_a="A", label_b="C")
    a_vs_a = (
        compare_leg_outputs(work / "A.pt", work / "A2.pt", label_a="A", label_b="A'")
        if repeat_a
        else None
    )
    return ResumeCheckResult(a_vs_c, a_vs_a, seconds, work)


# --------------------------------------------------------------------------------------------
# Command line


def _parse_kwargs(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are JSON when they parse as JSON, else plain strings."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--kwarg needs key=value, got {item!r}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lint_rules.runtime.resume",
        description="Train straight through vs save/resume in separate processes; compare bitwise.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--factory", required=True, help="module:callable or file.py:callable")
        p.add_argument("--kwarg", action="append", default=[], help="factory key=value (JSON)")
        p.add_argument("--device", default="cpu")
        p.add_argument("--seed", type=int, default=0)

    leg = sub.add_parser("leg", help="run one leg in this process")
    common(leg)
    leg.add_argument("--steps", type=int, required=True, help="train up to this step")
    leg.add_argument("--out", required=True, help="where to save final tensors and digests")
    leg.add_argument("--save-at", type=int, help="save a checkpoint after this step")
    leg.add_argument("--checkpoint", help="checkpoint path for --save-at")
    leg.add_argument("--resume-from", help="load this checkpoint first")

    run = sub.add_parser("run", help="run legs A, A', B, C as subprocesses and compare")
    common(run)
    run.add_argument("--steps", type=int, required=True, help="N: steps of legs A and C")
    run.add_argument("--resume-at", type=int, required=True, help="M: step B saves after")
    run.add_argument("--workdir", required=True)
    run.add_argument("--no-repeat", action="store_true", help="skip the A/A leg")
    run.add_argument("--serial", action="store_true", help="run the legs one at a time")
    run.add_argument("--env", action="append", default=[], help="KEY=VALUE for the legs")

    compare = sub.add_parser("compare", help="compare two leg outputs")
    compare.add_argument("a")
    compare.add_argument("b")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m lint_rules.runtime.resume``; see the module docstring."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "leg":
            run_leg(
                args.factory,
                steps=args.steps,
                out=args.out,
                device=args.device,
                seed=args.seed,
                factory_kwargs=_parse_kwargs(args.kwarg),
                save_at=args.save_at,
                checkpoint=args.checkpoint,
                resume_from=args.resume_from,
            )
            return 0
        if args.command == "compare":
            report = compare_leg_outputs(args.a, args.b, label_a=args.a, label_b=args.b)
            print(report)
            return 0 if report.identical else 1
        env = dict(item.split("=", 1) for item in args.env)
        result = run_resume_check(
            args.factory,
            steps=args.steps,
            resume_at=args.resume_at,
            workdir=args.workdir,
            device=args.device,
            seed=args.seed,
            factory_kwargs=_parse_kwargs(args.kwarg),
            env=env,
            repeat_a=not args.no_repeat,
            parallel=not args.serial,
        )
        print(result)
        return 0 if result.ok else 1
    except (LegError, ValueError, FileNotFoundError, ImportError, TypeError) as error:
        print(f"te-microbatch-resume-check: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
