"""The only code that touches NXP's eIQ Neutron SDK (`eiq_neutron_sdk`, SDK 3.x API shape).

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


def sdk_available() -> bool:
    """True when `eiq_neutron_sdk` can be imported (found on the path; not imported here)."""
    try:
        return importlib.util.find_spec(SDK_MODULE) is not None
    except (ImportError, ValueError):
        return False


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
        options.update(dumpAfterImport="console", dumpAfterGenerate="console", verbose=True)
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


def convert(tflite: bytes, target: str, options: dict, name: str, timeout: float | None = None,
            keep_dir: str | None = None) -> ConversionResult:
    """Run the converter on `tflite` in a child process. `name` names the partition in every error."""
    with tempfile.TemporaryDirectory(prefix="neutron-convert-") as tmp:
        io_dir, work_dir = Path(tmp, "io"), Path(tmp, "work")
        io_dir.mkdir()
        work_dir.mkdir()
        (io_dir / _INPUT).write_bytes(bytes(tflite))
        request = {"input": str(io_dir / _INPUT), "output": str(io_dir / _OUTPUT), "error": str(io_dir / _ERROR),
                   "target": target, "options": options}
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
        return ConversionResult(model, text, files)


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


def _child_main(request_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    error_path = Path(request["error"])
    try:
        from eiq_neutron_sdk import neutron_converter, neutron_library_utils

        target = request["target"]
        if not neutron_library_utils.isNeutronTarget(target):
            known = ", ".join(sorted(str(t) for t in neutron_library_utils.getNeutronTargets()))
            error_path.write_text(
                f"the installed eIQ Neutron SDK does not know target {target!r}; it supports: {known}. "
                f"Choose one of those, or lower with reference=True"
            )
            return _EXIT_BAD_TARGET
        cctx = neutron_converter.CompilationContext()
        cctx.targetOpts = neutron_converter.getNeutronTarget(target)
        opts = cctx.compilationOpts
        for key, value in request["options"].items():
            if not hasattr(opts, key):
                known = ", ".join(sorted(a for a in dir(opts) if not a.startswith("_")))
                raise AttributeError(f"the converter has no option {key!r} (from extra_flags?); its options: {known}")
            setattr(opts, key, value)
        data = Path(request["input"]).read_bytes()
        converted = neutron_converter.convertModel(list(data), cctx)
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
