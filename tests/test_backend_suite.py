"""ExecuTorch's backend test suite (the wheel's operators/) through this backend's flows: one model of one test of
every operator file, the flows taking turns, with the suite's own run_test deciding the result (its comparison
with PyTorch's quantized model, atol 0.1 / rtol 0.04), and the difference in output steps at most 1. The whole
suite: `make backend-suite`."""

import pytest

from executorch_neutron import backend_suite as suite

FILES = suite.operator_files()
# a file whose `_dtype` model is slow to lower: a smaller model of the same operator (batch 1, as an MCU runs it)
SMALLER = {"test_lstm": "test_lstm_feature_sizes"}


def _pick(file: str):
    """The test of a file that runs the operator as the file's default model: its `_dtype` test when it has one."""
    tests = suite.operator_tests(file)
    if file in SMALLER:
        return next((n, fn) for n, fn in tests if n == SMALLER[file])
    return next(((n, fn) for n, fn in tests if n.endswith("_dtype")), tests[0])


@pytest.fixture(scope="module")
def flows():
    return {t: suite.flow(t) for t in suite.FLOW_TARGETS}


def test_every_operator_file_is_here():
    assert len(FILES) >= 80, FILES


@pytest.mark.parametrize("index", range(len(FILES)), ids=[f.removeprefix("test_") for f in FILES])
def test_operator_file(flows, index):
    file = FILES[index]
    target = suite.FLOW_TARGETS[index % len(suite.FLOW_TARGETS)]
    name, fn = _pick(file)
    with suite.session(seed=0):
        records = suite.run_test_function(flows[target], file, name, fn, max_models=1)
    assert records, f"{file}::{name} lowered nothing"
    for r in records:
        # SKIPPED: the suite's own verdict that the model is not a backend test (eager or export fails, NaN cases)
        assert r.result in ("SUCCESS", "SUCCESS_UNDELEGATED", "SKIPPED"), f"{target} {file}::{name}: {r.result}: {r.error}"
        # the program that ran is within 1 int8 step of PyTorch's quantized model (the suite's own bound is wider)
        assert r.max_steps is None or r.max_steps <= 1.001, f"{target} {file}::{name}: {r.max_steps:.2f} steps"
        # a model left on the CPU says why: the partitioner's reason for each operator it refused
        assert r.result != "SUCCESS_UNDELEGATED" or r.cpu_reasons, f"{target} {file}::{name}: undelegated, no reason"
