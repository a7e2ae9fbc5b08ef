"""Run a .pte on the host in a child process, so that a crash in a kernel or in LiteRT cannot end the caller's.

A LiteRT kernel that meets arguments it was not written for may end the process with SIGABRT (a `TFLITE_CHECK`,
no message), and so may an ExecuTorch kernel's argument check: run in the caller's process, such a .pte takes a
Python session, a notebook or a test run down with it. `run_isolated` forks the caller (Linux: the child shares the
torch, ExecuTorch and host back-end library already loaded, copy-on-write, so a run costs a fork and milliseconds,
where starting a fresh Python that imports torch and ExecuTorch costs seconds), runs the program in the child and
returns its outputs, or raises. The program's checks (runtime/validate.py, Python only) run in the caller and are
remembered there by content, and LiteRT's module is imported there, so a child inherits both; a child that has
replied is reaped later, not waited for (its exit takes down its copy of the caller's memory). Threads fork one
at a time, each after those steps, and the runtime's loading lock is taken across any fork, so that no child
inherits a lock or an import another thread held (such a child waited forever). It returns the outputs, or raises:

- `NeutronRuntimeError` with the runtime's own message when the run fails;
- `HostRunCrashed`, one line, when the child died: the signal, and where it was, the delegate call it was in
  (partition, back end, its arguments' dtypes and shapes) or, outside any delegate call, ExecuTorch's kernels or
  the program's loading.

The child runs `host.run` with two hooks of the executor (runtime/executor.py): the delegate call it is about to
make is sent to the caller before anything of it runs (the breadcrumb a crash leaves), and `references` substitute
a host-reference payload for a delegate blob (lower()'s host check of a device-microcode program runs the TFLite
the SDK was given). Log records of the run are forwarded to the caller's `executorch_neutron` logger. The child
leaves with `os._exit`, running none of the caller's exit handlers.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import signal
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Sequence

from .errors import NeutronRuntimeError

log = logging.getLogger("executorch_neutron")


class HostRunCrashed(NeutronRuntimeError):
    """The host run ended its process (a signal or an exit): the message is one line saying where."""


def run_isolated(pte: str | Path | bytes, inputs: Sequence, method: str = "forward",
                 etdump: str | Path | None = None, references: dict[bytes, bytes] | None = None,
                 names: dict[bytes, str] | None = None) -> list:
    """Execute `method` of a .pte (path or bytes) in a child process; returns its outputs (module docstring).
    references: delegate blob -> host-reference payload to run for it; names: delegate blob -> how a crash names
    it (e.g. its partition tag)."""
    data = pte if isinstance(pte, (bytes, bytearray, memoryview)) else _read(pte)
    refs = {hashlib.sha256(blob).hexdigest(): ref for blob, ref in (references or {}).items()}
    request = ("run", bytes(data), list(inputs), method, None if etdump is None else str(etdump), refs)
    with _FORKING:  # one thread at a time: no other thread of ours holds a lock or an import the child needs
        pid, read_end = _fork(data, request)
    conn, last, replied = Connection(read_end), None, False
    try:
        while True:
            try:
                kind, *rest = _recv(conn)
            except (EOFError, OSError):
                break
            if kind == "at":
                last = rest[0]
                continue
            for record in rest[-1]:
                if log.isEnabledFor(record.levelno):
                    log.handle(record)
            replied = True
            if kind == "ok":
                return rest[0]
            raise _same_error(*rest[:-1])
    finally:
        conn.close()
        if replied:  # it leaves on its own: reaped later (its exit takes down a copy of this process's memory)
            _EXITING.append(pid)
        else:
            _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    raise HostRunCrashed(_crash_line(code, last, data, names, method))


_EXITING: list[int] = []  # children that replied and are leaving
#: held from the checks to the fork: a thread forking while another was inside the runtime's loading (its lock) or
#: in the middle of an import made a child that waited forever for that thread, which does not exist in it
_FORKING = threading.Lock()


def _fork(data: bytes, request) -> tuple[int, int]:
    """The caller's side before the fork (the checks, the runtime and what the child imports, loaded here once),
    then the fork; returns (the child's pid, the read end of its pipe). Called under `_FORKING`."""
    import faulthandler  # noqa: F401 - what the child imports, imported here (module docstring)

    from ai_edge_litert import interpreter  # noqa: F401 - imported once, here: every child shares it

    from . import dtypes, executor  # noqa: F401
    from .host import _BINDINGS, _runtime, checked

    _runtime()  # loaded (and the host back end registered) once, here: every child shares it
    try:  # the program's checks (Python only, no crash) here, remembered: the child finds them done
        checked(data)
    except NeutronRuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - as the child would report it
        raise NeutronRuntimeError(f"host run failed: {type(exc).__name__}: {exc}") from None
    _reap()
    read_end, write_end = os.pipe()
    with _BINDINGS:  # no other thread of ours is inside ExecuTorch while the process is copied
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_end)
            _child(Connection(write_end), request)  # never returns
    os.close(write_end)
    return pid, read_end


def _reap() -> None:
    """Collect the children that replied and have exited since (no zombies pile up)."""
    for pid in list(_EXITING):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _EXITING.remove(pid)


def _same_error(message: str, module: str = "", name: str = "") -> NeutronRuntimeError:
    """The child's NeutronRuntimeError as the caller would have got it in process (InvalidProgram, MissingKernel,
    ...: the CLI's hints and callers' except clauses match on the class); else a NeutronRuntimeError."""
    import importlib

    try:
        cls = getattr(importlib.import_module(module), name) if module else NeutronRuntimeError
        if isinstance(cls, type) and issubclass(cls, NeutronRuntimeError):
            return cls(message)
    except (ImportError, AttributeError, TypeError):
        pass
    return NeutronRuntimeError(message)


def _send(conn: Connection, message) -> None:
    """Plain pickles (multiprocessing's own pickler would pass tensors as shared file descriptors)."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _recv(conn: Connection):
    return pickle.loads(conn.recv_bytes())


def _read(path) -> bytes:
    if not Path(path).is_file():
        raise NeutronRuntimeError(f"no .pte file at {path}")
    return Path(path).read_bytes()


def _crash_line(code: int, last: dict | None, pte: bytes, names: dict[bytes, str] | None, method: str) -> str:
    how = f"{signal.Signals(-code).name}" if code < 0 and -code in signal.Signals._value2member_map_ else f"exit {code}"
    if last is None:
        where = (f"outside the delegate calls of method {method!r} (an ExecuTorch CPU kernel, or the program's "
                 f"loading)")
    else:
        name = _delegate_name(last["digest"], pte, names, method)
        where = f"in {name} called with ({', '.join(last['args'])})"
    return (f"the host run of the program crashed ({how}) {where}; the .pte cannot run there: report the model, "
            f"and keep that partition's operators off the NPU (operators_not_to_delegate) to get a .pte that runs")


def _delegate_name(digest: str, pte: bytes, names: dict[bytes, str] | None, method: str) -> str:
    for blob, name in (names or {}).items():
        if hashlib.sha256(blob).hexdigest() == digest:
            return f"partition {name}"
    try:
        from ..pte import read_pte

        pte_file = read_pte(pte)
        for plan in pte_file.program.execution_plan:
            for i, delegate in enumerate(plan.delegates):
                if hashlib.sha256(pte_file.blob(delegate)).hexdigest() == digest:
                    return f"delegate {i} ({delegate.id}) of method {plan.name!r}"
    except Exception:  # noqa: BLE001 - naming is best effort: the crash is reported anyway
        pass
    return f"a delegate call of method {method!r}"


# --- the child side ---------------------------------------------------------------------------------------------

class _Forward(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args, record.exc_info = record.getMessage(), None, None
        self.records.append(record)


def _describe(args) -> list[str]:
    from .dtypes import NUMPY_DTYPES

    return [f"{NUMPY_DTYPES[a.dtype].name if a.dtype in NUMPY_DTYPES else a.dtype}{list(a.sizes)}"
            for a in args if a.is_tensor]


def _child(conn: Connection, request) -> None:
    """In the forked child: run the request, send the reply, leave without the caller's exit handlers."""
    code = 0
    try:
        import faulthandler

        import torch

        faulthandler.disable()  # the caller reports the crash in one line; no traceback dump from the child

        from . import executor
        from .host import run

        torch.set_num_threads(1)
        forward = _Forward()
        logger = logging.getLogger("executorch_neutron")
        logger.addHandler(forward)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        executor.CALL_LISTENER = lambda digest, args: _send(conn, ("at", {"digest": digest, "args": _describe(args)}))
        _, pte, inputs, method, etdump, refs = request
        executor.REFERENCES.update(refs)
        try:
            reply = ("ok", run(pte, inputs, method, etdump=etdump, isolated=False), forward.records)
        except NeutronRuntimeError as exc:  # its class travels by name: the caller gets the same kind of error
            reply = ("error", str(exc), type(exc).__module__, type(exc).__qualname__, forward.records)
        except Exception as exc:  # noqa: BLE001 - any failure is the caller's error
            reply = ("error", f"host run failed: {type(exc).__name__}: {exc}", forward.records)
        _send(conn, reply)
    except BaseException:  # noqa: BLE001 - the child must never return into the caller's code
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
