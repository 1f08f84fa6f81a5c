"""Moved to ``lint_rules.analysis.reported`` (the core builds every face's findings)."""

from lint_rules.analysis.reported import FIX_MESSAGE, reported_findings

__all__ = ["FIX_MESSAGE", "reported_findings"]
