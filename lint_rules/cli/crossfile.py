"""Moved to the analysis core: ``lint_rules.analysis.run`` (the run over a project) and
``lint_rules.analysis.runindex`` (its index); kept for imports of the old names."""

from lint_rules.analysis.run import run_crossfile
from lint_rules.analysis.runindex import Modules, build_index, needed, reaches

__all__ = ["Modules", "build_index", "needed", "reaches", "run_crossfile"]
