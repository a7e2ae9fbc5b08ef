"""The neutral base partitioner (`BasePartitioner`): which edge nodes an NPU runs, driven by the operator registry,
with a reason for every node it refuses. Each back end subclasses it in its own folder."""

from .partitioner import BasePartitioner
from .support import Rejection

__all__ = ["BasePartitioner", "Rejection"]
