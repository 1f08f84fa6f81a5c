"""What ``fix`` would apply, counted the same in every face: ``check``'s findings keep a fix only
where ``fix`` would apply it, and ``fix``'s "M remaining" is recounted in the text it wrote."""

from __future__ import annotations

from lint_rules.settings import Settings

TYPE_CHECKING = False  # `typing` is not imported at run time (a warm `check` needs none of it)
if TYPE_CHECKING:
    from typing import Any


def only_applicable_fixes(text: str, findings: list, disable_noqa: bool) -> list:
    """The findings, with no fix where ``fix`` would not apply it (inside an f-string's ``=``
    debug text, a ``# noqa`` on a line the fix spans, comments it cannot keep, an overlap: the
    rules of ``fixing.plan_edits``), so that every face counts as ``fix`` does."""
    if not any(f.fix is not None for f in findings):
        return findings
    from lint_rules.fixing import plan_edits
    from lint_rules.slotted import replace

    fixable = [f for f in findings if f.fix is not None]
    _, _, _, skipped = plan_edits(text, fixable, disable_noqa)
    if not skipped:
        return findings
    dropped = {id(f) for f in skipped}
    return [replace(f, fix=None) if id(f) in dropped else f for f in findings]


def selected(findings: Any, settings: Settings | None) -> list:
    """A file's reported findings that ``settings`` select (``select``/``ignore``), each with
    no fix where its fix goes with a finding left out (``Reported.together``): ``fix`` applies
    such a fix only with all of its findings, so ``check`` does not count it as fixable."""
    if settings is None:
        return []
    kept = [f for f in findings if settings.reports(f.code)]
    if len(kept) == len(findings) or not any(f.together for f in kept):
        return kept
    present = {(f.code, f.line, f.column) for f in kept}
    if all(set(f.together) <= present for f in kept):
        return kept
    from lint_rules.slotted import replace

    return [
        f
        if set(f.together) <= present
        else replace(f, fixable=False, applicability=None, fix_message="", edits=())
        for f in kept
    ]


def left_after(text: str, settings: Settings, disable_noqa: bool, project: Any) -> tuple[str, ...]:
    """The codes ``check`` reports in the fixed text: ``fix``'s "M remaining", recounted."""
    from lint_rules.analysis import analyze_source
    from lint_rules.noqa import filter_noqa

    findings = analyze_source(text, settings, project=project)
    if findings:
        findings, _ = filter_noqa(findings, text, disable_noqa)
    return tuple(sorted(f.code for f in findings if settings.reports(f.code)))
