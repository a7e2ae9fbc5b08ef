"""NeutronPartitioner: which edge nodes the NPU runs, driven by the operator registry, with reasons."""

from .partitioner import NeutronPartitioner
from .support import Rejection

__all__ = ["NeutronPartitioner", "Rejection"]
