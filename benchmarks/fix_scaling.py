"""Fix time against findings per file: applying edits must stay linear.

    python benchmarks/fix_scaling.py                     # 1000, 2000, 4000, 8000 findings
    python benchmarks/fix_scaling.py --findings 2000,16000

One generated module holds N methods that each pass ``is_first_microbatch=self.flag`` to a TE
module (N findings, N fixes). ``fixing.apply_edits`` is timed on the core's findings (the
analysis is timed apart), and the time per finding is printed for each N: a linear
implementation keeps it flat (a ratio near 1 between the largest and the smallest N), a
quadratic one doubles it with every doubling of N.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from lint_rules.analysis import analyze_source  # noqa: E402
from lint_rules.fixing import apply_edits  # noqa: E402

HEAD = "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
HEAD += "        self.fc = te.Linear(4, 4)\n        self.flag = True\n"
METHOD = "\n    def f{i}(self, x):\n        return self.fc(x, is_first_microbatch=self.flag)\n"


def module(findings: int) -> str:
    return HEAD + "".join(METHOD.format(i=i) for i in range(findings))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", default="1000,2000,4000,8000")
    args = parser.parse_args(argv)
    per = {}
    for count in [int(n) for n in args.findings.split(",")]:
        text = module(count)
        started = time.perf_counter()
        found = analyze_source(text)
        analysed = time.perf_counter() - started
        started = time.perf_counter()
        _, applied, _, _ = apply_edits(text, found)
        spent = time.perf_counter() - started
        assert len(applied) == count, (len(applied), count)
        per[count] = spent / count
        print(
            f"{count:7d} findings: analysis {analysed:6.2f} s, edits {spent:6.3f} s, "
            f"{per[count] * 1e6:7.1f} us per finding"
        )
    low, high = min(per), max(per)
    print(f"time per finding, {high} vs {low} findings: x{per[high] / per[low]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
