"""Loading model state the runtime suite saved itself, on every TE release.

TE 2.18 and later refuse to load a module's pickled FP8 state (``DelayedScaling``'s scales and
amax history, the ``_extra_state`` entry of its ``state_dict``) unless
``NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1`` is set when it is loaded, since unpickling a file
from elsewhere can run code. TE offers no other way to load that state (``get_extra_state``
pickles it in every release up to main), and dropping it would change what a resume restores.
Every load of the suite's scenarios and of the resume harness goes through
:func:`load_own_state`: it sets the variable for the duration of that one ``load_state_dict``
(TE reads it at every load) and puts the environment back, so it allows only state that this
process made in memory, or that a leg of the same check wrote into its own work folder, and
never anything a user's code loads. :data:`LOADS` counts the loads that allowed it, for the
report.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from lint_rules.runtime.mutations import mutation

__all__ = ["LOADS", "UNSAFE_PICKLE_EXTRA_STATE_ENV", "load_own_state", "trusted_extra_state"]

UNSAFE_PICKLE_EXTRA_STATE_ENV = "NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE"
"""TE's opt-in (``transformer_engine/pytorch/_extra_state.py``), read at every load."""
LOADS = {"allowed": 0}


@contextlib.contextmanager
def trusted_extra_state() -> Iterator[None]:
    """``NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1`` inside the block, the environment as it was
    after it."""
    if mutation() == "extra-state-refused":  # the planted error: TE's default, refusing
        yield
        return
    before = os.environ.get(UNSAFE_PICKLE_EXTRA_STATE_ENV)
    os.environ[UNSAFE_PICKLE_EXTRA_STATE_ENV] = "1"
    LOADS["allowed"] += 1
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(UNSAFE_PICKLE_EXTRA_STATE_ENV, None)
        else:
            os.environ[UNSAFE_PICKLE_EXTRA_STATE_ENV] = before


def load_own_state(module: Any, state: Mapping[str, Any]) -> Any:
    """``module.load_state_dict(state)`` for state the suite saved itself (see module doc)."""
    with trusted_extra_state():
        return module.load_state_dict(state)
