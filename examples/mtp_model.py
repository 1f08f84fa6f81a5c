"""A multi-token-prediction head in the upstream style: one TE layer shared across depths.

The flag is process-local state, set True in ``__init__`` and False after the first forward.
Nothing re-arms it without FP8, so a run resumed from a checkpoint passes True once: the
second depth's gradient is accumulated, then overwritten by the first depth's.
"""

import torch
import transformer_engine.pytorch as te


class SharedDepthHead(torch.nn.Module):
    def __init__(self, config, hidden: int, depths: int = 2) -> None:
        super().__init__()
        self.config = config
        self.depths = depths
        self.layer = te.Linear(hidden, hidden, fuse_wgrad_accumulation=True)
        self.is_first_microbatch = True

    def forward(self, hidden_states: torch.Tensor) -> list[torch.Tensor]:
        outputs = []
        for _ in range(self.depths):
            hidden_states = self.layer(
                hidden_states,
                is_first_microbatch=self.is_first_microbatch,  # the flag nobody re-arms
            )
            outputs.append(hidden_states)
        self.is_first_microbatch = False
        return outputs
