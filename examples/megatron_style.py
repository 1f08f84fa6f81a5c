"""TE subclasses in the style of megatron-core 0.19.2 (megatron/core/extensions/transformer_engine.py).

The transpose-cache conditional is a caching switch, not a tracking guard: with it off, the
attribute still reaches TE and is True once after a resume.
"""

import transformer_engine as te

from megatron.core.pipeline_parallel.schedules import check_first_val_step, forward_step


class TELinear(te.pytorch.Linear):
    def __init__(self, *args, config=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = config
        self.disable_parameter_transpose_cache = False
        self.is_first_microbatch = True

    def forward(self, x):
        _is_first_microbatch = (
            None if self.disable_parameter_transpose_cache else self.is_first_microbatch
        )
        out = super().forward(x, is_first_microbatch=_is_first_microbatch)
        self.is_first_microbatch = False
        return out


class TEGroupedLinear(te.pytorch.GroupedLinear):
    def __init__(self, *args, config=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = config
        self.is_first_microbatch = True

    def forward(self, x, m_splits):
        out = super().forward(x, m_splits, self.is_first_microbatch)
        self.is_first_microbatch = False
        return out


def run_schedule(forward_step_func, data_iterator, model, num_microbatches, config):
    # Not a TE call: the schedule's own function takes a keyword of the same name.
    for i in range(num_microbatches):
        forward_step(
            forward_step_func,
            data_iterator,
            model,
            config,
            is_first_microbatch=check_first_val_step(True, False, i == 0),
        )
