"""Drop two import-time log lines that say nothing to our users (installed before torch/torchao are imported).

- torchao: "Failed to load ..._C_mxfp8...so / _C_cutlass_90a...so": CUDA-only kernels of the CPU wheel.
- torch pytree: "<enum ...> is an Enum subclass ... register_constant() ... deprecated": raised by torchao itself.
- FutureWarning "`isinstance(treespec, LeafSpec)` is deprecated": raised inside torch.export while copying.
Only these messages are filtered; every other record of those loggers, and every other warning, passes.

`message_only_root_logging`: ExecuTorch's partitioning calls the module-level `logging.debug(...)`, which runs
`logging.basicConfig()` when the root logger has no handler, after which every warning of ours reads
"WARNING:executorch_neutron:..."; where the application configured no logging, the root gets the handler basicConfig
would give it, printing the message alone (as Python prints a warning of an unconfigured program).
"""

from __future__ import annotations

import logging
import warnings

_NOISE = {
    "torchao": ("Failed to load ",),
    "torch.utils._pytree": ("is an Enum subclass and is now natively supported",),
}


class _DropKnownNoise(logging.Filter):
    def __init__(self, fragments: tuple[str, ...]):
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(f in message for f in self.fragments)


def message_only_root_logging() -> None:
    """See the module docstring: a no-op when the application configured logging (the root has a handler)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(format="%(message)s")


def install() -> None:
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                            category=FutureWarning)
    for name, fragments in _NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropKnownNoise) for f in logger.filters):
            logger.addFilter(_DropKnownNoise(fragments))
