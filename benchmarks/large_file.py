"""One large file (default 50 MB): ``check`` and ``fix`` stay close to linear in its size.

    python benchmarks/large_file.py              # 50 MB
    python benchmarks/large_file.py --mb 200

The file is a long module docstring, many small functions and, at the end, one TE module with
one fixable finding. The script runs ``te-microbatch-lint check`` and ``fix`` on it in child
processes, checks that the finding is found at the right line and that ``fix`` changed only
the flag, and prints the CPU seconds of each beside those of ``ast.parse`` on the same text in
a child process, as a ratio (the parse is the floor any Python linter pays). It asserts no
time: on a shared machine the ratio is the figure to compare between two versions.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

GOOD = """\
import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(16, 16)
        self.flag = True

    def forward(self, x):
        y = self.fc(x, is_first_microbatch=self.flag)
        self.flag = False
        return y
"""
GOOD_LINE = 10


def build(size: int) -> tuple[str, int, int]:
    """(text, the finding's line, the docstring's length)."""
    filler = "    value = other_function(argument, 12345)  # padding comment\n"
    functions = "".join(
        f"def f{i}(argument):\n{filler * 3}    return value\n\n\n" for i in range(10_000)
    )
    doc_line = "Documentation line that goes on for a while, for padding purposes only.\n"
    doc = '"""' + doc_line * (max(0, size - len(functions)) // len(doc_line)) + '"""\n\n\n'
    text = doc + functions + GOOD
    return text, text.count("\n", 0, len(doc) + len(functions)) + GOOD_LINE, len(doc)


def child_cpu(argv: list[str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="file size in MB (default 50)")
    args = parser.parse_args()
    text, line, doc_len = build(int(args.mb * 1_000_000))
    command = [sys.executable, "-m", "lint_rules.cli"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "huge.py")
        path.write_text(text, encoding="utf-8")
        parse_s, _ = child_cpu(
            [sys.executable, "-c", f"import ast; ast.parse(open({str(path)!r}).read())"], folder
        )
        check_s, checked = child_cpu([*command, "check", "--no-cache", str(path)], folder)
        fix_s, fixed = child_cpu([*command, "fix", str(path)], folder)
        data = path.read_bytes()
    problems = []
    if checked.returncode != 1 or f":{line}:" not in checked.stdout:
        problems.append(f"check: exit {checked.returncode}, {checked.stdout[:200]!r}")
    if fixed.returncode != 0 or len(data) != len(text) - len("self.flag") + len("None"):
        problems.append(f"fix: exit {fixed.returncode}, {fixed.stderr[:200]!r}")
    if data[:doc_len] != text[:doc_len].encode():
        problems.append("fix: the docstring changed")
    size = len(text) / 1e6
    print(f"file: {size:.1f} MB, {text.count(os.linesep) or text.count(chr(10))} lines")
    print(f"ast.parse: {parse_s:6.2f} s CPU")
    print(f"check:     {check_s:6.2f} s CPU ({check_s / parse_s:.1f}x the parse)")
    print(f"fix:       {fix_s:6.2f} s CPU ({fix_s / parse_s:.1f}x the parse)")
    for problem in problems:
        print(f"WRONG: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
