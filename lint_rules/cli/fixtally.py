"""What ``fix`` did over all files: its summary line and its exit status (``command``)."""

from __future__ import annotations

from collections import Counter

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from lint_rules.cli.running import Outcome


class FixTally:
    """What ``fix`` did over all files, for its summary line and its exit status (a plain
    class: a dataclass costs ``check`` a millisecond at start-up)."""

    def __init__(self) -> None:
        self.changed = self.fixed = self.unchanged = self.unsafe = 0
        self.remaining: Counter[str] = Counter()
        self.added_imports: set[str] = set()
        self.refused = 0
        """Files given up on (one error line each, the file untouched): not parsed, a fix that
        would not verify, a write that failed."""
        self.errors = 0
        """Error lines of the run: the refused files and the paths that could not be read."""

    def add(self, outcome: Outcome) -> None:
        self.added_imports.update(outcome.added_imports)
        self.changed += outcome.changed
        self.unchanged += not outcome.changed
        self.fixed += outcome.fixed
        self.unsafe += outcome.unsafe
        self.remaining.update(outcome.remaining)

    def summary(self, verb: str) -> str:
        """``N fixed, M remaining`` as ruff says it, naming the codes left and why."""
        done = "fixed" if verb == "fixed" else "would be fixed"
        left = sum(self.remaining.values())
        refused = f", {self.refused} refused" if self.refused else ""
        text = (
            f"{self.fixed} {done}, {left} remaining "
            f"({count(self.changed, 'file')} changed, {self.unchanged} unchanged{refused})"
        )
        if left:
            codes = ", ".join(f"{code} x{n}" for code, n in sorted(self.remaining.items()))
            text += f": {codes}"
        hints = []
        if self.unsafe:
            hints.append(
                f"{count(self.unsafe, 'unsafe fix', 'unsafe fixes')} not applied "
                "(--unsafe-fixes applies them)"
            )
        if self.remaining.get("TEM004"):
            hints.append("TEM004 has no automatic fix")
        if self.errors:
            hints.append(
                f"{count(self.errors, 'error')} above"
                + (": a refused file is left untouched" if self.refused else "")
            )
        return text + "".join(f"; {hint}" for hint in hints)


def count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
