"""Moved to the analysis core: ``lint_rules.analysis.store`` (every face shares it)."""

import sys  # noqa: F401  # the store's interpreter (tests patch ``sys.version`` through it)

from lint_rules.analysis.store import ENV_DIR, ResultCache, code_hash, default_directory, open_cache

__all__ = ["ENV_DIR", "ResultCache", "code_hash", "default_directory", "open_cache"]
