"""One program per serial port: before the client opens a board's port, it takes a lock that every run of ours
respects and looks for the processes that already hold the device, so that a second program is refused ("PORT is
in use by PROGRAM (pid N): close it and run again") before anything is uploaded, instead of both garbling each
other's frames.

- The lock: `fcntl.flock` on a file in the temporary directory named after the device's real path (so that
  /dev/serial/by-id/... and /dev/ttyACM0 share one), holding the holder's pid and program. The kernel drops it when
  the process ends, however it ends.
- The holders: on Linux, the processes whose /proc/PID/fd entries point at the device (other users' processes are
  private and not seen). Elsewhere nothing is looked up.
- After opening, the client also asks the serial driver for exclusive use (pyserial's `exclusive=True`, and TIOCEXCL
  where the platform has it: later opens by other programs fail). What cannot be detected where is said in
  the board guide (`executorch-neutron guide board`, "one program per port").
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: a COM port is opened by one program at a time anyway
    fcntl = None


class PortBusy(RuntimeError):
    """The port is held by another program (or another run of ours)."""


def program(pid: int) -> str:
    """A short name of process `pid` as a user would recognise it: `screen`, `python3 run.py`,
    `python3 -m executorch_neutron`; `a program` when it cannot be read."""
    try:
        argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        argv = []
    if not argv:
        try:
            return Path(f"/proc/{pid}/comm").read_text().strip() or "a program"
        except OSError:
            return "a program"
    name = os.path.basename(argv[0])
    if name.startswith("python") and len(argv) > 1:
        if argv[1] == "-m" and len(argv) > 2:
            return f"{name} -m {argv[2]}"
        if not argv[1].startswith("-"):
            return f"{name} {os.path.basename(argv[1])}"
    return name


def _device(port: str) -> str:
    return os.path.realpath(port) if os.path.exists(port) else port


def holders(port: str) -> list[tuple[int, str]]:
    """(pid, program) of the other processes that have `port` open, as far as /proc shows them (Linux; empty
    elsewhere and for other users' processes)."""
    proc, device, found = Path("/proc"), _device(port), []
    if not (proc / "self" / "fd").is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd) == device for fd in (entry / "fd").iterdir()):
                found.append((int(entry.name), program(int(entry.name))))
        except OSError:  # ended meanwhile, or another user's
            continue
    return sorted(found)


def in_use(port: str, who: list[tuple[int, str]]) -> PortBusy:
    names = ", ".join(f"{name} (pid {pid})" for pid, name in who) or "another program"
    return PortBusy(f"{port} is in use by {names}: close {'them' if len(who) > 1 else 'it'} and run again")


class PortLock:
    """The lock of one port, held until `release` (or the process's end)."""

    def __init__(self, port: str):
        self.port, self._fd = port, None
        if fcntl is None:
            return
        name = _device(port).strip("/").replace("/", "_").replace("\\", "_").replace(":", "_")
        path = Path(tempfile.gettempdir()) / f"executorch-neutron-{name}.lock"
        fd = _open_lock(path)
        if fd is None:  # a temporary directory we cannot write: the driver's exclusive mode still applies
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise in_use(port, [holder] if holder else holders(port)) from None
        try:  # who holds it, for the next run's message
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {program(os.getpid())}\n".encode(), 0)
        except OSError:
            pass
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # drops the flock
            self._fd = None


def _open_lock(path: Path) -> int | None:
    """The lock file, opened for writing if we may (another user's file in a sticky /tmp: read-only, which is
    enough for flock)."""
    for _ in range(3):
        try:
            return os.open(path, os.O_RDWR)
        except FileNotFoundError:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                os.fchmod(fd, 0o666)  # every user's runs share the lock of a device
                return fd
            except FileExistsError:
                continue
            except OSError:
                return None
        except PermissionError:
            try:
                return os.open(path, os.O_RDONLY)
            except OSError:
                return None
        except OSError:
            return None
    return None


def _read_holder(fd: int) -> tuple[int, str] | None:
    try:
        pid, _, name = os.pread(fd, 512, 0).decode(errors="replace").strip().partition(" ")
        pid = int(pid)
    except (OSError, ValueError):
        return None
    return (pid, name or "a program") if Path(f"/proc/{pid}").exists() or not Path("/proc/self").exists() else None


def claim(port: str) -> PortLock:
    """Take the lock of `port` and make sure no other process we can see holds it; raises PortBusy naming the
    holders. Call before opening the port; release the lock after closing it."""
    lock = PortLock(port)
    who = holders(port)
    if who:
        lock.release()
        raise in_use(port, who)
    return lock
