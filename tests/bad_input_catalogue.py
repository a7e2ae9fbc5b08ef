"""The bad-input and fault catalogue: case -> what the user does, the exit code and the message they get.

tests/test_bad_input_catalogue.py runs every case (crash-prone ones in a child process) and checks the exit code
and the message fragment; the table of docs/guide/troubleshooting.md is generated from this one
(`python tests/bad_input_catalogue.py` prints it, `--write-docs` writes it there) and a test fails when the two
disagree.

A case is a CLI command (`argv`, run as `python -m executorch_neutron ...`) or a Python snippet (`script`, run as
`python -c ...`; an uncaught exception exits 1). `{d}` is the directory holding the files of `catalogue_files()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Case:
    problem: str  # the troubleshooting page: what the user did
    fix: str  # the troubleshooting page: what to do
    code: int  # expected exit code
    fragment: str  # expected in stdout+stderr
    argv: tuple[str, ...] = ()
    script: str = ""
    env: dict = field(default_factory=dict)  # extra environment ({d} expanded)
    child: bool = False  # run in a child process even for a CLI command (crash-prone, environment, signals)
    intact: tuple[str, ...] = ()  # files (under {d}) that must keep their bytes (and stay symlinks if they are)


RUN = ("run", "{d}/base.pte", "--input", "{d}/x.npy")
COMPILE = ("compile", "--random-calibration", "-o", "{d}/out.pte")
CLI = "import sys; from executorch_neutron import cli; "  # a CLI command inside a script (patched or checked after)
API_RUN = ("import numpy, torch; from executorch_neutron.runtime import run; "
           "x = torch.from_numpy(numpy.load('{d}/x.npy')); ")

def _overwrites_model(problem: str, output: str, model: str = "{d}/victim.py", intact: tuple = ()) -> Case:
    """`compile MODEL -o OUTPUT` where OUTPUT resolves to the model file: refused, the model file intact."""
    spec = model + (":factory" if model.endswith(".py") else "")
    return Case(problem, "choose another output path", 2, f"-o {output} is the same file as the model {model}",
                argv=("compile", spec, "--random-calibration", "-o", output),
                intact=(model.removeprefix("{d}/"),) + intact)


CASES: dict[str, Case] = {
    # --- crashes of the past: now a refusal with a message (always in a child process) -------------------------
    "quantize_arg_out_of_range": Case(
        "`run` a .pte whose CPU quantize op has a corrupted quant_max", "re-export the .pte", 2,
        "quant_max 68719476863", argv=("run", "{d}/bad_qmax.pte", "--input", "{d}/x.npy"), child=True),
    "operator_name_not_utf8_api": Case(
        "`runtime.run(bytes, ...)` on a .pte whose operator name is not UTF-8", "re-export the .pte", 1,
        "InvalidProgram: the data is not a valid .pte: ExecuTorch cannot parse it",
        script=API_RUN + "run(open('{d}/bad_utf8.pte', 'rb').read(), [x])"),
    "truncated_host_library": Case(
        "the cached host library is truncated (interrupted build or copy)", "nothing: it is rebuilt", 0,
        "is damaged or unverified", child=True,
        script=("import os; from executorch_neutron.runtime import build; lib = build.library_path(); "
                "os.truncate(lib, lib.stat().st_size // 2); " + API_RUN + "run('{d}/base.pte', [x]); print('ran')"),
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/cache_truncated"}),
    "run_from_threads": Case(
        "`runtime.run` from several threads, then interpreter exit", "nothing: calls are serialized", 0,
        "4 threads ok",
        script=(API_RUN + "import threading; data = open('{d}/base.pte', 'rb').read(); "
                "ts = [threading.Thread(target=lambda: [run(data, [x]) for _ in range(3)]) for _ in range(4)]; "
                "[t.start() for t in ts]; [t.join() for t in ts]; print('4 threads ok')")),
    # --- silently wrong or lost before ------------------------------------------------------------------------
    "payload_changed": Case(
        "`run` a .pte whose host-reference payload was changed", "re-export the .pte", 2, "checksum mismatch",
        argv=("run", "{d}/bad_payload.pte", "--input", "{d}/x.npy")),
    "nan_input": Case(
        "`run` with NaN/Inf in an input", "clean the input (the outputs are meaningless)", 0,
        "input 0 holds NaN values", argv=("run", "{d}/base.pte", "--input", "{d}/nan.npy")),
    "nan_calibration": Case(
        "NaN/Inf in a calibration file", "clean or drop that sample", 2, "calibration file {d}/nancal/1.npy",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/nancal", "-o", "{d}/out.pte")),
    "budget_not_a_size": Case(
        "`compile --sram-budget 64QB`: a budget that is no size", "write a size: 65536, 64KiB, 64KB, 2MiB, 2MB", 2,
        "size '64QB' is not a size", argv=("compile", "{d}/model.py:factory", "--sram-budget", "64QB") + COMPILE[1:]),
    "over_memory_budget": Case(
        "`compile --sram-budget 1KiB` for a model that needs more SRAM (no .pte is written)",
        "raise the budget, or shrink the model: the printed memory section and the message name every part", 2,
        "does not fit its memory budget: SRAM: needs",
        argv=("compile", "{d}/model.py:factory", "--sram-budget", "1KiB") + COMPILE[1:]),
    "buffer_mutation": Case(
        "a model whose forward() updates a buffer (a counter)", "keep that state outside the model", 2,
        "updates buffer(s) calls", argv=("compile", "{d}/model.py:counter") + COMPILE[1:]),
    "zero_dim_tensor": Case(
        "0-d (scalar) tensors between NPU operators", "nothing: those ops stay on the CPU with a reason", 0,
        "0-d (scalar) tensor", argv=("compile", "{d}/model.py:scalar", "--allow-cpu-only") + COMPILE[1:]),
    "conv3d": Case(
        "a Conv3d with more than 64 output depth planes (not rewritten into 2-D convolutions; the host runtime has "
        "no 3-D convolution)", "split the depth axis, or use Conv2d", 0,
        "3-D convolution (Conv3d) left on the CPU",
        argv=("compile", "{d}/model.py:conv3d", "--allow-cpu-only") + COMPILE[1:]),
    # --- unclear messages before ------------------------------------------------------------------------------
    "factory_returns_string": Case(
        "the factory returns `(model, \"str\")`", "return (module, example_inputs[, calibration])", 2,
        "item 1 (example inputs) is str", argv=("compile", "{d}/model.py:returns_str") + COMPILE[1:]),
    "factory_items_swapped": Case(
        "the factory returns `(inputs, model)`", "return (module, example_inputs[, calibration])", 2,
        "are the items swapped?", argv=("compile", "{d}/model.py:swapped") + COMPILE[1:]),
    "factory_bad_calibration": Case(
        "the factory's third item is not a list of samples", "a list of tensors or tuples of tensors", 2,
        "item 2 (calibration samples) is int", argv=("compile", "{d}/model.py:bad_calibration", "-o",
                                                     "{d}/out.pte")),
    "inputs_do_not_fit": Case(
        "example inputs that do not fit the model", "inputs with the shapes forward() takes", 2,
        "do not fit the model", argv=("compile", "{d}/model.py:wrong_inputs") + COMPILE[1:]),
    "garbage_pt2": Case(
        "a `.pt2` that is not a torch.export program", "torch.export.save(torch.export.export(model, inputs), f)",
        2, "cannot load {d}/garbage.pt2 as a torch.export program", argv=("compile", "{d}/garbage.pt2") + COMPILE[1:]),
    "int64_random_calibration": Case(
        "int64 (index) inputs with `--random-calibration`", "nothing: random data follows the input dtypes", 0,
        "wrote {d}/out.pte", argv=("compile", "{d}/model.py:embedding", "--allow-cpu-only") + COMPILE[1:]),
    "corrupt_npy": Case(
        "a corrupt `.npy` input", "write it again with numpy.save", 2, "cannot read {d}/corrupt.npy",
        argv=("run", "{d}/base.pte", "--input", "{d}/corrupt.npy")),
    "unknown_operator_name": Case(
        "`--operators-not-to-delegate` with an unknown name", "use a name from the list in the message", 2,
        "unknown operator 'aten.frobnicate'; valid names",
        argv=("compile", "{d}/model.py:factory", "--operators-not-to-delegate", "aten.frobnicate") + COMPILE[1:]),
    "aten_operator_name": Case(
        "`--operators-not-to-delegate aten.conv2d.default` (an ATen name)", "nothing: mapped to its edge form", 0,
        "excluded by operators_not_to_delegate",
        argv=("compile", "{d}/model.py:factory", "--allow-cpu-only", "--operators-not-to-delegate",
              "aten.conv2d.default") + COMPILE[1:]),
    "interrupted": Case(
        "Ctrl-C", "nothing: files being written keep their previous content", 130, "error: interrupted",
        argv=("compile", "{d}/model.py:interrupt") + COMPILE[1:], child=True),
    "cxx_build_fails": Case(
        "the C++ build of the host library fails", "fix the compiler ($CXX) or the cache directory", 1,
        "fake.cpp:1:1: error: boom", argv=RUN, child=True,
        env={"CXX": "{d}/failing-cxx", "EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/cache_failing"}),
    "cache_dir_is_a_file": Case(
        "`$EXECUTORCH_NEUTRON_CACHE_DIR` is a file or read-only", "point it at a writable directory", 1,
        "point $EXECUTORCH_NEUTRON_CACHE_DIR at a writable directory", argv=RUN, child=True,
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/x.npy"}),
    "cache_dir_read_only": Case(
        "`$EXECUTORCH_NEUTRON_CACHE_DIR` is a read-only directory", "point it at a writable directory", 1,
        "point $EXECUTORCH_NEUTRON_CACHE_DIR at a writable directory", argv=RUN, child=True,
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "/sys/kernel"}),  # sysfs: not writable, even for root (tests run as root)
    "lower_from_two_threads": Case(
        "`lower()` from two threads at once", "nothing: the calls are serialized", 0, "2 lowered",
        script=("import sys, threading, torch; sys.path.insert(0, '{d}'); import model; "
                "from executorch_neutron import lower; out = []; "
                "f = lambda: out.append(lower(*model.factory(), reference=True)); "
                "ts = [threading.Thread(target=f) for _ in range(2)]; [t.start() for t in ts]; "
                "[t.join() for t in ts]; print(len(out), 'lowered')")),

    # --- round 2: an output never replaces an input or another output of the same command ----------------------
    "output_is_model_source": _overwrites_model("`compile model.py:f -o model.py`", "{d}/victim.py"),
    "output_is_input_pt2": _overwrites_model("`compile victim.pt2 -o victim.pt2`", "{d}/victim.pt2",
                                             "{d}/victim.pt2"),
    "report_is_output": Case(
        "`compile ... --report same.pte -o same.pte`", "give each output its own path", 2,
        "--report {d}/same.pte is the same file as -o {d}/same.pte",
        argv=COMPILE[:1] + ("{d}/model.py:factory", "--random-calibration", "--report", "{d}/same.pte", "-o",
                            "{d}/same.pte"), intact=("same.pte",)),
    "etrecord_is_output": Case(
        "`compile ... --etrecord same.pte -o same.pte`", "give each output its own path", 2,
        "--etrecord {d}/same.pte is the same file as -o {d}/same.pte",
        argv=("compile", "{d}/model.py:factory", "--random-calibration", "--etrecord", "{d}/same.pte", "-o",
              "{d}/same.pte"), intact=("same.pte",)),
    "etdump_is_program": Case(
        "`run x.pte --etdump x.pte`", "choose another --etdump path", 2,
        "--etdump {d}/victim.pte is the same file as the program {d}/victim.pte",
        argv=("run", "{d}/victim.pte", "--input", "{d}/x.npy", "--etdump", "{d}/victim.pte"),
        intact=("victim.pte",)),
    "profile_etdump_is_input": Case(
        "`profile x.pte --input x.npy --etdump x.npy`", "choose another --etdump path", 2,
        "--etdump {d}/victim.npy is the same file as --input {d}/victim.npy",
        argv=("profile", "{d}/base.pte", "--input", "{d}/victim.npy", "--runs", "1", "--etdump", "{d}/victim.npy"),
        intact=("victim.npy",)),
    "output_through_symlink_to_model": _overwrites_model(
        "`-o link.py` where link.py is a symlink to the model's source", "{d}/link.py", intact=("link.py",)),
    "output_through_dotdot": _overwrites_model("`-o sub/../model.py`", "{d}/sub/../victim.py"),
    "output_is_hard_link_of_model": _overwrites_model(
        "`-o hard.py` where hard.py is a hard link of the model's source", "{d}/hard.py"),
    "save_outputs_over_input": Case(
        "`run --input outs/output_0.npy --save-outputs outs`", "save the outputs elsewhere", 2,
        "--save-outputs {d}/outs/output_0.npy is the same file as --input {d}/outs/output_0.npy",
        argv=("run", "{d}/base.pte", "--input", "{d}/outs/output_0.npy", "--save-outputs", "{d}/outs"),
        intact=("outs/output_0.npy",)),
    "report_is_calibration_file": Case(
        "`--report cal/0.npy` inside the calibration directory", "choose another report path", 2,
        "--report {d}/cal/0.npy is the same file as --calibration {d}/cal/0.npy",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/cal", "--report", "{d}/cal/0.npy", "-o",
              "{d}/out.pte"), intact=("cal/0.npy",)),
    # --- round 2: an interrupted write keeps the old file; a symlinked output is written through ---------------
    "sigint_before_replacing_pte": Case(
        "Ctrl-C after the new .pte is written to its temporary file, before it replaces the old one",
        "nothing: the old file is kept, no temporary file is left", 130, "error: interrupted", child=True,
        script=("import os, signal; real = os.fsync\n"
                "def fsync(fd):\n    real(fd); signal.raise_signal(signal.SIGINT)\n"
                "os.fsync = fsync\n" + CLI + "sys.exit(cli.main(['compile', '{d}/model.py:factory', "
                "'--random-calibration', '-o', '{d}/old.pte']))"), intact=("old.pte",)),
    "sigint_before_replacing_report": Case(
        "Ctrl-C while the `--report x.html` file replaces the old one", "nothing: the old report is kept", 130,
        "error: interrupted", child=True,
        script=("import os, signal; real = os.fsync\n"
                "def fsync(fd):\n    real(fd)\n    if 'old.html' in os.readlink(f'/proc/self/fd/{{fd}}'): "
                "signal.raise_signal(signal.SIGINT)\n"
                "os.fsync = fsync\n" + CLI + "sys.exit(cli.main(['compile', '{d}/model.py:factory', "
                "'--random-calibration', '-o', '{d}/new.pte', '--report', '{d}/old.html']))"),
        intact=("old.html",)),
    "output_is_a_symlink": Case(
        "`-o model.pte` where model.pte is a symlink into firmware/", "nothing: written through to its target", 0,
        "symlink kept: True; target written: True", child=True,
        script=(CLI + "import os; code = cli.main(['compile', '{d}/model.py:factory', '--random-calibration', '-o', "
                "'{d}/fw_link.pte']); print('symlink kept:', os.path.islink('{d}/fw_link.pte') and code == 0, end='; '); "
                "print('target written:', open('{d}/firmware/model.pte', 'rb').read() != b'old firmware')")),
    "long_output_name": Case(
        "a legal long output file name (250 characters)", "nothing: it is written", 0, "wrote {d}/" + "p" * 246,
        argv=("compile", "{d}/model.py:factory", "--random-calibration", "-o", "{d}/" + "p" * 246 + ".pte")),
    # --- round 2: no silent wrong numbers ----------------------------------------------------------------------
    "channels_last_input": Case(
        "`runtime.run` with a channels_last (NHWC memory format) tensor", "nothing: any memory format is taken", 0,
        "same outputs: True",
        script=API_RUN + "a = run('{d}/base.pte', [x])[0]; b = run('{d}/base.pte', "
                         "[x.to(memory_format=torch.channels_last)])[0]; print('same outputs:', torch.equal(a, b))"),
    "fortran_order_npy": Case(
        "`run --input` a Fortran-ordered .npy", "nothing: the values are what counts", 0, "same outputs: True",
        script=(API_RUN + CLI + "import numpy as np; cli.main(['run', '{d}/base.pte', '--input', '{d}/fortran.npy', "
                "'--save-outputs', '{d}/fortran_out']); a = np.load('{d}/fortran_out/output_0.npy'); "
                "print('same outputs:', np.array_equal(a, run('{d}/base.pte', [x])[0].numpy()))")),
    "forward_mutates_input": Case(
        "`lower()` on a model whose forward() changes its input in place (`x.mul_(2)`)",
        "nothing: the caller's tensors are not touched", 0, "input untouched: True",
        script=("import sys, torch; sys.path.insert(0, '{d}'); import model; from executorch_neutron import lower; "
                "m, inputs = model.inplace(); before = inputs[0].clone(); lower(m, inputs, reference=True); "
                "print('input untouched:', torch.equal(before, inputs[0]))")),
    "zero_dim_input_scale": Case(
        "a 0-d tensor input that scales a convolution output, run with another value than calibrated",
        "nothing: the scalar stays float", 0, "matches float: True",
        script=("import sys, torch; sys.path.insert(0, '{d}'); import model; from executorch_neutron import lower; "
                "from executorch_neutron.runtime import run; m, inputs = model.scalar_input(); "
                "r = lower(m, inputs, reference=True); x = (inputs[0], torch.tensor(2.0)); "
                "out = run(r.pte, list(x))[0]; ref = m(*x).detach(); err = float((out - ref).abs().max() / "
                "ref.abs().max()); print('matches float:', err < 0.05, err)")),
    "empty_calibration_api": Case(
        "`lower(model, inputs, [])`: an empty calibration list", "pass at least one calibration sample", 1,
        "calibration needs at least one sample",
        script=("import sys; sys.path.insert(0, '{d}'); import model; from executorch_neutron import lower; "
                "m, inputs = model.factory(); lower(m, inputs, [], reference=True)")),
    "empty_calibration_batch": Case(
        "`--calibration DIR` whose only file is an empty batch (shape (0, ...))", "save at least one sample", 2,
        "{d}/emptycal holds no calibration samples",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/emptycal", "-o", "{d}/out.pte")),
    "bundled_calibration_wrong_shape": Case(
        "the factory's calibration samples have another shape than the example inputs",
        "samples shaped like the example inputs", 2, "calibration sample 1 input 0 has shape [1, 3, 5, 5]",
        argv=("compile", "{d}/model.py:bundled_wrong_shape", "-o", "{d}/out.pte")),
    "negative_max_samples": Case(
        "`compare --max-samples -1`", "pass a positive number", 2, "--max-samples -1: at least one sample",
        argv=("compare", "{d}/model.py:factory", "--random-calibration", "--max-samples", "-1")),
    "evaluate_missing_data": Case(
        "`evaluate --data FILE` that does not exist", "an .npz with arrays x and y, or a directory of .npy samples "
        "with labels.txt", 2, "no such file or directory: {d}/nope.npz",
        argv=("evaluate", "{d}/model.py:factory", "--data", "{d}/nope.npz")),
    "evaluate_data_without_labels": Case(
        "`evaluate --data DIR` whose directory has no labels file", "add labels.txt ('FILE LABEL' per line) or "
        "labels.npy", 2, "{d}/nancal has no labels.txt or labels.npy",
        argv=("evaluate", "{d}/model.py:factory", "--data", "{d}/nancal")),
    "calibration_and_random_calibration": Case(
        "`--calibration DIR` and `--random-calibration` together", "pass one of them", 2,
        "--calibration and --random-calibration exclude each other",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/cal", "--random-calibration", "-o",
              "{d}/out.pte")),
    "bundled_calibration_and_random_calibration": Case(
        "`--random-calibration` for a factory that returns its own calibration samples", "pass one of them", 2,
        "the factory's calibration samples and --random-calibration exclude each other",
        argv=("compile", "{d}/model.py:bundled", "--random-calibration", "-o", "{d}/out.pte")),
    "calibration_dir_and_bundled_calibration": Case(
        "`--calibration DIR` for a factory that returns its own calibration samples", "pass one of them", 2,
        "--calibration and the factory's calibration samples exclude each other",
        argv=("compile", "{d}/model.py:bundled", "--calibration", "{d}/cal", "-o", "{d}/out.pte")),
    "report_named_like_an_intermediate": Case(
        "`--report DIR/neutron_0.tflite --intermediates DIR`: a partition's TFLite would replace the report",
        "choose another output path", 2, "partition files named like neutron_0.tflite",
        argv=("compile", "{d}/model.py:factory", "--random-calibration", "--intermediates", "{d}",
              "--report", "{d}/neutron_0.tflite", "-o", "{d}/out.pte")),
    "buffer_written_by_index": Case(
        "a model whose forward() writes a buffer through indexing (`self.stat[0] = ...`)",
        "keep that state outside the model", 2, "updates buffer(s) stat",
        argv=("compile", "{d}/model.py:index_buffer") + COMPILE[1:]),
    "factory_calls_sys_exit": Case(
        "a factory that calls `sys.exit()`", "return (module, example_inputs) instead of exiting", 2,
        "model.py:exits called sys.exit(0)", argv=("compile", "{d}/model.py:exits") + COMPILE[1:], child=True),
    # --- round 2: no aborts ------------------------------------------------------------------------------------
    "already_quantized_model": Case(
        "`lower()` on a model that is already quantized (`convert_pt2e` output)",
        "pass quantize_model=False (CLI: --qat)", 1, "is already quantized",
        script=("import sys, torch; sys.path.insert(0, '{d}'); import model; from executorch_neutron import lower; "
                "m, inputs = model.factory(); q = lower(m, inputs, reference=True).quantized_model; "
                "lower(q, inputs, reference=True)"), child=True),
    "pte_input_sizes_edited": Case(
        "`run` a .pte whose program was edited to other input sizes", "re-export the .pte", 2,
        "reads a tensor of sizes [1, 3, 12, 5] and writes one of sizes [1, 3, 6, 5]", argv=("run", "{d}/bad_sizes.pte", "--input", "{d}/x12.npy"), child=True),
    # --- round 2: errors that say what is wrong ----------------------------------------------------------------
    "model_is_a_directory": Case(
        "a directory where a model file is expected", "pass a .py:factory or a .pt2 file", 2,
        "{d}/adir.pt2 is a directory", argv=("compile", "{d}/adir.pt2") + COMPILE[1:]),
    "pte_is_a_directory": Case(
        "a directory where a .pte is expected", "pass a .pte file", 2, "{d}/adir.pt2 is a directory",
        argv=("run", "{d}/adir.pt2", "--input", "{d}/x.npy")),
    "factory_raises_keyerror": Case(
        "the factory raises KeyError", "fix the factory (its error is shown)", 2,
        "model.py:keyerror failed: KeyError: 'weights'", argv=("compile", "{d}/model.py:keyerror") + COMPILE[1:]),
    "pte_magic_changed": Case(
        "`run` a file whose .pte magic (file identifier) was changed", "pass a .pte", 2,
        "not an ExecuTorch program: its file identifier is b'XT12'",
        argv=("run", "{d}/bad_magic.pte", "--input", "{d}/x.npy"), child=True),
    "pte_backend_id_changed": Case(
        "`run` a .pte whose delegate backend id was changed", "run it where that backend is registered", 2,
        "is for backend 'NeutronBackenX', which is not registered",
        argv=("run", "{d}/bad_backend.pte", "--input", "{d}/x.npy"), child=True),
    "pte_operator_renamed": Case(
        "`run` a .pte whose operator name was changed", "re-export the .pte", 2,
        "operator 'aten::flxor.out' of method 'forward' has no registered kernel",
        argv=("run", "{d}/bad_opname.pte", "--input", "{d}/x.npy"), child=True),
    "cpu_operator_without_host_kernel_compile": Case(
        "`compile` a model whose CPU part sorts (`aten::sort.values` is no portable kernel)",
        "keep the operator off the CPU part, or use a runtime that registers it", 0,
        "aten::sort.values, left on the CPU, has no kernel in the host runtime",
        argv=("compile", "{d}/model.py:sorting", "--random-calibration", "-o", "{d}/out.pte")),
    "cpu_operator_without_host_kernel_run": Case(
        "`run` that .pte on the host", "the .pte is sound: see the compile warning", 1,
        "operator 'aten::sort.values' of method 'forward' has no kernel in this runtime",
        argv=("run", "{d}/sorting.pte", "--input", "{d}/x_sort.npy")),
    "run_input_is_a_directory": Case(
        "`run --input DIR` (a directory of samples)", "one --input FILE per model input", 2,
        "{d}/cal is a directory, not a tensor file", argv=("run", "{d}/base.pte", "--input", "{d}/cal")),
    "run_integer_input_for_float": Case(
        "`run --input` an int64 `.npy` for a float input", "save the input as float32", 2,
        "holds int64 values, but input 0 of the program is float32",
        argv=("run", "{d}/base.pte", "--input", "{d}/x_int64.npy")),
    "run_a_tflite_renamed_pte": Case(
        "`run` a `.tflite` renamed `.pte`", "compile the PyTorch model", 2,
        "it is a TFLite model (file identifier b'TFL3'), not a .pte",
        argv=("run", "{d}/model_tflite.pte", "--input", "{d}/x.npy")),
    "misspelt_target": Case(
        "`compile --target imxrt70` (a misspelt target)", "the suggested name", 2, "did you mean 'imxrt700'?",
        argv=("compile", "{d}/model.py:factory", "--random-calibration", "--target", "imxrt70", "-o", "{d}/out.pte")),
    "calibration_scale_overflows": Case(
        "calibration values so large that the int8 scale overflows (|x| ~ 3e38)", "scale the inputs down", 2,
        "the int8 scale would overflow",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/hugecal", "-o", "{d}/out.pte")),
    "pt2_name_with_colon": Case(
        "a `.pt2` file whose name contains ':'", "nothing: it is loaded", 0, "wrote {d}/out.pte",
        argv=("compile", "{d}/a:b.pt2") + COMPILE[1:]),
}

MODELS = '''
import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        return self.b(torch.floor(torch.relu(self.a(x)) * 4.0))


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 6, 5),)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return self.conv(x) + self.calls


class Scalar(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x)
        return y.mean() * 2.0 + y.amax()


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.e, self.l = nn.Embedding(10, 8), nn.Linear(8, 4)

    def forward(self, idx):
        return self.l(self.e(idx))


def counter():
    return Counter(), (torch.randn(1, 3, 6, 5),)


def scalar():
    return Scalar().eval(), (torch.randn(1, 3, 8, 7),)


def conv3d():
    return nn.Sequential(nn.Conv3d(2, 4, 3), nn.ReLU()).eval(), (torch.randn(1, 2, 67, 6, 7),)


def embedding():
    return Embedding().eval(), (torch.tensor([[1, 5, 9]]),)


class Sorting(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        values, _ = torch.sort(self.conv(x).flatten(1), dim=1)
        return values


def sorting():
    return Sorting().eval(), (torch.randn(1, 3, 6, 5),)


def returns_str():
    return Net().eval(), "str"


def swapped():
    return (torch.randn(1, 3, 6, 5),), Net().eval()


def bad_calibration():
    return Net().eval(), (torch.randn(1, 3, 6, 5),), 5


def wrong_inputs():
    return Net().eval(), (torch.randn(1, 5, 6, 5),)


def interrupt():
    raise KeyboardInterrupt


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        x.mul_(2)
        return self.conv(x)


class ScaledByInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x, s):
        return self.conv(x) * s


class IndexBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.register_buffer("stat", torch.zeros(2))

    def forward(self, x):
        y = self.conv(x)
        self.stat[0] = y.mean()
        return y


def inplace():
    torch.manual_seed(0)
    return InPlace().eval(), (torch.randn(1, 3, 6, 5),)


def scalar_input():
    torch.manual_seed(0)
    return ScaledByInput().eval(), (torch.randn(1, 3, 7, 6), torch.tensor(-1.5))


def index_buffer():
    return IndexBuffer().eval(), (torch.randn(1, 3, 6, 5),)


def bundled():
    return Net().eval(), (torch.randn(1, 3, 6, 5),), [torch.randn(1, 3, 6, 5), torch.randn(1, 3, 6, 5)]

def bundled_wrong_shape():
    return Net().eval(), (torch.randn(1, 3, 6, 5),), [torch.randn(1, 3, 6, 5), torch.randn(1, 3, 5, 5)]


def keyerror():
    return {}["weights"]


def exits():
    sys.exit(0)
'''


def catalogue_files(d) -> None:
    """Write the files the cases use into directory `d` (a pathlib.Path): model.py, base.pte, x.npy, damaged
    copies of base.pte, NaN and corrupt inputs, a garbage .pt2, a failing compiler."""
    import sys

    import numpy as np
    import torch
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    from executorch_neutron import lower

    (d / "model.py").write_text(MODELS)
    sys.path.insert(0, str(d))
    try:
        import model
    finally:
        sys.path.pop(0)
    net, inputs = model.factory()
    pte = lower(net, inputs, [inputs], reference=True).pte
    (d / "base.pte").write_bytes(pte)
    np.save(d / "x.npy", inputs[0].numpy())
    nan = inputs[0].clone()
    nan[0, 0, 0, 0] = float("nan")
    np.save(d / "nan.npy", nan.numpy())
    (d / "nancal").mkdir()
    np.save(d / "nancal" / "0.npy", inputs[0].numpy())
    np.save(d / "nancal" / "1.npy", nan.numpy())
    (d / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    (d / "garbage.pt2").write_bytes(b"PK\x03\x04 not a zip archive at all")
    cxx = d / "failing-cxx"
    cxx.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo fake 1.0; exit 0; }\n"
                   "echo 'fake.cpp:1:1: error: boom' >&2\nexit 1\n")
    cxx.chmod(0o755)

    pf = deserialize_pte_binary(pte)
    plan = pf.program.execution_plan[0]
    quantize = next(i for i in plan.chains[0].instructions if type(i.instr_args).__name__ == "KernelCall"
                    and "quantize_per_tensor" in plan.operators[i.instr_args.op_index].name)
    plan.values[quantize.instr_args.args[4]].val.int_val = 68719476863  # quant_max
    (d / "bad_qmax.pte").write_bytes(bytes(serialize_pte_binary(pf)))
    at = pte.find(b"aten::floor")
    (d / "bad_utf8.pte").write_bytes(pte[:at] + b"\xff" + pte[at + 1:])
    blob = bytes(deserialize_pte_binary(pte).program.backend_delegate_data[0].data)
    at = pte.find(blob) + len(blob) // 2  # the middle of the first payload's TFLite
    (d / "bad_payload.pte").write_bytes(pte[:at] + bytes([pte[at] ^ 0x01]) + pte[at + 1:])
    assert torch.is_tensor(inputs[0])
    np.save(d / "x_int64.npy", np.ones(inputs[0].shape, np.int64))
    np.save(d / "x_sort.npy", np.zeros((1, 3, 6, 5), np.float32))
    sorting, sort_inputs = model.sorting()
    (d / "sorting.pte").write_bytes(lower(sorting, sort_inputs, [sort_inputs]).pte)
    from executorch_neutron.core.payload import unpack

    (d / "model_tflite.pte").write_bytes(unpack(blob).tflite)
    _round2_files(d, pte, inputs, net)


def _round2_files(d, pte: bytes, inputs: tuple, net) -> None:
    """Victims of output collisions, old files for interrupted writes, symlinks, edited .pte fields."""
    import os
    import shutil

    import numpy as np
    import torch
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    (d / "victim.py").write_text(MODELS)
    program = torch.export.export(net, inputs)
    torch.export.save(program, str(d / "victim.pt2"))
    shutil.copy(d / "victim.pt2", d / "a:b.pt2")
    for name in ("victim.pte", "same.pte", "old.pte"):
        (d / name).write_bytes(pte)
    (d / "old.html").write_text("<html>the previous report</html>\n")
    np.save(d / "victim.npy", inputs[0].numpy())
    (d / "link.py").symlink_to("victim.py")
    os.link(d / "victim.py", d / "hard.py")
    (d / "sub").mkdir()
    (d / "adir.pt2").mkdir()
    for sub in ("outs", "cal", "emptycal", "hugecal", "firmware"):
        (d / sub).mkdir()
    np.save(d / "outs" / "output_0.npy", inputs[0].numpy())
    np.save(d / "cal" / "0.npy", inputs[0].numpy())
    np.save(d / "emptycal" / "0.npy", np.zeros((0, *inputs[0].shape), np.float32))
    np.save(d / "hugecal" / "0.npy", np.where(inputs[0].numpy() < 0, -3e38, 3e38).astype(np.float32))
    (d / "firmware" / "model.pte").write_bytes(b"old firmware")
    (d / "fw_link.pte").symlink_to(os.path.join("firmware", "model.pte"))
    np.save(d / "fortran.npy", np.asfortranarray(inputs[0].numpy()))
    assert np.load(d / "fortran.npy").flags.f_contiguous

    assert pte[4:8] == b"ET12"
    (d / "bad_magic.pte").write_bytes(pte[:4] + b"XT12" + pte[8:])
    at = pte.find(b"NeutronBackend")
    (d / "bad_backend.pte").write_bytes(pte[:at] + b"NeutronBackenX" + pte[at + 14:])
    at = pte.find(b"aten::floor")
    (d / "bad_opname.pte").write_bytes(pte[:at] + b"aten::flxor" + pte[at + 11:])
    pf = deserialize_pte_binary(pte)
    plan = pf.program.execution_plan[0]
    plan.values[plan.inputs[0]].val.sizes[2] = 12  # H 6 -> 12: twice the planned bytes
    (d / "bad_sizes.pte").write_bytes(bytes(serialize_pte_binary(pf)))
    np.save(d / "x12.npy", np.zeros((1, 3, 12, 5), np.float32))  # an input that fits the edited program


PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "troubleshooting.md"
MARKERS = ("<!-- catalogue:start -->\n", "<!-- catalogue:end -->")


def markdown() -> str:
    """The troubleshooting page's table."""
    lines = ["| what happened | exit code | message contains | what to do |", "|---|---|---|---|"]
    for case in CASES.values():
        fragment = case.fragment.replace("{d}/", "").replace("|", "\\|")
        lines.append(f"| {case.problem} | {case.code} | `{fragment}` | {case.fix} |")
    return "\n".join(lines) + "\n"


def page_table(page: Path = PAGE) -> str:
    """The table between the catalogue markers of the troubleshooting page."""
    text = page.read_text()
    start, end = MARKERS
    if start not in text or end not in text:
        raise ValueError(f"{page} lacks the catalogue markers {start.strip()} ... {end}")
    return text.split(start, 1)[1].split(end, 1)[0]


def write_page(page: Path = PAGE) -> None:
    text = page.read_text()
    page_table(page)
    before, rest = text.split(MARKERS[0], 1)
    page.write_text(before + MARKERS[0] + markdown() + MARKERS[1] + rest.split(MARKERS[1], 1)[1])


if __name__ == "__main__":
    import sys

    if "--write-docs" in sys.argv[1:]:
        write_page()
        print(f"wrote the catalogue table of {PAGE}")
    else:
        print(markdown(), end="")
