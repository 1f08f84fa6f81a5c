"""The fixed form: the flag reaches TE only where something re-arms it every step."""

import transformer_engine.pytorch as te

from megatron.core.transformer.module import is_first_microbatch_tracked


class Projection(te.Linear):
    def __init__(self, *args, config=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = config
        self.is_first_microbatch = True

    def forward(self, x):
        flag = self.is_first_microbatch if is_first_microbatch_tracked(self.config) else None
        out = super().forward(x, is_first_microbatch=flag)
        self.is_first_microbatch = False
        return out


class Wrapper:
    def __init__(self, hidden):
        self.proj = te.Linear(hidden, hidden)

    def forward(self, x, is_first_microbatch=None):
        # Forwarding a parameter is the caller's responsibility, not a finding here.
        return self.proj(x, is_first_microbatch=is_first_microbatch)
