"""ExecuTorch's backend test suite (`executorch/backends/test/suite` in the wheel) run through this backend.

`flow(target)` is a suite `TestFlow` for one target (`imxrt700`, `imxrt700cm`, `imx93`, ...): the suite's
tester with this package's stages in place of the defaults, the same stages `lower()` takes from `pipeline.py`:

    quantize   the target's quantizer (PT2E: prepare, calibrate on the example inputs, convert)
    export     the suite's own
    lower      to_edge_transform_and_lower with the target's partitioner and `lower()`'s edge compile config,
               then the Cortex-M leftover step on a target with a Cortex-M core
    serialize  to_executorch + the buffer; running it checks the program with `runtime.validate` and runs it in
               ExecuTorch's pybindings runtime with the host backends and the quantized kernels registered

The suite compares the program's outputs with PyTorch's quantized model (its export stage) with its own
tolerances (atol 0.1, rtol 0.04); `NeutronSuiteTester.max_steps` also records the largest difference in output
quantization steps.

`run_operator_file(name, flow)` runs every test of one `operators/` file without pytest and returns one
`SuiteRecord` per model the tests lowered (`benchmarks/backend_suite.py`, tests/test_backend_suite.py).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from executorch.backends.test.harness import Tester
from executorch.backends.test.harness.stages import Quantize, Serialize, StageType, ToEdgeTransformAndLower
from executorch.backends.test.suite.flow import TestFlow
from executorch.exir import EdgeCompileConfig

from .backends import BACKENDS
from .pipeline import assemble, resolve_spec
from .runtime import bridge
from .runtime.validate import check_program

FLOW_TARGETS = ("imxrt700", "imxrt700cm", "imx93")
OPERATORS = "executorch.backends.test.suite.operators"
FLOW_PREFIX = "neutron_"


class _Lower(ToEdgeTransformAndLower):
    """to_edge_transform_and_lower as `lower()` runs it: the target's partitioner and edge compile config, then
    its Cortex-M leftover step. (The partitioners are set after construction: the suite's stage keeps
    `partitioners=` only together with `default_partitioner_cls`.)"""

    def __init__(self, pipeline):
        super().__init__(edge_compile_config=pipeline.edge_compile_config or EdgeCompileConfig())
        self.partitioners = [pipeline.partitioner]
        self.pipeline = pipeline

    def run(self, artifact, inputs=None, generate_etrecord: bool = False) -> None:
        super().run(artifact, inputs, generate_etrecord)
        self.edge_dialect_program, _ = self.pipeline.lower_leftovers(self.edge_dialect_program)


class _Serialize(Serialize):
    """The suite's serialize stage, with the program checked by `runtime.validate` and run in ExecuTorch's
    pybindings runtime with the host back ends (NeutronBackend, the Ethos-U reference, the cortex_m kernels)
    and ExecuTorch's quantized kernels registered."""

    def run_artifact(self, inputs):
        import executorch.kernels.quantized  # noqa: F401 - quantize/dequantize kernels, before loading
        from executorch.extension.pybindings import portable_lib

        bridge.ensure_registered()
        pte = check_program(self.buffer, backends=set(portable_lib._get_registered_backend_names()),
                            kernels=set(portable_lib._get_operator_names()))
        for backend in BACKENDS.values():  # as runtime.load: Ethos-U delegates record their reference TFLite
            backend.on_load(pte)
        return super().run_artifact(inputs)


class NeutronSuiteTester(Tester):
    """The suite's tester with this package's quantize, lower and serialize stages for one target."""

    def __init__(self, module, example_inputs, target: str, dynamic_shapes=None):
        pipeline = assemble(resolve_spec(target))
        stages = Tester.default_stage_classes() | {
            StageType.QUANTIZE: lambda: Quantize(quantizer=pipeline.quantizer),
            StageType.TO_EDGE_TRANSFORM_AND_LOWER: lambda: _Lower(pipeline),
            StageType.SERIALIZE: _Serialize,
        }
        super().__init__(module, example_inputs, stage_classes=stages, dynamic_shapes=dynamic_shapes)
        self.lowering = pipeline  # (Tester.pipeline is the tester's own stage order)
        self.max_steps: float | None = None  # largest |program - reference| in output quantization steps

    def _compare_outputs(self, reference_output, stage_output, quantization_scale=None, *args, **kwargs):
        if quantization_scale:
            ref = reference_output if isinstance(reference_output, (tuple, list)) else (reference_output,)
            out = stage_output if isinstance(stage_output, (tuple, list)) else (stage_output,)
            diffs = [float((o.float() - r.float()).abs().max()) for o, r in zip(out, ref)
                     if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and o.shape == r.shape
                     and o.numel()]
            if diffs:
                steps = max(diffs) / float(quantization_scale)
                self.max_steps = steps if self.max_steps is None else max(self.max_steps, steps)
        return Tester._compare_outputs(reference_output, stage_output, quantization_scale, *args, **kwargs)


def flow(target: str) -> TestFlow:
    """The suite TestFlow `neutron_<target>` (int8, quantized with the target's quantizer)."""
    spec = resolve_spec(target)  # an unknown target fails here, with the known ones named
    testers: list[NeutronSuiteTester] = []

    def tester_factory(model, example_inputs, dynamic_shapes=None):
        tester = NeutronSuiteTester(model, example_inputs, target, dynamic_shapes)
        testers.append(tester)
        return tester

    backend = spec.target_info.kind.replace("-", "_")  # the suite makes a pytest mark `backend_<name>` of it
    made = TestFlow(f"{FLOW_PREFIX}{target}", backend=backend, tester_factory=tester_factory, quantize=True,
                    quantize_stage_factory=None)
    made.testers = testers  # the testers it made, in order (run_operator_file reads their max_steps)
    return made


def flows(targets=FLOW_TARGETS) -> dict[str, TestFlow]:
    made = [flow(t) for t in targets]
    return {f.name: f for f in made}


# ---- running operator files without pytest -------------------------------------------------------------------


@dataclass
class SuiteRecord:
    """One model a suite test lowered and ran: the suite's result and what this flow measured."""

    file: str  # the operators/ module, e.g. "test_add"
    test: str  # the test function, e.g. "test_add_dtype"
    subtest: int
    flow: str
    result: str  # the suite's TestResult name (SUCCESS, SUCCESS_UNDELEGATED, LOWER_FAIL, ...) or SKIPPED
    max_steps: float | None
    error: str
    # why nodes stayed on the CPU: the partitioner's distinct "aten.op: reason" lines (empty when all delegated)
    cpu_reasons: list[str] = field(default_factory=list)


def operator_files() -> list[str]:
    """The module names of the suite's operators/ files (test_abs, test_adaptive_avgpool1d, ...)."""
    package = importlib.import_module(OPERATORS)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("test_"))


def operator_tests(file: str) -> list[tuple[str, object]]:
    """(name, function) of each test in one operators/ file; each takes the suite's `test_runner` (and a dtype)."""
    module = importlib.import_module(f"{OPERATORS}.{file}")
    return [(name, fn) for name, fn in sorted(vars(module).items())
            if name.startswith("test_") and inspect.isfunction(fn) and "test_runner" in inspect.signature(fn).parameters]


class _Enough(Exception):
    """Raised by _Runner after its model limit: the rest of the test function is not run."""


class _Runner:
    """The suite's per-test runner (conftest.TestRunner) without pytest: runs each model through `run_test`."""

    def __init__(self, flow_: TestFlow, file: str, test: str, max_models: int | None = None):
        self.flow, self.file, self.test, self.max_models = flow_, file, test, max_models
        self.records: list[SuiteRecord] = []
        self._flow = flow_

    def lower_and_run_model(self, model, inputs, generate_random_test_inputs=True, dynamic_shapes=None):
        from executorch.backends.test.suite.runner import run_test

        if self.max_models is not None and len(self.records) >= self.max_models:
            raise _Enough

        n_testers = len(self.flow.testers)
        summary = run_test(model, inputs, self.flow, f"{self.test}[{self.flow.name}]", self.test, len(self.records),
                           None, generate_random_test_inputs=generate_random_test_inputs,
                           dynamic_shapes=dynamic_shapes)
        tester = self.flow.testers[-1] if len(self.flow.testers) > n_testers else None
        del self.flow.testers[:]  # one tester at a time: they hold whole programs
        error = "" if summary.error is None else " ".join(f"{type(summary.error).__name__}: {summary.error}".split())
        self.records.append(SuiteRecord(self.file, self.test, len(self.records), self.flow.name, summary.result.name,
                                        tester.max_steps if tester else None, error[:600],
                                        cpu_reasons(tester) if tester else []))


def cpu_reasons(tester: NeutronSuiteTester) -> list[str]:
    """The distinct reasons the tester's partitioner gave for the nodes it left on the CPU, as "op: reason"."""
    rejections = getattr(tester.lowering.partitioner, "rejections", [])
    return sorted({f"{r.op}: {r.reason}" for r in rejections})


def run_test_function(flow_: TestFlow, file: str, test: str, fn, max_models: int | None = None) -> list[SuiteRecord]:
    """Run one suite test function (all the models it lowers, or its first `max_models`) with `flow_`; the suite
    seeds each model from the test's name."""
    runner = _Runner(flow_, file, test, max_models)
    kwargs = {"dtype": torch.float32} if "dtype" in inspect.signature(fn).parameters else {}
    try:
        fn(runner, **kwargs)
    except _Enough:
        pass
    except Exception as exc:  # noqa: BLE001 - a test's own failure (not a backend one) is recorded, not raised
        runner.records.append(SuiteRecord(file, test, len(runner.records), flow_.name, "SKIPPED", None,
                                          f"{type(exc).__name__}: {exc}"[:600]))
    return runner.records


def run_operator_file(file: str, flow_: TestFlow, only: str | None = None) -> list[SuiteRecord]:
    """Every test of one operators/ file (or the one named `only`) with `flow_`."""
    records = []
    for name, fn in operator_tests(file):
        if only is None or name == only:
            records += run_test_function(flow_, file, name, copy.copy(fn))
    return records


def session(seed: int = 0):
    """A suite test session (the suite draws each test's seed from it): `with session(): ...`."""

    from executorch.backends.test.suite import reporting

    @contextmanager
    def active():
        started = reporting.get_active_test_session() is None
        if started:
            reporting.begin_test_session(None, seed=seed)
        try:
            yield
        finally:
            if started:
                reporting.complete_test_session()

    return active()

