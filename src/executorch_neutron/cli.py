"""Command line: `executorch-neutron <command>` (also `python -m executorch_neutron`). argparse -> public API.

Commands: demo, compile, run, profile, report, compare, evaluate, virtual-board, guide, targets, ops. Exit codes: 0
success, 1 failure while working,
2 bad input (missing file, bad factory path, unknown target, shape mismatch, ...), 3 nothing was delegated,
130 interrupted (Ctrl-C).
Errors are one line plus a hint; `--verbose` prints the traceback above them (the exit code stays the same).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import io
import logging
import re
import sys
import traceback
from pathlib import Path

from .core.atomic import PathCollision, check_distinct, replacing, sigint_held
from .core.messages import elide
from .models.loading import (EXIT_BAD_INPUT, MODEL_HELP, UserError, check_finite, check_inputs_fit, check_model_spec,
                      load_model, load_samples, load_tensor, model_file, random_samples)

EXIT_OK, EXIT_FAIL, EXIT_NOT_DELEGATED, EXIT_INTERRUPTED = 0, 1, 3, 130


def _check_paths(args, outputs: list, inputs: list = ()) -> None:
    """Before any work: no output of the command may resolve to one of its inputs (the model, calibration and
    sample files, the .pte, --input files) or to another of its outputs (PathCollision)."""
    read = list(inputs)
    if getattr(args, "model", None):
        read.append(("the model", model_file(args.model)))
    for flag in ("calibration", "samples"):
        directory = getattr(args, flag, None)
        if directory and Path(directory).is_dir():
            read += [(f"--{flag}", Path(directory) / p.name) for p in sorted(Path(directory).iterdir())]
    if getattr(args, "pte", None):
        read.append(("the program", args.pte))
    read += [("--input", f) for f in getattr(args, "input", None) or []]
    check_distinct(read, outputs)
    _check_intermediates(getattr(args, "intermediates", None), read + list(outputs))


_TFLITE_OF_A_PARTITION = re.compile(r"[a-z_]+_\d+\.tflite")


def _check_intermediates(directory, named: list) -> None:
    """--intermediates DIR receives one `<partition tag>.tflite` per partition (neutron_0.tflite, ...), named only
    after partitioning: an input or output of the command that could be one of them is refused up front."""
    if not directory:
        return
    d = Path(directory).resolve()
    for label, path in named:
        if path is not None and Path(path).resolve().parent == d and _TFLITE_OF_A_PARTITION.fullmatch(Path(path).name):
            raise PathCollision(f"--intermediates {directory} receives partition files named like {Path(path).name}, "
                                f"which is {label} {path}: writing it would destroy that file")


def _calibration(args, inputs, bundled):
    """The calibration samples of a command: from exactly one source (--calibration DIR, the factory's third item,
    or --random-calibration); two sources are refused instead of silently ignoring one."""
    sources = [name for name, given in (("--calibration", args.calibration),
                                        ("the factory's calibration samples", bundled is not None),
                                        ("--random-calibration", getattr(args, "random_calibration", False)))
               if given]
    if len(sources) > 1:
        raise UserError(f"{' and '.join(sources)} exclude each other",
                        "give one source of calibration data: --calibration DIR, the factory's third item, or "
                        "--random-calibration alone to try the flow")
    if args.calibration:
        return load_samples(Path(args.calibration), inputs)
    if bundled is not None:
        for i, sample in enumerate(bundled):
            check_finite(sample, f"calibration sample {i} returned by the factory")
        return bundled
    if getattr(args, "random_calibration", False):
        logging.getLogger("executorch_neutron").warning(
            "warning: calibrating on random data (--random-calibration): the int8 model will be inaccurate on real "
            "inputs; pass --calibration DIR with representative samples")
        return [inputs] + random_samples(inputs, 8)
    raise UserError("no calibration data", "pass --calibration DIR (of .npy/.npz/.pt samples), or "
                                           "--random-calibration to try the flow on random data")


def _spec_options(args) -> dict:
    from .compile_spec import cli_options

    ops = [o for entry in args.operators_not_to_delegate or [] for o in entry.split(",") if o.strip()]
    return dict(
        extra_flags=args.extra_flags,
        operators_not_to_delegate=tuple(o.strip() for o in ops),
        use_neutron_for_format_conversion=not args.no_neutron_format_conversion,
        intermediates_dir=args.intermediates,
        constraints=args.constraints,
        **{o.name: getattr(args, o.name) for o in cli_options()},  # each back end's own options
    )


def _load(args):
    """(target name, model, example inputs, the factory's calibration or None, progress bar factory) of a command
    that lowers a model; the target and the model path are checked before torch is imported."""
    from .target import get_target

    target = get_target(args.target).name  # an unknown name or a wrong path fails here, before torch is imported
    check_model_spec(args.model)
    _import_torch()
    from tqdm import tqdm

    model, inputs, bundled = load_model(args.model)
    check_inputs_fit(model, inputs)
    bars = functools.partial(tqdm, file=sys.stderr, leave=False, disable=args.quiet or not sys.stderr.isatty())
    return target, model, inputs, bundled, bars


def _lower(args):
    target, model, inputs, bundled, bars = _load(args)
    from . import lower

    quantize = not args.qat
    precision = _precision_options(args)
    calib = _calibration(args, inputs, bundled) if quantize else None
    if getattr(args, "accuracy_target", None) is not None:  # compile --accuracy-target: evaluation/auto_precision.py
        from .evaluation.auto_precision import search_for_cli

        return search_for_cli(args, model, inputs, calib, target, bars, _spec_options(args)), model, inputs, calib
    result = lower(model, inputs, calib, target=target, quantize_model=quantize, progress=bars,
                   etrecord=bool(getattr(args, "etrecord", None)), host_check=not getattr(args, "no_host_check", False),
                   **precision, **_spec_options(args))
    return result, model, inputs, calib


def _precision_options(args) -> dict:
    """lower()'s precision and quantized_io of a command's --precision / --quantized-io; a malformed --precision
    (or its @FILE) is refused here, before calibration."""
    options = {"quantized_io": bool(getattr(args, "quantized_io", False))}
    if getattr(args, "precision", None):
        if args.qat:
            raise UserError("--precision configures quantization, but --qat takes an already quantized model",
                            "set the precision on the quantizer you trained with, or drop --precision")
        from .quantizer.precision import PrecisionError, parse

        try:
            parse(args.precision)
        except PrecisionError as exc:
            raise UserError(str(exc), 'e.g. --precision "head=float,type:Conv2d=int16" or --precision @FILE') from None
        options["precision"] = args.precision
    return options


def _add_precision_options(p: argparse.ArgumentParser) -> None:
    """--precision and --quantized-io (read by `_precision_options`)."""
    g = p.add_argument_group("precision (`executorch-neutron guide precision`)")
    g.add_argument("--precision", metavar="SPEC", help="per-layer precision, later and more specific settings win: "
                   "comma-separated KEY=int8|int16|float, KEY being default, a module name or glob (head, conv*), "
                   "type:CLASS (type:Conv2d), op:OPERATOR (op:aten.softmax) or node:NAME (node:conv2d_3); or @FILE "
                   "(that text, JSON or TOML). Float ones stay on the CPU")
    g.add_argument("--quantized-io", action="store_true", help="the .pte takes and returns int8 (int16) tensors; "
                   "their scales and zero points are in the report and in `report`; `run` quantizes float inputs "
                   "with them")


@contextlib.contextmanager
def _runtime_logs():
    """ExecuTorch's runtime writes its own log lines ("[method.cpp:1528] ...", "[cpuinfo_utils.cpp:125] ...") to
    stderr; they go to the debug log (--verbose), so that an error stays one line and a run prints only its
    results. Our own warnings (logging) are not affected."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stderr(buffer):
            yield
    finally:
        if buffer.getvalue().strip():
            logging.getLogger("executorch_neutron").debug("%s", buffer.getvalue().rstrip())


@contextlib.contextmanager
def _dropping_log(fragment: str):
    """Drop our log records containing `fragment` for the block (a notice about a file the command does not
    write)."""
    logger = logging.getLogger("executorch_neutron")
    drop = logging.Filter()
    drop.filter = lambda record: fragment not in record.getMessage()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


# --- commands ------------------------------------------------------------------------------------------------

def _budgets(args) -> dict[str, int]:
    """--sram-budget / --flash-budget in bytes (absent ones left out); a size that cannot be read is refused."""
    from .core.memory import BudgetError, parse_size

    try:
        return {k: parse_size(v) for k, v in (("sram", args.sram_budget), ("flash", args.flash_budget)) if v}
    except BudgetError as exc:
        raise UserError(str(exc), "e.g. --sram-budget 512KiB --flash-budget 2MB") from None


def _compile(args) -> int:
    from .board import cli_support as board
    from .core.memory import BudgetError

    _check_paths(args, [("-o", args.output), ("--report", args.report), ("--etrecord", args.etrecord),
                        *board.compile_outputs(args)])
    budgets = _budgets(args)  # a bad size fails before lowering
    result, *_ = _lower(args)
    try:  # a refused program: no .pte; its report (with the memory section and the budgets) is printed and saved
        result.check_budget(**budgets)
    except BudgetError:
        print(result.report)
        if args.report:
            print(f"wrote {result.report.save(args.report)} (the refused program's report; no .pte was written)")
        raise
    path = result.save(args.output)
    print(result.report)
    print(f"\nwrote {path} ({len(result.pte)} bytes); stage seconds: "
          + ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items()))
    _say_converter_files(args, result, path)
    if args.report:
        print(f"wrote {result.report.save(args.report)}")
    if args.etrecord:
        print(f"wrote {result.save_etrecord(args.etrecord)} (ETRecord for `executorch-neutron profile`)")
    if args.model_explorer:
        from .report.graph import layer_costs

        _model_explorer(result.pte, args.model_explorer,
                        {p.tag: found for p in result.report.partitions if (found := layer_costs(p))})
    board.after_compile(args, path)  # the selective-build list; --runner: exit 2 naming each missing kernel
    if not result.report.partitions and not args.allow_cpu_only:
        raise UserError(f"no node was delegated to the {result.report.npu} NPU", "see 'On the CPU' above "
                        "for the reasons; "
                        "--allow-cpu-only accepts a CPU-only .pte", EXIT_NOT_DELEGATED)
    return EXIT_OK


def _say_converter_files(args, result, pte: Path) -> None:
    """Where the compiler's own files (e.g. kernel-selection code) went: beside the .pte, or in --intermediates."""
    if result.converter_files:
        print(f"wrote {', '.join(result.converter_files)} (the NPU compiler's files) in {pte.parent}")
    elif args.intermediates:
        found = [name for p in result.report.partitions for name in result.report.backend.intermediates(p.tag)
                 if Path(args.intermediates, name).is_file()]
        if found:
            print(f"the NPU compiler's files in {args.intermediates}: {', '.join(found)}")


def _pte_inputs(args, outputs: list, reads: list = ()) -> list:
    """The --input files of `run` / `profile`, checked against the .pte's method inputs (or random ones), after
    checking that none of the command's `outputs` (label, path; a callable of the method's output count for
    --save-outputs) is one of its inputs (the .pte, --input files and `reads`)."""
    method = _inspect(args.pte).methods[0]
    import torch

    _check_paths(args, [o for entry in outputs for o in (entry(len(method.outputs)) if callable(entry) else [entry])],
                 reads)
    if getattr(args, "random_input", False) and not args.input:
        logging.getLogger("executorch_neutron").warning("random inputs: the timings are real, the outputs mean nothing")
        gen = torch.Generator().manual_seed(0)
        return [torch.randn(t.shape, generator=gen) if t.dtype == "float" else torch.zeros(t.shape, dtype=torch.int8)
                for t in method.inputs]
    inputs = []
    for i, file in enumerate(args.input or []):
        x = load_tensor(Path(file))
        x = x[0] if isinstance(x, tuple) else x
        want = method.inputs[i].dtype if i < len(method.inputs) else None
        if want == "float" and not x.is_floating_point():
            raise UserError(f"--input {file} holds {str(x.dtype).removeprefix('torch.')} values, but input {i} of "
                            f"the program is float32", "save the input as float32 (numpy: x.astype(np.float32))")
        if want == "float" and x.dtype != torch.float32:  # float64/float16 samples: the same numbers as float32
            x = x.float()
        inputs.append(x)
    if len(inputs) != len(method.inputs):
        shapes = ", ".join(f"{t.dtype}{t.shape}" for t in method.inputs)
        raise UserError(f"the program takes {len(method.inputs)} input(s) ({shapes}), got {len(inputs)}",
                        "pass one --input FILE.npy per model input")
    return inputs


def _inspect(pte: Path):
    """The .pte's summary (pte.inspect_pte); a missing file or a directory is refused before torch is imported."""
    if Path(pte).is_dir():
        raise UserError(f"{pte} is a directory, not a .pte file", "pass a .pte written by `executorch-neutron compile`")
    if not Path(pte).is_file():
        raise UserError(f"no .pte file at {pte}", "pass a .pte written by `executorch-neutron compile`")
    _import_torch()
    from .pte import PteError, inspect_pte

    try:
        return inspect_pte(pte)
    except PteError as exc:
        raise UserError(str(exc), "pass a .pte written by `executorch-neutron compile`") from None


def _run(args) -> int:
    from .board.cli_support import check_run_flags, run_on_device

    check_run_flags(args)
    save = Path(args.save_outputs) if args.save_outputs else None
    inputs = _pte_inputs(args, [("--etdump", args.etdump), lambda n: [
        ("--save-outputs", save / f"output_{j}.npy") for j in range(n if save else 0)]])
    import numpy as np

    from .runtime import run

    quantized_io = {(q["side"], q["index"]): q for q in _inspect(args.pte).methods[0].quantized_io}
    inputs, from_float = _quantize_inputs(inputs, quantized_io)
    outputs = run_on_device(args, inputs)  # None without --device
    if outputs is None:
        with _runtime_logs():  # a NeutronRuntimeError gets its hint in main()
            outputs = run(args.pte, inputs, etdump=args.etdump)
    if from_float:  # float in, float out: as the float model would
        outputs = _dequantize_outputs(outputs, quantized_io)
    if args.etdump:
        print(f"wrote {args.etdump} (ETDump: `executorch-neutron profile` or executorch.devtools.Inspector)")
    if save:
        save.mkdir(parents=True, exist_ok=True)
    for j, out in enumerate(outputs):
        a = out.detach().numpy()
        line = (f"output {j}: {a.dtype}{list(a.shape)} min {a.min():.6g} max {a.max():.6g} mean {a.mean():.6g}"
                if a.size else f"output {j}: {a.dtype}{list(a.shape)} (empty)")
        if a.ndim == 2 and a.shape[1] > 1:
            line += f" argmax {a.argmax(1).tolist()}"
        if ("output", j) in quantized_io and not from_float:
            q = quantized_io["output", j]
            line += f" (quantized: x = (q - {q['zero_point']}) * {q['scale']:.6g})"
        print(line)
        if save:
            with replacing(save / f"output_{j}.npy") as tmp, open(tmp, "wb") as f:
                np.save(f, a)
    if save:
        print(f"wrote {len(outputs)} output(s) to {save}")
    return EXIT_OK


def _quantize_inputs(inputs: list, quantized_io: dict) -> tuple[list, bool]:
    """A quantized-I/O .pte given float inputs: quantize them with the program's qparams (as the host runtime
    would), for the host and a board alike, and say so; int8 (int16) inputs are passed as they are. Returns the
    inputs and whether any was quantized (then the outputs are dequantized: `_dequantize_outputs`)."""
    from .pte import IOQParams
    from .runtime.host import quantize

    inputs, any_float = list(inputs), False
    for i, x in enumerate(inputs):
        q = quantized_io.get(("input", i))
        if q is not None and x.is_floating_point():
            inputs[i], any_float = quantize(x, IOQParams(**q)), True
            print(f"input {i} is float: quantized to {q['dtype']} with the program's scale {q['scale']:.6g} and zero "
                  f"point {q['zero_point']}")
    return inputs, any_float


def _dequantize_outputs(outputs: list, quantized_io: dict) -> list:
    from .pte import IOQParams
    from .runtime.host import dequantize

    outputs = list(outputs)
    for j, out in enumerate(outputs):
        q = quantized_io.get(("output", j))
        if q is not None:
            outputs[j] = dequantize(out, IOQParams(**q))
            print(f"output {j} dequantized with the program's scale {q['scale']:.6g} and zero point "
                  f"{q['zero_point']} (float inputs were given)")
    return outputs


def _profile(args) -> int:
    if args.runs < 1:
        raise UserError(f"--runs {args.runs}: at least one run is needed", "pass --runs 10")
    if args.etrecord and not Path(args.etrecord).is_file():
        raise UserError(f"no ETRecord at {args.etrecord}", "write one with `executorch-neutron compile ... --etrecord "
                                                          "FILE`")
    trace = Path(args.trace) if args.trace else Path(args.etdump or args.pte).with_suffix(".trace.json")
    inputs = _pte_inputs(args, [("--etdump", args.etdump), ("--trace", trace)], [("--etrecord", args.etrecord)])
    from .profiling import profile

    with _runtime_logs():  # a NeutronRuntimeError gets its hint in main()
        prof = profile(args.pte, inputs, runs=args.runs, etrecord=args.etrecord, etdump_path=args.etdump)
    print(prof)
    trace = prof.save_trace(trace)
    print(f"wrote {trace} (Chrome trace: open it in Perfetto or chrome://tracing)")
    return EXIT_OK


def _guide(args) -> int:
    """`guide [PAGE]`: the user guide shipped in the package (docs/guide of the repository), without a checkout."""
    from .core.messages import guide_pages

    pages = guide_pages()
    if not args.page:
        print("guide pages (`executorch-neutron guide PAGE` prints one):")
        for name, path in pages.items():
            title = next((line.lstrip("# ").strip() for line in path.read_text().splitlines() if line.strip()), "")
            print(f"  {name:<16} {title}")
        return EXIT_OK
    page = args.page.removesuffix(".md").rsplit("/", 1)[-1]
    if page not in pages:
        close = difflib.get_close_matches(page, list(pages), n=1)
        raise UserError(f"no guide page {args.page!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                        f"the pages: {', '.join(pages)}")
    print(pages[page].read_text(), end="")
    return EXIT_OK


def _report(args) -> int:
    import json

    from .core.memory import BudgetError

    budgets = _budgets(args)  # a bad size fails before the .pte is read
    summary = _inspect(args.pte)
    from .report.memory import check_budget, memory_section

    memory = memory_section(args.pte)
    if budgets:
        try:
            memory = check_budget(memory, **budgets)
        except BudgetError as exc:
            print(exc.section if not args.json else json.dumps({"memory": exc.section.to_dict()}, indent=2))
            raise
    from .report.pte_estimate import estimate_pte

    estimate = estimate_pte(args.pte)
    print(json.dumps({**summary.to_dict(), "memory": memory.to_dict(), "estimate": estimate.to_dict()}, indent=2)
          if args.json else f"{summary}\n{memory}\n{estimate}")
    if args.model_explorer:
        _model_explorer(args.pte, args.model_explorer, file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def _model_explorer(pte, directory, estimates=None, file=None) -> None:
    """Write the partitions' TFLite and Model Explorer node data (report/model_explorer.py) and say how to open
    them."""
    try:
        import model_explorer  # noqa: F401 - the node data is built with its own API
    except ImportError:
        raise UserError("--model-explorer needs Google's Model Explorer", "pip install ai-edge-model-explorer "
                        "(or executorch-neutron[explorer])") from None
    from .report.model_explorer import write_overlays

    for overlay in write_overlays(pte, directory, estimates):
        if overlay.files:
            print(f"wrote {overlay.name}: {', '.join(f.name for f in overlay.files)} in {directory}; open with: "
                  f"{overlay.command()}", file=file)
        else:
            print(f"{overlay.name}: no overlay ({overlay.note})", file=file)


def _compare(args) -> int:
    if args.max_samples < 1:
        raise UserError(f"--max-samples {args.max_samples}: at least one sample is compared", "pass --max-samples 8")
    with _dropping_log("produced a host-reference .pte"):  # compare writes no .pte
        result, model, inputs, calib = _lower(args)
    from .numerics import compare

    samples = load_samples(Path(args.samples), inputs) if args.samples else None
    cmp = compare(model if not args.qat else None, inputs, calib, result=result, samples=samples,
                  max_samples=args.max_samples)
    if args.json:
        import json

        print(json.dumps(cmp.to_dict(), indent=2, default=str))
    else:
        print(cmp)
    return EXIT_OK


def _evaluate(args) -> int:
    from .board import cli_support as board
    from .evaluation.data import check_path

    if (args.limit is not None and args.limit < 1) or args.calibration_samples < 1:
        raise UserError(f"--limit {args.limit} --calibration-samples {args.calibration_samples}: at least one sample "
                        "each", "pass --limit 100 --calibration-samples 32")
    data = check_path(args.data)  # before torch is imported
    _check_paths(args, [("--html", args.html)], [("--data", data)] if data.is_file() else [])
    runner = board.device_runner(args)
    target, model, inputs, bundled, bars = _load(args)
    from .evaluation import evaluate, load_dataset

    dataset = load_dataset(data, args.limit)
    given = args.calibration or bundled is not None or args.random_calibration
    calib = _calibration(args, inputs, bundled) if given and not args.qat else None
    with _dropping_log("produced a host-reference .pte"), _runtime_logs():  # evaluate writes no .pte
        result = evaluate(model, dataset, inputs, args.task, target, calibration=calib,
                          calibration_samples=args.calibration_samples, device=args.device, baud=args.baud,
                          runner=runner, timeout=args.timeout, progress=bars, quantize_model=not args.qat,
                          **_spec_options(args))
    if args.json:
        import json

        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result)
    if args.html:
        print(f"wrote {result.save_html(args.html)}", file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def _virtual_board(args) -> int:
    from .board.cli_support import virtual_board

    return virtual_board(args)


def _targets(args) -> int:
    import dataclasses
    import json

    from .target import all_targets

    if args.json:
        print(json.dumps({t.name: {**dataclasses.asdict(t), "kind": t.kind} for t in all_targets()}, indent=2))
        return EXIT_OK
    from .compile_spec import CONSTRAINT_PROFILES, DEFAULT_PROFILE

    print("constraint profiles (--constraints): " + "; ".join(
        f"{name}{' (default)' if name == DEFAULT_PROFILE else ''}: {text}" for name, text in CONSTRAINT_PROFILES.items()))
    for t in all_targets():
        print(t.describe())
        for note in t.notes:
            print(f"    - {note}")
    return EXIT_OK


def _ops(args) -> int:
    _import_torch()
    from .backends import register_limits
    from .target import KIND_NAMES, get_target

    register_limits()  # every back end's own limits join the registry

    target = get_target(args.target) if args.target else None
    if args.markdown:
        from .report.supported_ops import render_markdown

        print(render_markdown(target), end="")
        return EXIT_OK
    from .ops.registry import ALL_BACKENDS, ALL_PROFILES, PROFILED_BACKENDS, entries, fill_limits

    kind = target.kind if target is not None else None
    profiled = kind is None or kind in PROFILED_BACKENDS  # the profiles are some back ends' operator tables

    def tag(profiles, kinds=ALL_BACKENDS) -> str:
        only = ([] if profiles == ALL_PROFILES or not profiled else [" and ".join(sorted(profiles))]) + (
            [" and ".join(KIND_NAMES[k] for k in sorted(kinds))] if kinds != ALL_BACKENDS and kind is None else [])
        return "".join(f" [{t} only]" for t in only)

    if kind is None:
        print(f"operators and their constraints for every target ({', '.join(KIND_NAMES.values())}); constraint "
              f"profiles: {', '.join(sorted(ALL_PROFILES))} (a [profile only] tag marks what one profile alone has; "
              "a [<NPU> only] tag, a limit only that NPU's targets apply); --target T lists one target's")
    else:
        profiles = (f"; constraint profiles: {', '.join(sorted(ALL_PROFILES))} (a [profile only] tag marks what one "
                    "profile alone has)" if profiled else "; the constraint profiles do not apply to it")
        print(f"operators and their constraints for {target.name} ({KIND_NAMES[kind]} NPU), limits filled with its "
              f"values{profiles}")
    for e in entries():
        print(e.name + tag(e.profiles) + (f": {e.doc.splitlines()[0]}" if e.doc else ""))
        for c in e.constraints:
            if kind is not None and kind not in c.backends:
                continue
            print(f"    - {c.describe(target)}{tag(c.profiles, c.backends)}" + (f" (hint: {fill_limits(c.hint, target)})" if c.hint else ""))
    return EXIT_OK


def _bundled_models() -> list[str]:
    """The names of zoo.MODELS, read from zoo.py's source so that a wrong --model is refused before torch loads."""
    import ast

    tree = ast.parse((Path(__file__).parent / "models" / "zoo.py").read_text())
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "MODELS" for t in node.targets))
    return [key.value for key in table.keys]


def _demo(args) -> int:
    names = _bundled_models()
    if args.model not in names:
        close = difflib.get_close_matches(args.model, names, n=1)
        raise UserError(f"no bundled model {args.model!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                        f"the bundled models are {', '.join(sorted(names))}")
    _import_torch()
    from . import lower
    from .models import zoo
    from .numerics import compare

    model, inputs = zoo.MODELS[args.model]()
    calib = zoo.calibration(inputs, 16)
    print(f"Lowering the bundled {args.model} for {args.target} ...")
    result = lower(model, inputs, calib, target=args.target)
    path = result.save(args.output)
    print(result.report)
    print(f"\nwrote {path} ({len(result.pte)} bytes); stage seconds: "
          + ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items()))
    print("\nhost run of the .pte (ExecuTorch runtime + our host back end) vs the float and quantized PyTorch "
          "models:")
    print(compare(model, result=result, samples=calib[:8]))
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------------------

def _add_lowering_options(p: argparse.ArgumentParser) -> None:
    from .compile_spec import CONSTRAINT_PROFILES, DEFAULT_PROFILE, cli_options

    p.add_argument("model", help=MODEL_HELP)
    p.add_argument("--target", default="imxrt700", help="the target to lower for (the `targets` command lists them "
                                                         "with their NPU); default imxrt700")
    p.add_argument("--calibration", metavar="DIR_OR_FILE", help="calibration samples: a directory of .npy/.npz/.pt "
                   "files, or one such file; an array of shape (N, *input_shape) holds N samples")
    p.add_argument("--random-calibration", action="store_true", help="calibrate on random data (warns)")
    p.add_argument("--qat", "--quantized", dest="qat", action="store_true",
                   help="the factory returns an already quantized model (QAT: prepare_qat_pt2e, train, convert_pt2e); "
                        "skip PTQ (quantize_model=False)")
    g = p.add_argument_group("NeutronCompileSpec options")
    g.add_argument("--extra-flags", default="", help="extra flags passed verbatim to the target's NPU compiler")
    g.add_argument("--operators-not-to-delegate", nargs="+", metavar="OP",
                   help="operators kept on the CPU, e.g. aten.convolution.default (comma or space separated)")
    g.add_argument("--no-neutron-format-conversion", action="store_true",
                   help="use_neutron_for_format_conversion=False: partitions take channels-last inputs/outputs and "
                        "the runtime transposes on the CPU (default: Transpose ops inside the partition, on the NPU)")
    g.add_argument("--intermediates", metavar="DIR", help="write each partition's int8 TFLite (<tag>.tflite) here")
    g.add_argument("--constraints", choices=sorted(CONSTRAINT_PROFILES), default=DEFAULT_PROFILE,
                   help="operator table the partitioner follows: " + "; ".join(
                       f"{name}: {text.split(' (')[0]}" for name, text in CONSTRAINT_PROFILES.items())
                   + f" (default {DEFAULT_PROFILE}); `executorch-neutron ops` lists each table")
    b = p.add_argument_group("options of one back end (given for another's target, they are refused)")
    for option in cli_options():
        option.add_to(b)
    _add_precision_options(p)


def _add_pte_inputs(p: argparse.ArgumentParser) -> None:
    """The .pte and its --input files (`run`, `profile`; read by `_pte_inputs`)."""
    p.add_argument("pte", type=Path, help="the .pte to run")
    p.add_argument("--input", action="extend", nargs="+", metavar="FILE",
                   help="one .npy/.pt per model input, in order: --input a.npy b.npy (or repeat --input)")


def _add_global_options(p: argparse.ArgumentParser, default) -> None:
    p.add_argument("--verbose", action="store_true", default=default, help="show tracebacks and debug logs")
    p.add_argument("--quiet", action="store_true", default=default, help="no progress bars (they are off anyway "
                                                                          "when stderr is not a terminal)")


def build_parser() -> argparse.ArgumentParser:
    from .board import cli_support as board
    from .target import all_target_names

    p = argparse.ArgumentParser(prog="executorch-neutron", description="lower PyTorch models for NPU targets with ExecuTorch, run and check the .pte (`targets` lists the targets)")
    _add_global_options(p, default=False)
    common = argparse.ArgumentParser(add_help=False)  # the same options after the command (`compile ... --verbose`)
    _add_global_options(common, default=argparse.SUPPRESS)  # given there, it overrides; absent, it leaves p's
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser = functools.partial(sub.add_parser, parents=[common])

    d = sub.add_parser("demo", help="lower a bundled example model, run the .pte on the host, print the report")
    d.add_argument("--model", default="cifarnet", help="a bundled example network of models/zoo.py (default cifarnet; a "
                                                        "wrong name lists them)")
    d.add_argument("--target", choices=all_target_names(), default="imxrt700")
    d.add_argument("-o", "--output", type=Path, default=Path("out/demo.pte"))
    d.set_defaults(func=_demo)

    c = sub.add_parser("compile", help="quantize and lower a model to a .pte; print (and save) the delegation report")
    _add_lowering_options(c)
    c.add_argument("-o", "--output", type=Path, required=True, help="the .pte to write")
    c.add_argument("--report", metavar="FILE", help="save the report: .md, .html, .json (schema: report/schema.json)")
    c.add_argument("--allow-cpu-only", action="store_true", help="exit 0 even when nothing was delegated")
    c.add_argument("--no-host-check", action="store_true", help="do not run the finished program once on the host "
                   "before writing it (the check refuses a .pte that fails or crashes there; it takes about a second)")
    c.add_argument("--etrecord", metavar="FILE", help="also write ExecuTorch's ETRecord (for `profile`/Inspector)")
    c.add_argument("--model-explorer", metavar="DIR", help="also write each partition's TFLite and Model Explorer "
                   "node data (as `report --model-explorer`)")
    c.add_argument("--accuracy-target", type=float, metavar="SQNR_DB", help="promote the layers that cost the most "
                   "accuracy (int16 where the NPU has it, else float on the CPU) until the .pte reaches this SQNR vs "
                   "float on the calibration data; prints the choice and its cost against all-int8")
    board.add_compile_options(c)
    for kind in ("sram", "flash"):
        c.add_argument(f"--{kind}-budget", metavar="SIZE", help=f"refuse (exit 2, nothing written) when the program "
                       f"needs more {kind.upper() if kind == 'sram' else kind} than SIZE (see the report's memory "
                       f"section): bytes, or 64KiB / 64K (x1024), 64KB (x1000), 2MiB / 2M, 2MB")
    c.set_defaults(func=_compile)

    r = sub.add_parser("run", help="run a .pte on the host (or on a board: --device PORT) and summarize its outputs")
    _add_pte_inputs(r)
    r.add_argument("--save-outputs", metavar="DIR", help="write output_<i>.npy files here")
    r.add_argument("--etdump", metavar="FILE", help="write the run's ExecuTorch profiling events (ETDump) here")
    r.add_argument("--random-input", action="store_true", help="random inputs of the program's shapes instead of "
                   "--input files (warns: the outputs mean nothing)")
    board.add_run_options(r)
    r.set_defaults(func=_run)

    f = sub.add_parser("profile", help="run a .pte on the host N times with ETDump on; per-event times (Inspector)")
    _add_pte_inputs(f)
    f.add_argument("--random-input", action="store_true", help="random inputs of the program's shapes (warns)")
    f.add_argument("--runs", type=int, default=10, help="executions to profile (default 10)")
    f.add_argument("--etrecord", metavar="FILE", help="ETRecord from `compile --etrecord`: names the model's ops")
    f.add_argument("--etdump", metavar="FILE", help="keep the ETDump here (default: not kept)")
    f.add_argument("--trace", metavar="FILE", help="write the runs as a Chrome trace JSON here, for Perfetto or "
                                                   "chrome://tracing (default: beside the ETDump if --etdump is "
                                                   "given, else beside the .pte: MODEL.trace.json)")
    f.set_defaults(func=_profile)

    s = sub.add_parser("report", help="what is inside a .pte: methods, CPU kernels, delegates and payloads, the "
                       "memory it needs and its time estimate")
    s.add_argument("pte", type=Path, help="the .pte to look inside")
    s.add_argument("--json", action="store_true", help="print the summary, the memory section and the estimate as JSON "
                   "(schema: report/schema.json in the package)")
    for kind in ("sram", "flash"):
        s.add_argument(f"--{kind}-budget", metavar="SIZE", help=f"hold the program's "
                       f"{kind.upper() if kind == 'sram' else kind} total against SIZE: exit 2 when it needs more "
                       f"(sizes as compile takes them)")
    s.add_argument("--model-explorer", metavar="DIR", help="write each partition's TFLite and Model Explorer node "
                   "data (where each operator runs; per-layer cycles where estimated) into DIR")
    s.set_defaults(func=_report)

    m = sub.add_parser("compare", help="float vs quantized PyTorch vs the .pte, per output and per partition")
    _add_lowering_options(m)
    m.add_argument("--samples", metavar="DIR", help="evaluation samples (default: the calibration samples)")
    m.add_argument("--max-samples", type=int, default=8, help="at most this many calibration samples (default 8)")
    m.add_argument("--json", action="store_true", help="print the comparison as JSON")
    m.set_defaults(func=_compare)

    e = sub.add_parser("evaluate", help="accuracy (top-1/top-5) or error (RMSE, MAE, cosine, SQNR) on a labelled "
                       "data set: float vs quantized PyTorch vs the .pte on the host (and on a board)")
    _add_lowering_options(e)
    e.add_argument("--data", required=True, metavar="FILE_OR_DIR", help="labelled samples: an .npz with arrays x "
                   "and y, or a directory of .npy samples with labels.txt ('FILE LABEL' per line) or labels.npy")
    e.add_argument("--task", choices=("classification", "regression"), help="default: classification when y holds "
                   "whole-number class indices of the model's outputs, else regression (reconstruction: y = x)")
    e.add_argument("--limit", type=int, metavar="N", help="evaluate only the first N samples")
    e.add_argument("--calibration-samples", type=int, default=32, metavar="N", help="without --calibration, "
                   "calibrate on the data set's first N samples (default 32)")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.add_argument("--html", metavar="FILE", help="write the delegation report with an accuracy section as HTML")
    board.add_device_options(e.add_argument_group("on a board (NXP's executorch_modelrunner firmware over a serial "
                                                  "port)"))
    e.set_defaults(func=_evaluate)

    board.add_virtual_board_parser(sub)
    sub.choices["virtual-board"].set_defaults(func=_virtual_board)

    t = sub.add_parser("targets", help="the targets, their NPUs and their facts")
    t.add_argument("--json", action="store_true", help="print the targets as JSON")
    t.set_defaults(func=_targets)

    gd = sub.add_parser("guide", help="print a page of the user guide shipped in the package (no page: list them)")
    gd.add_argument("page", nargs="?", help="a page name: cli, board, precision, report, troubleshooting, ...")
    gd.set_defaults(func=_guide)

    o = sub.add_parser("ops", help="the supported operators and their constraints")
    o.add_argument("--markdown", action="store_true", help="SUPPORTED_OPS.md")
    o.add_argument("--target", help="fill the limits with this target's values (default: name them)")
    o.set_defaults(func=_ops)
    return p


# The one hint table: (error class name, hint, exit code), most specific class first; matched along the error's
# class hierarchy by name, so that an error of a stage not imported yet needs no import here.
_HINTS = (
    ("UnknownTargetError", "see `executorch-neutron targets`", EXIT_BAD_INPUT),
    ("PathCollision", "give every output its own path, apart from the command's inputs", EXIT_BAD_INPUT),
    ("FileNotFoundError", "check the path", EXIT_BAD_INPUT),
    ("HostBuildError", "the host runtime library could not be built or loaded: see the message", EXIT_FAIL),
    ("MissingKernel", "the .pte is sound; keep that operator off the model's CPU part (see the compile warning), or "
                      "run it on a runtime built with a kernel library that registers it", EXIT_FAIL),
    ("InvalidProgram", "the .pte is damaged: compile it again (`executorch-neutron compile ... -o FILE.pte`)",
     EXIT_BAD_INPUT),
    ("NeutronRuntimeError", "check the input files against `executorch-neutron report MODEL.pte`", EXIT_BAD_INPUT),
    ("PrecisionRuleError", "fix the --precision setting (KEY=PRECISION items; `executorch-neutron compile --help` "
                           "shows the syntax): int16 needs an Ethos-U target (`executorch-neutron targets`)",
     EXIT_BAD_INPUT),
    ("LoweringError", "the model could not be exported or lowered; --verbose shows where", EXIT_BAD_INPUT),
    ("BudgetError", "the memory section above lists what the program holds where; raise the budget or shrink the "
                    "model (a smaller input, fewer channels, --precision)", EXIT_BAD_INPUT),
)


def _hint_for(exc: Exception) -> tuple[str | None, int]:
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, hint, code in _HINTS:
        if name in names:
            return hint, code
    return "--verbose shows the traceback", EXIT_FAIL


def _import_torch() -> None:
    """Import torch and ExecuTorch with Ctrl-C held: these imports run Python callbacks from C++, where a
    KeyboardInterrupt aborts the process ("terminate called after throwing ... KeyboardInterrupt"); a Ctrl-C during
    them is raised once they are done (a second or two later), as a KeyboardInterrupt main() reports. Each command
    calls it after the checks of its arguments that need no torch."""
    with sigint_held():
        import executorch.exir  # noqa: F401 - imports torch
        import torchao.quantization.pt2e  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C before the command starts
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(message)s")
    logging.getLogger("torchao").setLevel(logging.ERROR)
    try:
        return args.func(args)
    except BrokenPipeError:  # `executorch-neutron ops | head`
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C: files being written are left as they were (atomic writes)
        if args.verbose:
            traceback.print_exc()
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # one line for users; --verbose adds the traceback above it, never changes the exit code
        if args.verbose:
            traceback.print_exc()
        hint, code = (exc.hint, exc.code) if isinstance(exc, UserError) else _hint_for(exc)
        message = elide(" ".join(str(exc).split()) or type(exc).__name__, 2000)  # its end says what to do
        print(f"error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return code

