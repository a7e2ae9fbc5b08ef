"""Runner kernel profiles: which CPU operators a board firmware registers, and the check a .pte must pass before
it is flashed or uploaded (every CPU operator it calls is registered).

A profile is a named table shipped with the package (`modelrunner`: NXP's executorch_modelrunner, from its
RegisterKernels.cpp; `modelrunner.ops` beside this module) or a user's file for a custom firmware: one operator
name per line in ExecuTorch's form (`aten::add.out`, as `executorch-neutron report` lists a .pte's CPU kernels),
`#` starts a comment. Delegate calls (the NPU's partitions) need no kernel. The named profile also carries the
firmware's fixed buffer sizes (executorch_engine.cpp, command_handler.cpp, main.cpp), which the board client uses to
refuse a .pte before uploading it and to say by how much it is too large.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

_DATA = Path(__file__).with_name("modelrunner.ops")
KIB = 1024


class RunnerError(ValueError):
    """A --runner that names no profile and no readable file, or a file that holds no operator names."""


@dataclass(frozen=True)
class Runner:
    """A firmware's kernel table. `buffers`: its fixed buffer sizes in bytes where known (model, receive, input,
    result), empty for a custom firmware's file."""

    name: str
    kernels: frozenset[str]
    source: str
    buffers: dict[str, int] = field(default_factory=dict, compare=False)


# NXP's executorch_modelrunner: kPteBufSize, the receive buffer of main.cpp, kInputBufSize, kResultBufMax,
# kPoolSize (planned memory and the method's allocations)
MODELRUNNER_BUFFERS = {"model": 384 * KIB, "receive": 1024 * KIB, "input": 256 * KIB, "result": 260 * KIB,
                       "method_pool": 1216 * KIB}
PROFILES = ("modelrunner",)


def parse_kernel_list(text: str, source: str) -> frozenset[str]:
    names = {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}
    bad = sorted(n for n in names if "::" not in n or " " in n)
    if bad:
        raise RunnerError(f"{source}: {', '.join(bad[:3])} {'is' if len(bad) == 1 else 'are'} not operator names; "
                          "write one per line in ExecuTorch's form, e.g. aten::add.out (see `executorch-neutron "
                          "report MODEL.pte`)")
    if not names:
        raise RunnerError(f"{source} lists no operator: write one operator name per line, e.g. aten::add.out")
    return frozenset(names)


def load_runner(name_or_file: str | Path) -> Runner:
    """The named profile (`modelrunner`) or a kernel-list file."""
    if str(name_or_file) == "modelrunner":
        return Runner("modelrunner", parse_kernel_list(_DATA.read_text(), str(_DATA)),
                      "NXP's executorch_modelrunner (RegisterKernels.cpp)", dict(MODELRUNNER_BUFFERS))
    path = Path(name_or_file)
    if not path.is_file():
        raise RunnerError(f"--runner {name_or_file}: neither a profile ({', '.join(PROFILES)}) nor a file; give a "
                          "profile name or a file with one operator name per line")
    return Runner(path.name, parse_kernel_list(path.read_text(), str(path)), f"the kernel list {path}")


@dataclass(frozen=True)
class Finding:
    """A CPU operator the .pte calls and the runner does not register."""

    operator: str
    calls: int
    runner: str

    def __str__(self) -> str:
        if self.operator.startswith("cortex_m::"):
            todo = ("build the firmware with ExecuTorch's Cortex-M backend kernels (CMSIS-NN) registered, or lower "
                    "for --target imxrt700, whose leftovers are portable kernels")
        else:
            todo = ("keep the model off this operator (SUPPORTED_OPS.md lists what the NPU runs), lower for --target "
                    "imxrt700cm if the firmware registers ExecuTorch's Cortex-M kernels (NXP's modelrunner does "
                    "not), or register the kernel in the firmware's kernel table (RegisterKernels.cpp) and rebuild it")
        return (f"{self.operator} ({self.calls} call{'s' if self.calls != 1 else ''}) is not in {self.runner}'s "
                f"kernel table: the .pte will fail to load there (error 0x14); {todo}")


def check_kernels(cpu_kernels: dict[str, int], runner: Runner) -> list[Finding]:
    """One finding per CPU operator of a method (`inspect_pte(...).methods[i].cpu_kernels`) that `runner` lacks."""
    return [Finding(op, calls, runner.name) for op, calls in sorted(cpu_kernels.items()) if op not in runner.kernels]


def check_pte(pte, runner: Runner) -> list[Finding]:
    """check_kernels over every method of a .pte (path or bytes)."""
    from ..pte import inspect_pte

    found: dict[str, int] = {}
    for method in inspect_pte(pte).methods:
        for op, calls in method.cpu_kernels.items():
            found[op] = found.get(op, 0) + calls
    return check_kernels(found, runner)


def too_big(pte_bytes: int, runner: Runner) -> str | None:
    """Why a .pte of `pte_bytes` does not fit the runner's model buffer, or None (also when the size is unknown)."""
    limit = runner.buffers.get("model")
    if limit is None or pte_bytes <= limit:
        return None
    return (f"the .pte is {pte_bytes:,} bytes, {pte_bytes - limit:,} more than {runner.name}'s model buffer of "
            f"{limit:,} bytes ({limit // KIB} KiB, kPteBufSize in executorch_engine.cpp)")
