"""Build the host back-end library (neutron_host_backend.cpp) on first use, cached per build inputs.

The library links the `libexecutorch.so` of the installed executorch wheel, so it is compiled on the user's
machine with its g++ (or `$CXX`). The cache directory is `$EXECUTORCH_NEUTRON_CACHE_DIR`, else
`$XDG_CACHE_HOME/executorch_neutron`, else `~/.cache/executorch_neutron`; each build lives in a subdirectory
named by a hash of the source, the executorch version and location, the compiler and its flags, so any change
of those leads to a fresh build (a stale library is never loaded). The library is written under a temporary
name and renamed into place, so concurrent processes never see a half-written file; a `.sha256` sidecar (size and
hash) is checked before every load, so a library damaged later (an interrupted copy, a full disk) is rebuilt
instead of crashing the process.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import subprocess
from pathlib import Path

from ..core.atomic import replacing, write_text
from .errors import HostBuildError

SOURCE = Path(__file__).with_name("neutron_host_backend.cpp")
# compiled into the same library: host kernels of the cortex_m::* operators (target imxrt700cm)
SOURCES = (SOURCE, Path(__file__).with_name("cortex_m_host_kernels.cpp"),
           Path(__file__).with_name("cortex_m_spatial_kernels.cpp"))
HEADERS = (Path(__file__).with_name("cortex_m_kernels.h"),)  # part of the build key
LIBRARY_NAME = "libneutron_host_backend.so"
CXX_FLAGS = ("-std=c++17", "-O2", "-shared", "-fPIC", "-DC10_USING_CUSTOM_GENERATED_MACROS")


def executorch_dir() -> Path:
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise HostBuildError("the executorch package is not installed; install executorch==1.5.1")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def find_compiler() -> str:
    name = os.environ.get("CXX") or "g++"
    path = shutil.which(name)
    if path is None:
        raise HostBuildError(
            f"no C++ compiler found (looked for {name!r}): the host back-end library is compiled on first use. "
            f"Install g++ (e.g. `apt-get install g++`) or point $CXX at a C++17 compiler"
        )
    return path


def cache_root() -> Path:
    if os.environ.get("EXECUTORCH_NEUTRON_CACHE_DIR"):
        return Path(os.environ["EXECUTORCH_NEUTRON_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "executorch_neutron"


def compile_command(compiler: str, et_dir: Path, output: Path) -> list[str]:
    include = et_dir / "include"
    lib_dir = et_dir / "lib"
    return [compiler, *CXX_FLAGS, f"-I{include}", f"-I{include / 'executorch/runtime/core/portable_type/c10'}",
            *(str(s) for s in SOURCES), f"-L{lib_dir}", "-lexecutorch", f"-Wl,-rpath,{lib_dir}", "-o", str(output)]


def build_key(compiler: str, et_dir: Path) -> str:
    try:
        et_version = importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        et_version = "unknown"
    try:
        identity = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise HostBuildError(f"cannot run the C++ compiler {compiler!r}: {exc}; install g++ (`apt-get install g++`)") from exc
    digest = hashlib.sha256()
    for part in (*(s.read_bytes() for s in SOURCES + HEADERS), et_version.encode(), str(et_dir).encode(), compiler.encode(),
                 identity.encode(), " ".join(CXX_FLAGS).encode()):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def library_path(force: bool = False) -> Path:
    """Path of the built library, compiling it first when missing, damaged (size or SHA-256 differ from its
    `.sha256` sidecar, e.g. an interrupted copy) or when `force`."""
    compiler = find_compiler()
    et_dir = executorch_dir()
    target_dir = cache_root() / build_key(compiler, et_dir)
    target = target_dir / LIBRARY_NAME
    if not force and is_intact(target):
        return target
    if target.exists() and not force:
        logging.getLogger("executorch_neutron").warning(
            "warning: the cached host library %s is damaged or unverified (its size or SHA-256 differs from %s, "
            "or that record is missing; e.g. an interrupted copy): rebuilding it", target, _sidecar(target).name)
    _make_cache_dir(target_dir)
    try:
        with replacing(target, mkdir=False) as tmp:
            _compile(compiler, et_dir, tmp)
        write_text(_sidecar(target), _fingerprint(target))  # written after the library: a library without it
    except PermissionError as exc:                          # (or with a stale one) is rebuilt
        raise _cache_error(target_dir, exc) from None
    return target


def _sidecar(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _fingerprint(library: Path) -> str:
    data = library.read_bytes()
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}\n"


def is_intact(library: Path) -> bool:
    """The cached library exists and matches the size and SHA-256 recorded when it was built (loading a
    truncated shared library kills the process with SIGBUS, so it is checked before `dlopen`)."""
    try:
        return library.is_file() and _sidecar(library).read_text() == _fingerprint(library)
    except OSError:
        return False


def _cache_error(directory: Path, exc: OSError) -> HostBuildError:
    return HostBuildError(f"cannot write the host library cache {directory} ({exc.strerror or exc}): point "
                          f"$EXECUTORCH_NEUTRON_CACHE_DIR at a writable directory")


def _make_cache_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # read-only, or a file where a directory should be
        raise _cache_error(directory, exc) from None
    if not os.access(directory, os.W_OK):
        raise _cache_error(directory, PermissionError(13, "not writable"))


def _compile(compiler: str, et_dir: Path, output: Path) -> None:
    cmd = compile_command(compiler, et_dir, output)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise HostBuildError(f"cannot run the C++ compiler {compiler!r}: {exc}") from exc
    if proc.returncode != 0 or not output.is_file() or output.stat().st_size == 0:
        lines = proc.stderr.strip().splitlines()
        first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "no output")
        tail = "\n".join(lines[-20:])
        raise HostBuildError(
            f"compiling the host back-end library failed (exit code {proc.returncode}): {first.strip()} "
            f"(cache directory {output.parent}, set by $EXECUTORCH_NEUTRON_CACHE_DIR; check that g++ supports "
            f"C++17 and that executorch is installed intact)\ncommand: {' '.join(cmd)}\n{tail}"
        )
