"""Which tiers a pytest run leaves out (``conftest.py`` applies it; ``test_tiers`` tests it)."""

from __future__ import annotations

import pytest


def leaves_out_long(config: pytest.Config) -> bool:
    """Plain ``pytest``: no ``--long``, no ``-m`` or ``-k``, and no path on the command line
    below the suite's folder (``pytest tests`` is plain ``pytest``)."""
    if config.getoption("--long") or config.option.markexpr or config.option.keyword:
        return False
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return True
    roots = {config.rootpath, config.rootpath / "tests"}
    here = config.invocation_params.dir
    return all((here / arg.split("::")[0]).resolve() in roots for arg in config.args)
