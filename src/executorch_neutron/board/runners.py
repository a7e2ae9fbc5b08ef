"""Runner profiles: which CPU operators and which delegates a board firmware registers, and the check a .pte must
pass before it is flashed or uploaded (every CPU operator it calls and every delegate it holds is registered).

A profile is a named table shipped with the package (`modelrunner`: NXP's executorch_modelrunner, from its
RegisterKernels.cpp; `modelrunner.ops` beside this module) or a user's file for a custom firmware: one operator
name per line in ExecuTorch's form (`aten::add.out`, as `executorch-neutron report` lists a .pte's CPU kernels),
`delegate NAME` for each delegate the firmware registers (`NeutronBackend`, `EthosUBackend`; a file naming none
registers NeutronBackend, as NXP's firmware does), `target NAME` for the target to lower for (the chip the firmware
runs on), `#` starts a comment. A delegate the firmware lacks fails load_method (0x14) like a missing kernel: a .pte
lowered for another chip is refused by name. The named profile also carries the firmware's fixed buffer sizes
(executorch_engine.cpp, command_handler.cpp, main.cpp), which the board client uses to refuse a .pte before
uploading it and to say by how much it is too large.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

_DATA = Path(__file__).with_name("modelrunner.ops")
KIB = 1024
DEFAULT_DELEGATES = frozenset({"NeutronBackend"})  # what NXP's modelrunner registers: a file naming none means these


class RunnerError(ValueError):
    """A --runner that names no profile and no readable file, or a file that holds no operator names."""


@dataclass(frozen=True)
class Runner:
    """A firmware's kernel table and registered delegates. `buffers`: its fixed buffer sizes in bytes where known
    (model, receive, input, result), empty for a custom firmware's file. `target`: the target to lower for (the chip
    the firmware runs on), None when the file names none."""

    name: str
    kernels: frozenset[str]
    source: str
    buffers: dict[str, int] = field(default_factory=dict, compare=False)
    delegates: frozenset[str] = DEFAULT_DELEGATES
    target: str | None = None
    file: str | None = None  # the runner file a user gave (None: a profile of the package)


# NXP's executorch_modelrunner: kPteBufSize, the receive buffer of main.cpp, kInputBufSize, kResultBufMax,
# kPoolSize (planned memory and the method's allocations)
MODELRUNNER_BUFFERS = {"model": 384 * KIB, "receive": 1024 * KIB, "input": 256 * KIB, "result": 260 * KIB,
                       "method_pool": 1216 * KIB}
PROFILES = ("modelrunner",)


def parse_kernel_list(text: str, source: str) -> frozenset[str]:
    """The operator names of a runner file (its `delegate` and `target` lines aside)."""
    return parse_runner_file(text, source)[0]


def parse_runner_file(text: str, source: str) -> tuple[frozenset[str], frozenset[str], str | None]:
    """(operators, delegates, target) of a runner file; delegates default to NeutronBackend."""
    names, delegates, targets = set(), set(), []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 2 and words[0] in ("delegate", "target"):
            (delegates.add if words[0] == "delegate" else targets.append)(words[1])
        elif words:
            names.add(" ".join(words))
    bad = sorted(n for n in names if "::" not in n or " " in n)
    if bad:
        raise RunnerError(f"{source}: {', '.join(bad[:3])} {'is' if len(bad) == 1 else 'are'} not operator names; "
                          "write one per line in ExecuTorch's form, e.g. aten::add.out (see `executorch-neutron "
                          "report MODEL.pte`), or `delegate NeutronBackend` / `target imxrt700`")
    if not names:
        raise RunnerError(f"{source} lists no operator: write one operator name per line, e.g. aten::add.out")
    if len(targets) > 1:
        raise RunnerError(f"{source} names {len(targets)} targets ({', '.join(targets)}): a firmware runs on one chip; "
                          "keep one `target NAME` line")
    return frozenset(names), frozenset(delegates) or DEFAULT_DELEGATES, targets[0] if targets else None


def load_runner(name_or_file: str | Path) -> Runner:
    """The named profile (`modelrunner`) or a runner file."""
    if str(name_or_file) == "modelrunner":
        kernels, delegates, target = parse_runner_file(_DATA.read_text(), str(_DATA))
        return Runner("modelrunner", kernels, "NXP's executorch_modelrunner (RegisterKernels.cpp)",
                      dict(MODELRUNNER_BUFFERS), delegates, target)
    path = Path(name_or_file)
    if not path.is_file():
        raise RunnerError(f"--runner {name_or_file}: neither a profile ({', '.join(PROFILES)}) nor a file; give a "
                          "profile name or a file with one operator name per line")
    kernels, delegates, target = parse_runner_file(path.read_text(), str(path))
    return Runner(path.name, kernels, f"the kernel list {path}", {}, delegates, target, str(path))


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


@dataclass(frozen=True)
class MissingDelegate:
    """A delegate the .pte holds (its partitions were lowered for that back end) and the runner does not register."""

    backend_id: str
    partitions: int
    runner: Runner

    def __str__(self) -> str:
        runner = self.runner
        registered = ", ".join(sorted(runner.delegates))
        if runner.target:
            todo = f"lower for --target {runner.target}, the chip {runner.name}'s firmware is built for"
        else:
            todo = f"lower for a target of {registered} ({', '.join(_targets_of(runner.delegates)) or 'none known'})"
        if runner.file:  # a user's file: it may simply not say so yet
            todo += f", or add a line `delegate {self.backend_id}` to {runner.file} if that firmware registers it"
        return (f"delegate {self.backend_id} ({self.partitions} partition{'s' if self.partitions != 1 else ''}) is not "
                f"registered by {runner.name}'s firmware, which registers {registered}: the .pte was lowered for "
                f"another chip and will fail to load there (error 0x14); {todo}")


def _targets_of(delegates: frozenset[str]) -> list[str]:
    """The target names whose back end writes one of `delegates`."""
    from ..backends import BACKENDS
    from ..target import all_targets

    kinds = {b.kind for b in BACKENDS.values() if b.backend_id in delegates}
    return [t.name for t in all_targets() if t.kind in kinds]


def check_pte(pte, runner: Runner) -> list[Finding | MissingDelegate]:
    """Every delegate the runner does not register, then check_kernels over every method of a .pte (path or
    bytes)."""
    from ..pte import inspect_pte

    found: dict[str, int] = {}
    partitions: dict[str, int] = {}
    for method in inspect_pte(pte).methods:
        for op, calls in method.cpu_kernels.items():
            found[op] = found.get(op, 0) + calls
        for delegate in method.delegates:
            partitions[delegate.backend_id] = partitions.get(delegate.backend_id, 0) + 1
    missing = [MissingDelegate(d, n, runner) for d, n in sorted(partitions.items()) if d not in runner.delegates]
    return missing + check_kernels(found, runner)


def too_big(pte_bytes: int, runner: Runner) -> str | None:
    """Why a .pte of `pte_bytes` does not fit the runner's model buffer, or None (also when the size is unknown)."""
    limit = runner.buffers.get("model")
    if limit is None or pte_bytes <= limit:
        return None
    return (f"the .pte is {pte_bytes:,} bytes, {pte_bytes - limit:,} more than {runner.name}'s model buffer of "
            f"{limit:,} bytes ({limit // KIB} KiB, kPteBufSize in executorch_engine.cpp)")
