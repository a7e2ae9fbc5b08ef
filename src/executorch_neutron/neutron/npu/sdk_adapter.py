"""The only code that touches NXP's eIQ Neutron SDK (`eiq_neutron_sdk`), in both of its API shapes.

SDK releases after 3.2.2 ship the converter as `eiq_neutron_sdk.neutron_compiler` with `compileModel(...)`; SDK
<= 3.2.2 ships `eiq_neutron_sdk.neutron_converter` with `convertModel(...)` (deprecated by NXP). Both take the same
`CompilationContext` (`targetOpts = getNeutronTarget(target)`, `compilationOpts.*`) and a list of TFLite bytes. The
child tries `neutron_compiler` first and falls back to `neutron_converter`; which one ran comes back to the parent
(`ConversionResult.api`), and the parent reads the SDK's version from its distribution metadata (`sdk_version()`,
no import of the SDK) for the `.pte` and the report.

The converter is known to crash its process on bad input, so it never runs in the caller's process: `convert()`
writes the TFLite and a JSON request into a fresh working directory and runs this very file as a child script
(`python sdk_adapter.py request.json`, stdlib imports only, no package import). The child's file descriptors 1
and 2 go to one log file, which captures everything the converter prints (its profiling dumps included); files
it writes into its working directory (kernel-selection code) are collected afterwards. A child killed by a
signal becomes a `NeutronConverterCrash` naming the partition; a Python error in the child becomes a
`NeutronCompileError` carrying the child's message.

Option mapping (NeutronCompileSpec -> `cctx.compilationOpts`): see `converter_options()`. `extra_flags` is read
as command-line style flags `--name=value`, `--name value` or `--name` (True); a kebab/snake name is turned into
the SDK's camelCase attribute (`--min-num-ops-per-graph=2` -> `minNumOpsPerGraph = 2`); values that read as
integers, floats or true/false become those. This reading of "extra flags" is our interpretation: the SDK 3.x
Python API takes attributes, not a command line.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from .errors import NeutronCompileError, NeutronConverterCrash
except ImportError:  # running as the converter child script: no package context, errors never raised here
    NeutronCompileError = NeutronConverterCrash = RuntimeError  # type: ignore[misc,assignment]

SDK_MODULE = "eiq_neutron_sdk"
DEFAULT_TIMEOUT_S = float(os.environ.get("EXECUTORCH_NEUTRON_CONVERTER_TIMEOUT", "1800"))
_EXIT_PY_ERROR, _EXIT_BAD_TARGET = 2, 3
_REQUEST, _INPUT, _OUTPUT, _ERROR, _CONSOLE = "request.json", "input.tflite", "output.tflite", "error.txt", "console.txt"
_API = "api.txt"
#: the SDK's two converter entry points, newest first: (module of eiq_neutron_sdk, function)
API_SHAPES = (("neutron_compiler", "compileModel"), ("neutron_converter", "convertModel"))
LEGACY_API = "neutron_converter.convertModel"
#: distribution names NXP's package index installs the SDK under
_DISTRIBUTIONS = ("eiq-neutron-sdk", "eiq_neutron_sdk")
#: profiling microcode needs this SDK (the device runtime links `neutronGetSdkVersion()`)
PROFILING_MIN_VERSION = (3, 2, 1)
#: options set only when the installed SDK has them (NXP sets dumpMicrocode with profiling on newer SDKs)
_OPTIONAL = ("dumpMicrocode",)


def sdk_available() -> bool:
    """True when `eiq_neutron_sdk` can be imported (found on the path; not imported here)."""
    try:
        return importlib.util.find_spec(SDK_MODULE) is not None
    except (ImportError, ValueError):
        return False


def sdk_version() -> str | None:
    """The installed SDK's version from its distribution metadata (e.g. "3.3.0"), or None when no metadata names it
    (an SDK put on the path by hand)."""
    for name in _DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    for dist in importlib.metadata.packages_distributions().get(SDK_MODULE, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def version_tuple(version: str) -> tuple[int, ...]:
    """"3.2.1" -> (3, 2, 1); a suffix ("3.3.0rc1", "3.2.2.post1") ends the number where its digits end."""
    parts = []
    for piece in version.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() < len(piece):
            break
    return tuple(parts)


def check_profiling_supported(version: str | None) -> None:
    """Refuse profiling with an SDK older than 3.2.1 in one line; an SDK of unknown version is let through."""
    if version is not None and version_tuple(version) < PROFILING_MIN_VERSION:
        need = ".".join(map(str, PROFILING_MIN_VERSION))
        raise NeutronCompileError(
            f"use_profiling needs eIQ Neutron SDK >= {need} (the device runtime's profiling links "
            f"neutronGetSdkVersion()), but eiq-neutron-sdk {version} is installed: upgrade the SDK "
            f"(pip install 'eiq-neutron-sdk>={need}' from NXP's package index), or lower without use_profiling")


def converter_options(spec) -> dict:
    """`cctx.compilationOpts` attribute values for the Neutron options of a spec (`neutron/options.NeutronOptions`,
    or the spec itself: same field names; extra_flags applied last, may override)."""
    options = {
        "minNumOpsPerGraph": 1,  # the partitioner already decided what the NPU runs
        "fetchConstantsToSRAM": bool(spec.fetch_constants_to_sram),
        "dumpKernelSelectionCode": bool(spec.dump_kernel_selection_code),
        "useProfiling": bool(spec.use_profiling),
        # NXP's backend in ExecuTorch 1.5.1 excludes these two graph passes by default; so do we (override with
        # extra_flags="--excludeGraphPasses=...")
        "excludeGraphPasses": "HoistSliceAboveTranspose,MergeTranspose",
    }
    if spec.use_profiling:
        # the converter prints its imported and generated graphs on the console (the value "console", as NXP's
        # backend asks for them); the profile map is read from that text (npu/profile_map.py). Without profiling
        # these stay at the SDK's defaults.
        options.update(dumpAfterImport="console", dumpAfterGenerate="console", verbose=True, dumpMicrocode=True)
    options.update(parse_extra_flags(spec.extra_flags))
    return options


def parse_extra_flags(flags: str) -> dict:
    """`--name=value --other value --switch` -> {"name": value, "other": value, "switch": True} (camelCase names)."""
    tokens = shlex.split(flags or "")
    out: dict = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or len(token) == 2:
            raise NeutronCompileError(
                f"extra_flags: cannot read {token!r}; write converter flags as --name=value, --name value or --name"
            )
        name, has_value, value = token[2:].partition("=")
        if not has_value:
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                value, i = tokens[i + 1], i + 1
            else:
                value = "true"
        out[_camel(name)] = _value(value)
        i += 1
    return out


def _camel(name: str) -> str:
    parts = [p for p in re.split(r"[-_]", name) if p]
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]) if parts else name


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclass
class ConversionResult:
    """What one converter run produced."""

    model: bytes  # the converted TFLite flatbuffer
    console: str  # everything the converter printed on file descriptors 1 and 2
    files: dict[str, bytes] = field(default_factory=dict)  # other files it wrote in its working directory
    api: str = ""  # the entry point that ran: "neutron_compiler.compileModel" or LEGACY_API


def convert(tflite: bytes, target: str, options: dict, name: str, timeout: float | None = None,
            keep_dir: str | None = None) -> ConversionResult:
    """Run the converter on `tflite` in a child process. `name` names the partition in every error."""
    with tempfile.TemporaryDirectory(prefix="neutron-convert-") as tmp:
        io_dir, work_dir = Path(tmp, "io"), Path(tmp, "work")
        io_dir.mkdir()
        work_dir.mkdir()
        (io_dir / _INPUT).write_bytes(bytes(tflite))
        request = {"input": str(io_dir / _INPUT), "output": str(io_dir / _OUTPUT), "error": str(io_dir / _ERROR),
                   "api": str(io_dir / _API), "target": target, "options": options, "optional": list(_OPTIONAL)}
        (io_dir / _REQUEST).write_text(json.dumps(request, sort_keys=True))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the SDK is found where the parent finds it
        with open(io_dir / _CONSOLE, "wb") as console:
            try:
                proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(io_dir / _REQUEST)],
                                      cwd=work_dir, stdout=console, stderr=subprocess.STDOUT, env=env,
                                      timeout=timeout or DEFAULT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                kept = _keep_input(tflite, name, keep_dir)
                raise NeutronConverterCrash(
                    f"the eIQ Neutron converter did not finish partition {name!r} within {timeout or DEFAULT_TIMEOUT_S:.0f} s; "
                    f"its input TFLite is kept at {kept}. Set EXECUTORCH_NEUTRON_CONVERTER_TIMEOUT to wait longer, "
                    f"or lower with reference=True for a host-reference .pte"
                ) from None
        text = (io_dir / _CONSOLE).read_text(errors="replace")
        if proc.returncode != 0:
            _raise_child_failure(proc.returncode, io_dir / _ERROR, text, tflite, name, keep_dir)
        model = (io_dir / _OUTPUT).read_bytes()
        files = {p.name: p.read_bytes() for p in sorted(work_dir.iterdir()) if p.is_file()}
        api = (io_dir / _API).read_text().strip() if (io_dir / _API).exists() else ""
        return ConversionResult(model, text, files, api)


def _raise_child_failure(code, error_file: Path, console: str, tflite: bytes, name: str, keep_dir):
    kept = _keep_input(tflite, name, keep_dir)
    tail = "\n".join(console.strip().splitlines()[-15:])
    tail = f"\nconverter output (last lines):\n{tail}" if tail else ""
    if code < 0:
        try:
            signame = signal.Signals(-code).name
        except ValueError:
            signame = f"signal {-code}"
        raise NeutronConverterCrash(
            f"the eIQ Neutron converter crashed ({signame}) while compiling partition {name!r}; its input TFLite is "
            f"kept at {kept}. What to do: keep the offending operators on the CPU with "
            f"NeutronCompileSpec(operators_not_to_delegate=...), or lower with reference=True to get a host-reference "
            f".pte, and report the TFLite to NXP.{tail}"
        )
    message = error_file.read_text(errors="replace").strip() if error_file.exists() else ""
    if code == _EXIT_BAD_TARGET:
        raise NeutronCompileError(f"partition {name!r}: {message}")
    raise NeutronCompileError(
        f"the eIQ Neutron converter failed on partition {name!r} (exit code {code}): "
        f"{message or 'no message'}; its input TFLite is kept at {kept}.{tail}"
    )


def _keep_input(tflite: bytes, name: str, keep_dir: str | None) -> Path:
    directory = Path(keep_dir) if keep_dir else Path(tempfile.mkdtemp(prefix="neutron-failed-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{safe_name(name)}.failed.tflite"
    path.write_bytes(bytes(tflite))
    return path


def safe_name(name: str) -> str:
    """A partition name usable as a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name)) or "partition"


# ---------------------------------------------------------------- child side: runs with stdlib + the SDK only


def _load_converter():
    """(module, its convert function, "module.function") of the newest API shape the installed SDK has."""
    import importlib

    for module_name, function in API_SHAPES:
        qualified = f"{SDK_MODULE}.{module_name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:  # the SDK's module exists but fails to import: say so, do not fall back
                raise
            continue
        if hasattr(module, function):
            return module, getattr(module, function), f"{module_name}.{function}"
    shapes = " or ".join(f"{SDK_MODULE}.{m}.{f}" for m, f in API_SHAPES)
    raise ImportError(f"the installed eIQ Neutron SDK has no converter entry point ({shapes})")


def _child_main(request_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    error_path = Path(request["error"])
    try:
        module, convert_model, api = _load_converter()
        Path(request["api"]).write_text(api)
        target = request["target"]
        try:
            from eiq_neutron_sdk import neutron_library_utils
        except ImportError:
            neutron_library_utils = None  # no target list to check against: getNeutronTarget decides
        if neutron_library_utils is not None and not neutron_library_utils.isNeutronTarget(target):
            known = ", ".join(sorted(str(t) for t in neutron_library_utils.getNeutronTargets()))
            error_path.write_text(
                f"the installed eIQ Neutron SDK does not know target {target!r}; it supports: {known}. "
                f"Choose one of those, or lower with reference=True"
            )
            return _EXIT_BAD_TARGET
        cctx = module.CompilationContext()
        cctx.targetOpts = module.getNeutronTarget(target)
        opts = cctx.compilationOpts
        optional = set(request.get("optional", ()))
        for key, value in request["options"].items():
            if not hasattr(opts, key):
                if key in optional:
                    continue  # an older SDK without this option
                known = ", ".join(sorted(a for a in dir(opts) if not a.startswith("_")))
                raise AttributeError(f"the converter has no option {key!r} (from extra_flags?); its options: {known}")
            setattr(opts, key, value)
        data = Path(request["input"]).read_bytes()
        converted = convert_model(list(data), cctx)
        Path(request["output"]).write_bytes(bytes(bytearray(converted)))
        return 0
    except BaseException as exc:  # noqa: BLE001 - everything becomes a message for the parent
        error_path.write_text(f"{type(exc).__name__}: {exc}")
        return _EXIT_PY_ERROR
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    sys.path.pop(0)  # this file's directory: its sibling modules must not shadow anything the SDK imports
    sys.exit(_child_main(sys.argv[1]))
