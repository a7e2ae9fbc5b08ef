"""Load the host back-end library, register it with ExecuTorch once per process, and serve its callbacks.

The C++ library (neutron_host_backend.cpp) calls `_on_execute` for every delegate call of ours with the blob
and a description of each argument; `_on_execute` hands them to the `Executor` and turns any failure into an
ExecuTorch error code plus a message (which the library keeps as its last error). Nothing raised here may
cross into C++: every exception becomes an error code.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading

from ..backends import backend_ids
from . import build
from .errors import HostBuildError
from .executor import INTERNAL, Arg, ExecutionError, Executor

MAX_DIMS = 16
ABI_VERSION = 2


class HostTensor(ctypes.Structure):
    """Mirror of the host tensor struct in neutron_host_backend.cpp."""

    _fields_ = [("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64), ("is_tensor", ctypes.c_int32),
                ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * MAX_DIMS), ("dim_order", ctypes.c_uint8 * MAX_DIMS)]


EXECUTE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                              ctypes.POINTER(HostTensor), ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_uint64)

EXECUTOR = Executor()
_lock = threading.Lock()
# a fork (runtime/isolated.py) waits until no thread is loading or registering, and the child gets the lock free
os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_lock.release)
_library: ctypes.CDLL | None = None


def _arg(t: HostTensor) -> Arg:
    if not t.is_tensor:
        return Arg(False)
    n = min(max(int(t.ndim), 0), MAX_DIMS)
    return Arg(True, int(t.data or 0), int(t.nbytes), int(t.dtype), tuple(int(s) for s in t.sizes[:n]),
               tuple(int(d) for d in t.dim_order[:n]))


def _write_message(buffer: int, capacity: int, message: str) -> None:
    if not buffer or capacity == 0:
        return
    data = message.encode("utf-8", errors="replace")[: capacity - 1] + b"\0"
    ctypes.memmove(buffer, data, len(data))


def _on_execute(handle_id, blob, blob_len, tensors, n_tensors, err, err_len) -> int:
    try:
        args = [_arg(tensors[i]) for i in range(n_tensors)]
        EXECUTOR.execute(int(handle_id), lambda: ctypes.string_at(blob, blob_len), args)
        return 0
    except ExecutionError as exc:
        _write_message(err, err_len, exc.message)
        return exc.code
    except BaseException as exc:  # noqa: BLE001 - must not unwind into C++
        _write_message(err, err_len, f"host executor: internal error: "
                                     f"{type(exc).__name__}: {exc}")
        return INTERNAL


def _on_release(handle_id) -> None:
    try:
        EXECUTOR.release(int(handle_id))
    except BaseException:  # noqa: BLE001 - must not unwind into C++
        pass


_EXECUTE_CALLBACK = EXECUTE_FN(_on_execute)  # module globals: they must outlive the library's use of them
_RELEASE_CALLBACK = RELEASE_FN(_on_release)


def _open(path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    lib.neutron_host_abi_version.restype = ctypes.c_uint32
    lib.neutron_host_tensor_struct_size.restype = ctypes.c_uint64
    lib.neutron_host_register.argtypes = [ctypes.c_char_p]
    lib.neutron_host_register.restype = ctypes.c_int32
    lib.neutron_host_set_callbacks.argtypes = [EXECUTE_FN, RELEASE_FN]
    lib.neutron_host_last_error.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
    lib.neutron_host_last_error.restype = ctypes.c_uint64
    if lib.neutron_host_abi_version() != ABI_VERSION or lib.neutron_host_tensor_struct_size() != ctypes.sizeof(HostTensor):
        raise HostBuildError(f"the host back-end library at {path} does not match this Python package; delete "
                             f"it (or the cache directory {build.cache_root()}) to rebuild")
    return lib


_registered_ids: set[str] = set()


def _register_ids(lib: ctypes.CDLL) -> None:
    for backend_id in backend_ids():
        if backend_id in _registered_ids:
            continue
        code = lib.neutron_host_register(backend_id.encode())
        if code != 0:
            raise HostBuildError(f"ExecuTorch refused to register backend {backend_id!r} (error 0x{code:02x}); "
                                 f"another library in this process already registered that backend id")
        _registered_ids.add(backend_id)


def ensure_registered() -> ctypes.CDLL:
    """Build (first time), load and register the host back end under every delegate id of the back-end table;
    idempotent and thread-safe. A back end registered since the last call (`backends.register`) is added."""
    global _library
    with _lock:
        if _library is not None:
            _register_ids(_library)
            return _library
        import executorch.extension.pybindings.portable_lib  # noqa: F401 - loads the libexecutorch.so we extend

        path = build.library_path()  # checked against its size/SHA-256 sidecar: a damaged file is rebuilt
        try:
            lib = _open(path)
        except OSError:  # not loadable for another reason (e.g. built against another libexecutorch): rebuild once
            lib = _open(build.library_path(force=True))
        _register_ids(lib)
        lib.neutron_host_set_callbacks(_EXECUTE_CALLBACK, _RELEASE_CALLBACK)
        _register_cortex_m_kernels(lib)
        atexit.register(_detach, lib)
        _library = lib
        return lib


def _register_cortex_m_kernels(lib: ctypes.CDLL) -> None:
    """Register the host kernels of the cortex_m::* operators (cortex_m_host_kernels.cpp) with ExecuTorch."""
    lib.neutron_host_register_cortex_m_kernels.restype = ctypes.c_int32
    code = lib.neutron_host_register_cortex_m_kernels()
    if code != 0:
        raise HostBuildError(f"ExecuTorch refused to register the host cortex_m::* kernels (error 0x{code:02x}); "
                             f"another library in this process already registered kernels with those names")


def cortex_m_kernels() -> frozenset[str]:
    """Names of the cortex_m::* operators the host library implements (e.g. 'cortex_m::softmax.out')."""
    lib = ensure_registered()
    lib.neutron_host_cortex_m_kernel_names.restype = ctypes.c_char_p
    return frozenset(lib.neutron_host_cortex_m_kernel_names().decode().split())


def _detach(lib: ctypes.CDLL) -> None:
    """At interpreter exit: programs freed during teardown must not call back into a finalizing Python."""
    lib.neutron_host_set_callbacks(EXECUTE_FN(), RELEASE_FN())


def last_error() -> str:
    lib = _library
    if lib is None:
        return ""
    buffer = ctypes.create_string_buffer(4096)
    lib.neutron_host_last_error(buffer, len(buffer))
    return buffer.value.decode("utf-8", errors="replace")


def clear_error() -> None:
    if _library is not None:
        _library.neutron_host_clear_error()
