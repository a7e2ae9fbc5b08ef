"""The command line's part of the board: the flags of `run --device` and `compile --runner`, and what those
commands do with them, so that cli.py only wires them in.

`compile` always writes the selective-build operator list beside the .pte (`model.ops.yaml`); with `--runner` it
checks the .pte's CPU operators against the runner's kernel table (and its size against the runner's model buffer,
where known) after writing, prints one finding per missing operator and exits with the bad-input code (2): the
files are kept (the list is what a firmware build needs, the .pte still runs on the host) but the .pte will not
load on that firmware. `run --device PORT` makes the same check
before uploading and refuses.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..models.loading import EXIT_BAD_INPUT, UserError
from .selective_build import selected_operators_path, write_selected_operators

EXIT_FAIL = 1
GUIDE = "`executorch-neutron guide board` (the board guide, shipped with the package)"
RUNNER_HELP = ("the firmware's kernel table and delegates: 'modelrunner' (NXP's executorch_modelrunner for the "
               "i.MX RT700: its RegisterKernels.cpp, NeutronBackend) or a FILE with one operator name per line "
               "(aten::add.out), 'delegate NAME' lines (default NeutronBackend) and '#' comments")


def add_compile_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runner", metavar="NAME|FILE", help="check that every CPU operator and delegate of the .pte is "
                   f"registered by this firmware; exit 2 naming each missing one ({RUNNER_HELP})")


def add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("on a board (NXP's executorch_modelrunner firmware over a serial port)")
    add_device_options(g, "instead of the host")
    g.add_argument("--repeat", type=int, metavar="N", help="--device: run N times; prints min/median/max "
                   "on-board time (p50/p90/max from 10 runs)")
    g.add_argument("--compare-host", action="store_true", help="--device: also run on the host and print the "
                   "largest difference per output, in output quantization steps")


def add_device_options(g, where: str = "as well as on the host") -> None:
    """--device PORT and the flags of its serial session (`run`, `evaluate`)."""
    g.add_argument("--device", metavar="PORT", help=f"run on the board at PORT (/dev/ttyACM0, COM5) {where}; "
                   "needs pyserial (pip install 'executorch-neutron[board]')")
    g.add_argument("--baud", type=int, help="--device: serial baud rate (default 115200, the firmware's)")
    g.add_argument("--runner", metavar="NAME|FILE", help=f"--device: {RUNNER_HELP}; checked before uploading "
                   "(default modelrunner)")
    g.add_argument("--timeout", type=float, metavar="S",
                   help="--device: seconds to wait for each answer, beyond the transfer time (default 10)")


DEVICE_DEFAULTS = {"baud": 115200, "runner": "modelrunner", "timeout": 10.0, "repeat": 1, "compare_host": False}
_FLAGS = {"timeout": "--timeout", "baud": "--baud", "runner": "--runner", "repeat": "--repeat",
          "compare_host": "--compare-host"}


def check_device_flags(args) -> None:
    """Before any work: the board's flags need --device (without it they would be silently ignored); with it, the
    ones not given get their defaults."""
    present = [key for key in _FLAGS if hasattr(args, key)]
    if not args.device:
        given = [_FLAGS[key] for key in present if getattr(args, key) not in (None, False)]
        if given:
            names = ", ".join(given[:-1]) + (" and " if len(given) > 1 else "") + given[-1]
            raise UserError(f"{names} {'apply' if len(given) > 1 else 'applies'} to runs on a board, and no --device "
                            "was given", "add --device PORT, or drop them to run on the host")
        return
    for key in present:
        if getattr(args, key) is None:
            setattr(args, key, DEVICE_DEFAULTS[key])


def device_runner(args):
    """The --runner kernel table of a command with --device (None without --device); a bad one fails here, and
    board flags without --device (check_device_flags)."""
    check_device_flags(args)
    if not args.device:
        return None
    if args.timeout <= 0:
        raise UserError(f"--timeout {args.timeout}: a positive timeout is needed", "pass --timeout 10")
    return _runner(args.runner)


def _runner(name):
    from .runners import RunnerError, load_runner

    try:
        return load_runner(name)
    except RunnerError as exc:
        raise UserError(str(exc), f"the file format: {GUIDE}") from None


def compile_outputs(args) -> list[tuple[str, Path]]:
    """The files `compile` writes for the board (checked for collisions up front); a bad --runner fails here,
    before lowering."""
    if args.runner:
        _runner(args.runner)
    return [("the selective-build operator list", selected_operators_path(args.output))]


def after_compile(args, pte_path: Path) -> None:
    from .runners import check_pte, too_big

    ops = write_selected_operators(pte_path, selected_operators_path(pte_path))
    print(f"wrote {ops} (the .pte's CPU operators as ExecuTorch's selective build reads them: selected_operators.yaml)")
    if not args.runner:
        return
    runner = _runner(args.runner)
    problems = [str(f) for f in check_pte(pte_path, runner)]
    size = too_big(pte_path.stat().st_size, runner)
    if size:
        problems.append(f"{size}: the .pte will fail to load there (error 0x03); shrink the model or enlarge the "
                        "firmware's model buffer")
    if not problems:
        print(f"runner check: every CPU operator of the .pte is in {runner.name}'s kernel table ({runner.source}), "
              f"its delegates are among those the firmware registers ({', '.join(sorted(runner.delegates))})"
              + (" and the .pte fits its model buffer" if "model" in runner.buffers else ""))
        return
    for problem in problems:
        print(f"runner check: {problem}")
    raise UserError(f"the .pte will not load on {runner.name}: {len(problems)} problem(s) (listed above)",
                    f"{pte_path} and {ops} were written; what to do: {GUIDE}")


def check_run_flags(args) -> None:
    """Before any work: board-only flags need --device, and --device excludes --etdump."""
    check_device_flags(args)
    if not args.device:
        return
    if args.repeat < 1 or args.timeout <= 0:
        raise UserError(f"--repeat {args.repeat} --timeout {args.timeout}: at least one run and a positive timeout "
                        "are needed", "pass --repeat 10 --timeout 10")
    if args.etdump:
        raise UserError("--etdump records the host runtime's events; the board's firmware records none",
                        "drop --etdump, or run on the host (without --device)")


def run_on_device(args, inputs: list) -> list | None:
    """`run --device`: the outputs computed on the board (printing the on-board times, and the board-host
    comparison with --compare-host); None without --device."""
    if not args.device:
        return None
    from .client import BoardProtocolError, BoardTimeout, BoardUnavailable
    from .session import BoardRunError, WillNotLoad, run_on_board
    from .tensors import TensorMismatch

    try:
        run = run_on_board(args.pte, inputs, args.device, baud=args.baud, repeat=args.repeat,
                           runner=_runner(args.runner), timeout=args.timeout)
    except (WillNotLoad, BoardUnavailable, TensorMismatch) as exc:
        raise UserError(str(exc), f"see {GUIDE}", EXIT_BAD_INPUT) from None
    except (BoardRunError, BoardTimeout, BoardProtocolError) as exc:
        raise UserError(str(exc), f"see {GUIDE}", EXIT_FAIL) from None
    if run.banner:  # a board prints it at reset only: usually long before the port is opened, and not seen
        print(f"board {args.device} printed: {run.banner}")
    print(run.timing() + (" (this PC's times: a virtual board, not a board)" if "virtual board" in run.banner else ""))
    if args.compare_host:
        from ..runtime import run as host_run
        from .compare import compare_with_host

        for line in compare_with_host(args.pte, run.outputs, host_run(args.pte, inputs)):
            print(f"vs host: {line}")
    return run.outputs


def add_virtual_board_parser(sub) -> None:
    v = sub.add_parser("virtual-board", help="a SIMULATED board on a pseudo-terminal: speaks NXP's modelrunner "
                       "protocol and runs uploaded programs with the host runtime (times are this PC's, not a "
                       "board's), to try `run --device` / `evaluate --device` without a board",
                       description="Start a virtual board: a simulation of NXP's executorch_modelrunner firmware on a "
                       "pseudo-terminal (Linux, macOS). It prints the port to pass to --device, then one line per "
                       "command received (--quiet: none); Ctrl-C (or SIGTERM) stops it.")
    v.add_argument("--link", metavar="PATH", help="also make PATH a symbolic link to the port (a fixed name for "
                   "--device; removed when the virtual board stops)")
    v.add_argument("--kernels", default="modelrunner", metavar="NAME|FILE", help="the firmware build to mimic: "
                   f"{RUNNER_HELP}; LOAD_MODEL of a .pte calling another CPU operator or delegate answers 0x14")
    v.add_argument("--model-buffer", metavar="SIZE", help="the firmware's model buffer (default 384KiB, NXP's "
                   "kPteBufSize): LOAD_MODEL of a larger .pte answers 0x03")
    v.add_argument("--timing-us", type=int, metavar="N", help="report N microseconds for every RUN (default: this "
                   "PC's execution time, which is not a board's)")


def virtual_board(args) -> int:
    """`virtual-board`: serve until Ctrl-C (exit 0)."""
    import os

    from ..core.memory import BudgetError, parse_size
    from .runners import MODELRUNNER_BUFFERS
    from .virtual import Firmware, serve

    if not hasattr(os, "openpty"):
        raise UserError("the virtual board needs a pseudo-terminal, which this platform does not have",
                        "run it on Linux or macOS (or in WSL)")
    runner = _runner(args.kernels)
    try:
        size = parse_size(args.model_buffer) if args.model_buffer else runner.buffers.get(
            "model", MODELRUNNER_BUFFERS["model"])
    except BudgetError as exc:
        raise UserError(str(exc), "e.g. --model-buffer 384KiB") from None
    if args.timing_us is not None and args.timing_us < 0:
        raise UserError(f"--timing-us {args.timing_us}: a time cannot be negative", "e.g. --timing-us 850")
    link = Path(args.link) if args.link else None
    if link is not None and (link.exists() or link.is_symlink()) and not (
            link.is_symlink() and os.readlink(link).startswith("/dev/")):
        raise UserError(f"--link {link}: that path exists and is not a link to a port", "give a new path")

    def say(line: str) -> None:
        print(line, flush=True)

    serve(Firmware(runner, size, args.timing_us), link, say, None if args.quiet else say)
    return 0
