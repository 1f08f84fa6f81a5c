"""Moved to the analysis core: ``lint_rules.analysis.run`` (the run over a project, with its
index from ``lint_rules.analysis.runindex``). This name is that module itself, so that old
imports and settings of its switches (``crossfile.REJUDGE``) still reach it."""

import sys

from lint_rules.analysis import run as _run

sys.modules[__name__] = _run
