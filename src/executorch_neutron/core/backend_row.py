"""`Backend`: one row of the back-end table (backends.py), the shape every back end's `plugin.py` fills in.

It lives below every back end so that each folder writes its own row; `backends.BACKENDS` gathers the rows and
`backends.register` adds one from outside the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..target import KIND_NAMES


@dataclass(frozen=True)
class Backend:
    kind: str  # the target kind it lowers (target.py)
    backend_id: str  # the delegate id in the .pte: the class name of its BackendDetails
    partitioner: type  # a subclass of partition.BasePartitioner
    view: Callable[..., dict]  # (blob, lowered-module metadata, reference) -> kind, one-line summary, I/O, formats, TFLite
    reference: Callable  # lowered module -> what the host runs for it (a host-reference payload), or None
    claims: Callable[[bytes], bool]  # is this delegate blob ours? (its own magic; exactly one row may say yes)
    host_blob: Callable[[bytes], bytes | None]  # host runtime: the payload it runs for a blob (None: device-only)
    on_load: Callable[..., None]  # host runtime: a program is being loaded (its pte.PteFile)
    device_only: str = ""  # host runtime: why a blob with no host payload cannot run, and what to do
    title: str = ""  # the report's headline name of the NPU (and its compiler); default "<npu> NPU"
    #: constraint profile -> what limited the partitioning, for the report's headline
    limits: Callable[[str], str] | None = None
    pte_tflite: Callable | None = None  # (blob, pte.PteFile) -> the partition's TFLite, or None (device only)
    layer_estimate: Callable | None = None  # (TFLite, spec) -> (per-layer estimate [{name, op, cycles}], unit)
    #: (partition TFLite or None, lowered-module metadata, target) -> the report's estimate of a partition:
    #: {"by": who estimates, "cycles", "inference_seconds", "core_clock_hz", "macs", "layers": [...], ...}
    partition_estimate: Callable | None = None
    #: (the partitions' estimates, (operator, output elements, MACs) of each CPU node, target) -> the report's one
    #: total estimate (the same keys, plus "npu_seconds" / "cpu_seconds" where the back end estimates the CPU part)
    estimate_total: Callable | None = None
    estimate_notes: Callable | None = None  # (target, total estimate) -> the sentences printed under the estimate
    #: (partition TFLite read from a .pte, its compile spec) -> that partition's estimate, as `partition_estimate`
    #: gave it at lowering (`report X.pte` estimates from the file alone)
    pte_estimate: Callable | None = None
    #: lowered-module metadata -> the back end's section of a partition in the report ({key: JSON value})
    section: Callable | None = None
    #: (blob, compile spec, partition TFLite or None, partition name) -> the memory its payload needs on the device
    #: beside the .pte (core.memory.Block lines: NPU scratch, ... as the back end's compiler states them)
    memory: Callable | None = None
    #: compile spec -> {"program": where the .pte is stored, "working": where ExecuTorch's buffers live}
    placement: Callable | None = None
    #: (blob, the .pte's named data by key) -> what compiled the payload (tool and version), or None
    compiled_by: Callable | None = None
    #: its own section of SUPPORTED_OPS.md (Markdown lines: its limits, which the main table then leaves out), or None
    supported_ops: Callable[[], list[str]] | None = None
    #: partition tag -> the files its preprocess may write into intermediates_dir beside `<tag>.tflite`
    intermediates: Callable[[str], tuple[str, ...]] = lambda tag: ()

    @property
    def npu(self) -> str:
        """How reports, reasons and errors name the NPU (target.KIND_NAMES, its one owner)."""
        return KIND_NAMES[self.kind]

    @property
    def headline(self) -> str:
        return self.title or f"{self.npu} NPU"
