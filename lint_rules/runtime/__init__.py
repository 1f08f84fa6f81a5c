"""Runtime side of te-microbatch-lint: what the linter's advice does to a training run.

- :mod:`lint_rules.runtime.monitor`: the runtime monitor (a TE module called twice per step, a
  flag re-armed mid-step, a stale FP8 weight cache). Its public names are re-exported here, so
  ``from lint_rules.runtime import MicrobatchMonitor`` works.
- :mod:`lint_rules.runtime.resume` (with :mod:`~lint_rules.runtime.snapshot`): the three-leg
  resume check, ``python -m lint_rules.runtime.resume`` / ``te-microbatch-resume-check``.
- :mod:`lint_rules.runtime.reference_te`: a pure-torch reference of TE's fused-wgrad and FP8
  weight-cache contract (not Transformer Engine), so the runtime suite runs on CPU.
- :mod:`lint_rules.runtime.shared_layer`: the suite's shared-layer model (package data in
  ``lint_rules/runtime/fixtures``), unguarded or after the codemod.
- :mod:`lint_rules.runtime.scenarios`: the scenarios, run on any backend;
  :mod:`lint_rules.runtime.gpu_check` compares the reference with real TE on a GPU.

Nothing here imports torch at import time (torch is imported when a monitor, model or scenario
is built), so ``lint_rules`` stays usable without torch.
"""

from lint_rules.runtime import monitor as _monitor
from lint_rules.runtime.monitor import *  # noqa: F403 - the monitor's public names, re-exported

__all__ = list(_monitor.__all__)
