"""Forward-pass overhead of ``lint_rules.runtime.monitor.MicrobatchMonitor`` on a 100-module model.

The model is a chain of ``--modules`` small blocks whose ``forward`` takes
``is_first_microbatch`` (so every block, and the root, is watched). Each sample times one
grad-enabled forward (the monitor ignores no-grad forwards, so timing those would flatter it);
the flag is True on the first of ``--microbatches`` forwards and ``step()`` follows the last,
as in training. The two variants are timed in alternating blocks so that drift (turbo, other
load) hits both alike; the medians are compared.

    python benchmarks/monitor_overhead.py                      # JSON to stdout
    python benchmarks/monitor_overhead.py --out benchmarks/results/monitor_overhead.json

No pass/fail: the numbers are for the report (the README, "Runtime monitor"), not for CI.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def build_model(modules: int, width: int) -> Any:
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(width, width)

        def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
            return torch.relu(self.fc(x))

    class Chain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList(Block() for _ in range(modules))

        def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
            for block in self.blocks:
                x = block(x, is_first_microbatch=is_first_microbatch)
            return x

    return Chain()


def time_block(
    model: Any, x: Any, count: int, microbatches: int, mon: Any, start: int
) -> list[int]:
    """Time ``count`` forwards (ns each); ``start`` keeps the microbatch position across blocks."""
    samples = []
    clock = time.perf_counter_ns
    for i in range(start, start + count):
        flag = i % microbatches == 0
        t0 = clock()
        out = model(x, is_first_microbatch=flag)
        t1 = clock()
        samples.append(t1 - t0)
        del out
        if mon is not None and i % microbatches == microbatches - 1:
            mon.step()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2000, help="timed forwards per variant")
    parser.add_argument("--block", type=int, default=50, help="forwards per alternating block")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    import torch

    from lint_rules.runtime.monitor import MicrobatchMonitor

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    model = build_model(args.modules, args.width)
    x = torch.randn(args.batch, args.width)
    mon = MicrobatchMonitor(model, on_hazard="raise")

    time_block(model, x, args.warmup, args.microbatches, None, 0)
    with mon:
        watched = len(mon.watched)
        time_block(model, x, args.warmup, args.microbatches, mon, 0)

    def noop(module: Any, args: Any, kwargs: Any) -> None:
        return None

    def noop_hooks() -> list[Any]:
        """The floor: a no-op kwargs pre-hook on the same modules (torch's hook dispatch)."""
        return [m.register_forward_pre_hook(noop, with_kwargs=True) for m in mon.watched.values()]

    without: list[int] = []
    floor: list[int] = []
    with_monitor: list[int] = []
    done = 0
    while done < args.repeats:
        n = min(args.block, args.repeats - done)
        without += time_block(model, x, n, args.microbatches, None, done)
        handles = noop_hooks()
        floor += time_block(model, x, n, args.microbatches, None, done)
        for handle in handles:
            handle.remove()
        with mon:
            with_monitor += time_block(model, x, n, args.microbatches, mon, done)
        done += n
    assert mon.hazards == [], "the benchmark model must not trigger the monitor"

    base = statistics.median(without) / 1e3
    hooked = statistics.median(floor) / 1e3
    monitored = statistics.median(with_monitor) / 1e3
    calls = watched  # the blocks and the root, each called once per forward
    result = {
        "benchmark": "monitor_overhead",
        "modules": args.modules,
        "watched_modules": watched,
        "width": args.width,
        "batch": args.batch,
        "repeats_per_variant": args.repeats,
        "threads": args.threads,
        "forward_us_without_monitor": round(base, 2),
        "forward_us_with_monitor": round(monitored, 2),
        "ratio": round(monitored / base, 3),
        "overhead_us_per_forward": round(monitored - base, 2),
        "overhead_us_per_watched_call": round((monitored - base) / calls, 3),
        "forward_us_with_noop_hooks": round(hooked, 2),
        "noop_hook_overhead_us_per_call": round((hooked - base) / calls, 3),
        # On a loaded machine the upper samples are contention; the p10 ratio is steadier.
        "ratio_p10": round(_spread(with_monitor)[0] / _spread(without)[0], 3),
        "p10_p90_us_without": _spread(without),
        "p10_p90_us_noop_hooks": _spread(floor),
        "p10_p90_us_with": _spread(with_monitor),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


def _spread(samples: list[int]) -> list[float]:
    ordered = sorted(samples)
    return [
        round(ordered[len(ordered) // 10] / 1e3, 2),
        round(ordered[9 * len(ordered) // 10] / 1e3, 2),
    ]


if __name__ == "__main__":
    sys.exit(main())
