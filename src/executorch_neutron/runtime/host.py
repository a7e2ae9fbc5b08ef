"""Run a .pte on a Linux host: the stock ExecuTorch runtime plus our host back end.

Non-delegated int8 kernels (quantize/dequantize, ...) come from `executorch.kernels.quantized`, imported before
any program is loaded; the host back end is registered under every delegate id of backends.BACKENDS before the
program is loaded, so every delegate call of ours in the file executes (host-reference payloads in LiteRT). A failing delegate call surfaces as a
`NeutronRuntimeError` carrying the backend's message.

A program lowered with quantized I/O takes int8 (int16) inputs and returns int8 (int16) outputs. Given int8
inputs, it is run as it is. Given float inputs, it is run as its float model would be (so that `compare`,
`evaluate` and any caller of a float .pte get numbers of the same kind): each float input is quantized with the
qparams the .pte stores for it (`pte.io_qparams`, as PyTorch's quantize_per_tensor does it) and the outputs are
dequantized with theirs, with a log line saying so.

Calls into ExecuTorch's Python bindings are serialized by one process-wide lock: the bindings swap the C++
`std::cout`/`std::cerr` buffers for Python-backed ones around each call (pybind11's stream redirection), and two
threads doing so at once leave a dangling buffer that crashes the process at exit.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import torch

from ..backends import BACKENDS
from ..core.atomic import replacing
from ..pte import IOQParams, inspect_pte, io_qparams
from . import bridge
from .dtypes import torch_dtype
from .errors import NeutronRuntimeError
from .validate import check_program

log = logging.getLogger("executorch_neutron")
_BINDINGS = threading.RLock()  # see the module docstring


def _runtime():
    import executorch.kernels.quantized  # noqa: F401 - registers the quantized kernels (must precede loading)
    from executorch.runtime import Runtime

    bridge.ensure_registered()
    return Runtime.get()


def _fail(stage: str, exc: Exception) -> NeutronRuntimeError:
    message = bridge.last_error()
    bridge.clear_error()
    if message:
        return NeutronRuntimeError(message)
    return NeutronRuntimeError(f"ExecuTorch could not {stage}: {exc}")


class HostProgram:
    """A loaded .pte whose methods can be executed repeatedly.

    etdump=True records ExecuTorch profiling events (ETDump) for every execution; `write_etdump(path)` saves them
    for ExecuTorch's Inspector (see `executorch_neutron.profiling`).
    """

    def __init__(self, pte: str | Path | bytes, etdump: bool = False):
        runtime = _runtime()
        if not isinstance(pte, (bytes, bytearray, memoryview)) and not Path(pte).is_file():
            raise NeutronRuntimeError(f"no .pte file at {pte}")
        # what would abort the process inside ExecuTorch, or fail there with an error code only, is refused here
        pte_file = checked(pte)
        self._dim_orders = {plan.name: [tuple(getattr(plan.values[i].val, "dim_order", None) or ()) for i in plan.inputs]
                            for plan in pte_file.program.execution_plan}
        for backend in BACKENDS.values():  # e.g. the back ends that run a reference TFLite record it here
            backend.on_load(pte_file)
        bridge.clear_error()
        try:
            with _BINDINGS:
                self._program = runtime.load_program(pte_file.data, enable_etdump=etdump)
        except RuntimeError as exc:
            raise _fail("load the program (is it a valid .pte?)", exc) from exc
        self._pte = pte_file
        self._io_qparams = io_qparams(pte_file.constants())
        self._methods: dict = {}
        self._etdump = etdump

    def write_etdump(self, path: str | Path) -> Path:
        """Save the ETDump of the executions so far (load with `executorch.devtools.Inspector`)."""
        if not self._etdump:
            raise NeutronRuntimeError("this program was loaded without etdump=True: nothing was recorded")
        with replacing(path) as tmp:
            with _BINDINGS:
                self._program.write_etdump_result_to_file(str(tmp), None)
        return Path(path)

    @property
    def method_names(self) -> set[str]:
        return set(self._program.method_names)

    def _method(self, name: str):
        if name not in self._methods:
            if name not in self._program.method_names:
                raise NeutronRuntimeError(f"the program has no method {name!r}; it has {sorted(self._program.method_names)}")
            bridge.clear_error()
            try:
                with _BINDINGS:
                    self._methods[name] = self._program.load_method(name)
            except RuntimeError as exc:
                _check_cortex_m_kernels(self._pte, name)
                raise _fail(f"load method {name!r}", exc) from exc
        return self._methods[name]

    def load_method(self, method: str = "forward") -> None:
        """Load `method` now: its load errors (a missing kernel, an unregistered delegate) are raised here instead
        of at the first execute."""
        self._method(method)

    def quantized_io(self, method: str = "forward") -> list[IOQParams]:
        """The qparams of `method`'s quantized inputs and outputs (empty: its I/O is not quantized)."""
        return list(self._io_qparams.get(method, []))

    def quantize_inputs(self, inputs: Sequence[torch.Tensor], method: str = "forward") -> tuple[list, bool]:
        """(`inputs` with every float tensor given for a quantized input quantized with that input's qparams,
        whether any was)."""
        return quantize_inputs(inputs, self.quantized_io(method))

    def dequantize_outputs(self, outputs: Sequence[torch.Tensor], method: str = "forward") -> list[torch.Tensor]:
        """`outputs` with every quantized output dequantized with its qparams."""
        return dequantize_outputs(outputs, self.quantized_io(method))

    def execute(self, inputs: Sequence[torch.Tensor], method: str = "forward") -> list[torch.Tensor]:
        """Run `method`; a quantized-I/O program given float inputs returns float outputs (module docstring)."""
        m = self._method(method)
        with _BINDINGS:
            meta = m.metadata
        inputs, from_float = self.quantize_inputs(inputs, method)
        _check_inputs(meta, list(inputs))
        _warn_non_finite(list(inputs))
        orders = self._dim_orders.get(method, [])
        inputs = [_in_dim_order(x, orders[i] if i < len(orders) else ()) for i, x in enumerate(inputs)]
        bridge.clear_error()
        try:
            with _BINDINGS:
                outputs = m.execute(list(inputs))
        except RuntimeError as exc:
            raise _fail(f"execute method {method!r}", exc) from exc
        if from_float:
            log.info("outputs dequantized with the program's qparams (float inputs were given)")
            return self.dequantize_outputs(outputs, method)
        return list(outputs)


def quantize_inputs(inputs: Sequence, qparams: Sequence[IOQParams]) -> tuple[list, bool]:
    """(`inputs` with every float tensor given for a quantized input quantized with that input's qparams (`qparams`:
    a method's `pte.io_qparams`), whether any was): for the host run and a board run alike."""
    inputs, any_float = list(inputs), False
    for q in qparams:
        x = inputs[q.index] if q.side == "input" and q.index < len(inputs) else None
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            inputs[q.index], any_float = quantize(x, q), True
            log.info("input %d is float: quantized to %s with the program's scale %.6g and zero point %d",
                     q.index, q.dtype, q.scale, q.zero_point)
    return inputs, any_float


def dequantize_outputs(outputs: Sequence[torch.Tensor], qparams: Sequence[IOQParams]) -> list[torch.Tensor]:
    """`outputs` with every quantized output dequantized with its qparams (a method's `pte.io_qparams`)."""
    outputs = list(outputs)
    for q in qparams:
        if q.side == "output" and q.index < len(outputs):
            outputs[q.index] = dequantize(outputs[q.index], q)
    return outputs


def quantize(x: torch.Tensor, q: IOQParams) -> torch.Tensor:
    """`x` quantized as PyTorch's quantize_per_tensor does it (the op the program's input quantize node was)."""
    from torch.ao.quantization.fx import _decomposed  # noqa: F401 - registers quantized_decomposed

    dtype = getattr(torch, q.dtype)
    return torch.ops.quantized_decomposed.quantize_per_tensor.default(x.float(), q.scale, q.zero_point, q.qmin,
                                                                      q.qmax, dtype)


def dequantize(q_tensor: torch.Tensor, q: IOQParams) -> torch.Tensor:
    """A quantized output as float, as PyTorch's dequantize_per_tensor does it."""
    from torch.ao.quantization.fx import _decomposed  # noqa: F401 - registers quantized_decomposed

    return torch.ops.quantized_decomposed.dequantize_per_tensor.default(q_tensor, q.scale, q.zero_point, q.qmin,
                                                                        q.qmax, getattr(torch, q.dtype))


def _check_cortex_m_kernels(pte, method: str) -> None:
    """Name the cortex_m::* operators of `method` that the host library has no kernel for (a load failure)."""
    try:
        used = next(m.cpu_kernels for m in inspect_pte(pte).methods if m.name == method)
    except Exception:  # noqa: BLE001 - a file we cannot inspect: the runtime's own error follows
        return
    missing = sorted(op for op in used if op.startswith("cortex_m::") and op not in bridge.cortex_m_kernels())
    if missing:
        raise NeutronRuntimeError(
            f"no host kernel for {', '.join(missing)} (ExecuTorch Cortex-M backend operators in method {method!r}); "
            f"the host runtime implements {', '.join(sorted(bridge.cortex_m_kernels()))}. Lower for target "
            f"'imxrt700' to keep these ops as portable kernels, or run the .pte on the device")


def _check_inputs(meta, inputs: list) -> None:
    """Say precisely what is wrong with the inputs (ExecuTorch itself only returns an error code)."""
    if len(inputs) != meta.num_inputs():
        raise NeutronRuntimeError(f"method {meta.name()!r} takes {meta.num_inputs()} inputs, got {len(inputs)}")
    for i, value in enumerate(inputs):
        try:
            info = meta.input_tensor_meta(i)
        except (RuntimeError, ValueError, IndexError):
            continue  # not a tensor input
        if not isinstance(value, torch.Tensor):
            raise NeutronRuntimeError(f"input {i} must be a tensor, got {type(value).__name__}")
        sizes, dtype = tuple(info.sizes()), torch_dtype(int(info.dtype()))
        if tuple(value.shape) != sizes or (dtype is not None and value.dtype != dtype):
            raise NeutronRuntimeError(
                f"input {i} is {value.dtype}{list(value.shape)} but the program was exported for "
                f"{dtype}{list(sizes)}; pass inputs with the exported shapes and dtypes"
            )


def _in_dim_order(x, order: tuple):
    """`x` with the memory layout (dim order) the program's input expects: the runtime reads the storage as is, so
    a channels_last or otherwise strided tensor would be read as the wrong values."""
    if not isinstance(x, torch.Tensor) or len(order) != x.dim():
        return x
    if order == tuple(range(x.dim())):
        return x.contiguous()
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return x.permute(order).contiguous().permute(inverse)


def _warn_non_finite(inputs: list) -> None:
    """NaN/Inf inputs quantize to arbitrary int8 values and give finite, meaningless outputs: say so, per input."""
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and torch.is_floating_point(x) and not bool(torch.isfinite(x).all()):
            kinds = " and ".join(k for k, bad in (("NaN", torch.isnan(x).any()), ("Inf", torch.isinf(x).any())) if bad)
            log.warning("warning: input %d holds %s values; the outputs are not meaningful (int8 quantization maps "
                        "them to arbitrary values)", i, kinds)


def checked(pte: str | Path | bytes):
    """`validate.check_program` of a .pte against this runtime's backends and kernels, remembered for the last few
    programs by content (the isolated run checks in the caller, so its forked children find the answer)."""
    from executorch.extension.pybindings import portable_lib

    data = pte if isinstance(pte, (bytes, bytearray, memoryview)) else Path(pte).read_bytes()
    key = hashlib.sha256(data).digest()
    if key not in _CHECKED:
        _CHECKED[key] = check_program(bytes(data), backends=set(portable_lib._get_registered_backend_names()),
                                      kernels=set(portable_lib._get_operator_names()))
        while len(_CHECKED) > 8:
            _CHECKED.popitem(last=False)
    return _CHECKED[key]


_CHECKED: OrderedDict = OrderedDict()  # sha256 of a .pte -> its PteFile (checked)


def load(pte: str | Path | bytes, etdump: bool = False) -> HostProgram:
    """Load a .pte (path or bytes) for repeated execution on the host (etdump: record profiling events)."""
    return HostProgram(pte, etdump)


def run(pte: str | Path | bytes, inputs: Sequence[torch.Tensor], method: str = "forward",
        etdump: str | Path | None = None, isolated: bool = True) -> list[torch.Tensor]:
    """Execute `method` of a .pte (path or bytes) on the host; returns its outputs. With `etdump`, the run's
    ExecuTorch profiling events are written to that file (ETDump, for `executorch.devtools.Inspector`).

    isolated (default): in a child process (runtime/isolated.py), so that a kernel or LiteRT ending its process
    raises `HostRunCrashed` (one line: where it crashed) instead of ending the caller's; False: in this process."""
    if isolated:
        from .isolated import run_isolated

        return run_isolated(pte, inputs, method, etdump)
    program = load(pte, etdump=etdump is not None)
    outputs = program.execute(inputs, method)
    if etdump is not None:
        program.write_etdump(etdump)
    return outputs
