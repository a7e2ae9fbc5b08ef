"""`auto_precision` and `compile --accuracy-target`: on a model whose first layer is fed a wide-dynamic-range input
(one feature a thousand times the others, weighted down), all-int8 misses the target; the search promotes that
layer, and the SQNR it reports is measured again here, independently: the written .pte run by the host runtime
against the float model, SQNR in numpy. An unreachable target gives its one-line message and the best found."""

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import BudgetError, auto_precision, cli, runtime
from executorch_neutron.evaluation.auto_precision import Layer, find_layers, worst_sqnr
from executorch_neutron.quantizer import quantizer_for
from executorch_neutron.target import get_target

TARGET_DB = 30.0


class Wide(nn.Module):
    """fc1 reads a feature a thousand times larger than the others through a weight a thousand times smaller: the
    int8 input step that covers it rounds the other features away. Only promoting fc1 keeps them."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.act, self.fc2, self.fc3 = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Linear(16, 4)
        with torch.no_grad():
            self.fc1.weight[:, 0] *= 1e-3

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(self.act(self.fc1(x)))))


def wide_data(n: int = 16, wide: float = 1000.0, narrow: float = 0.01) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    scale = torch.tensor([wide, 1, 1, 1, narrow, 1, 1, 1])
    return [(torch.randn(4, 8, generator=g) * scale,) for _ in range(n)]


def numpy_sqnr(reference: np.ndarray, test: np.ndarray) -> float:
    reference, test = reference.astype(np.float64), test.astype(np.float64)
    return 10 * np.log10(np.sum(reference ** 2) / np.sum((reference - test) ** 2))


def pte_sqnr(path, model, samples) -> float:
    """The written .pte on the host runtime vs the float model over every sample (one output)."""
    pte = path.read_bytes()
    with torch.no_grad():
        want = np.stack([model(*x).numpy() for x in samples])
    got = np.stack([runtime.run(pte, list(x))[0].numpy() for x in samples])
    return numpy_sqnr(want, got)


def test_the_search_promotes_the_sensitive_layer_and_reaches_the_target(tmp_path):
    model, data = Wide().eval(), wide_data()
    r = auto_precision(model, data[0], data, target="imxrt700", sqnr_db=TARGET_DB)
    assert r.baseline_sqnr_db < TARGET_DB, "all-int8 must miss the target for this test to mean anything"
    assert r.reached and r.message is None and r.sqnr_db >= TARGET_DB
    assert r.promote_to == "float" and r.ladder == ("float",) and r.rungs == []  # imxrt700 computes int8 only
    assert r.rules == {"fc1": "float"}
    assert max(r.sensitivity, key=r.sensitivity.get) == "fc1"
    assert [s.action for s in r.steps] == ["all-int8", "promote"] and r.steps[-1].pte_sqnr_db == r.sqnr_db
    # the figure it reports is the one measured independently on the .pte it writes
    assert pte_sqnr(r.save(tmp_path / "m.pte"), model, data) == pytest.approx(r.sqnr_db, abs=1e-6)
    assert pte_sqnr(tmp_path / "m.pte", model, data) >= TARGET_DB
    # the cost: fc1 (an addmm once lowered) now runs in float on the CPU
    assert r.baseline.cpu_nodes == 0 and r.cost.cpu_nodes >= 1
    assert "aten.addmm.default" in r.lowering.report.cpu_ops, r.lowering.report.rejections
    d = r.to_dict()
    assert d["rules"] == {"fc1": "float"} and d["cost"]["chosen"]["cpu_nodes"] == r.cost.cpu_nodes
    assert "chosen: fc1=float" in str(r) and "Neutron estimate" in str(r)


def test_an_unreachable_target_says_so_in_one_line_and_returns_the_best(caplog):
    model, data = Wide().eval(), wide_data(8)
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):  # fc1, the sensitive layer, may not move
        r = auto_precision(model, data[0], data, target="imxrt700", sqnr_db=TARGET_DB, candidates=["fc2", "fc3"])
    assert not r.reached and r.message.count("\n") == 0
    assert r.message.startswith("accuracy target 30 dB not reachable on imxrt700: with each of the 2 candidate")
    assert [rec.getMessage() for rec in caplog.records if "not reachable" in rec.getMessage()] == [
        f"warning: {r.message}"]
    assert [la.name for la in r.layers] == ["fc2", "fc3"] and set(r.rules) <= {"fc2", "fc3"}
    assert r.sqnr_db == max(s.pte_sqnr_db for s in r.steps if s.pte_sqnr_db is not None) < TARGET_DB
    with pytest.raises(ValueError, match="no such layer; its layers are: fc1, fc2, fc3"):
        auto_precision(model, data[0], data, sqnr_db=TARGET_DB, candidates=["fc4"])


def test_with_every_layer_promoted_to_float_the_pte_is_the_float_model():
    model, data = Wide().eval(), wide_data(4)
    r = auto_precision(model, data[0], data, target="imxrt700", sqnr_db=100,  # float kernels round differently
                       allow_cpu_only=True)
    assert r.reached and r.sqnr_db > 100 and set(r.rules) == {"fc1", "fc2", "fc3"}
    assert r.cost.cpu_nodes == r.lowering.report.num_compute  # nothing left on the NPU


def test_a_target_only_the_float_model_reaches_keeps_npu_work_and_says_what_cpu_only_costs(caplog):
    """Without allow_cpu_only the search never takes the whole model off the NPU: it returns the best configuration
    with an NPU partition, and one warning names the target, the CPU-only program and its cost."""
    model, data = Wide().eval(), wide_data(4)
    with caplog.at_level(logging.WARNING, logger="executorch_neutron"):
        r = auto_precision(model, data[0], data, target="imxrt700", sqnr_db=100)
    assert not r.reached and r.lowering.report.partitions and len(r.rules) == 2
    assert r.message.startswith("accuracy target 100 dB needs the whole model on the CPU of imxrt700")
    assert "allow_cpu_only=True, --allow-cpu-only" in r.message and "none on the NPU" in r.message
    assert [rec.getMessage() for rec in caplog.records if "needs the whole model" in rec.getMessage()] == [
        f"warning: {r.message}"]
    got = np.stack([runtime.run(r.lowering.pte, list(x))[0].numpy() for x in data])
    with torch.no_grad():
        want = np.stack([model(*x).numpy() for x in data])
    assert numpy_sqnr(want, got) == pytest.approx(r.sqnr_db, abs=0.05)  # the reported figure, measured again


def test_on_an_int16_target_the_layer_is_promoted_to_int16_and_stays_on_the_npu(tmp_path):
    """A range int16 covers (one feature 100 times the others; at 1000 times and a feature of 0.01, only float
    keeps every feature: all three layers in int16 reach 28 dB there)."""
    assert "int16" in get_target("imx93").activation_dtypes
    model, data = Wide().eval(), wide_data(wide=100.0, narrow=1.0)
    r = auto_precision(model, data[0], data, target="imx93", sqnr_db=TARGET_DB)
    assert r.promote_to == "int16" and r.reached
    assert set(r.rules.values()) == {"int16"} and "fc1" in r.rules
    assert r.cost.cpu_nodes == r.baseline.cpu_nodes == 0
    assert r.cost.cycles is not None and r.cost.estimate_by == "Vela's estimate"
    assert pte_sqnr(r.save(tmp_path / "m.pte"), model, data) == pytest.approx(r.sqnr_db, abs=1e-6)


def test_on_imx93_a_target_above_all_int16_goes_on_to_float_on_the_cortex_a55(tmp_path):
    """The ladder int8 -> int16 -> float: at 1000 times and a feature of 0.01, int8 weights bound what int16
    activations reach (every layer int16 stays far below the target); keeping fc1 float on the Cortex-A55 reaches
    it. Both figures are measured again here on the .pte files: the int16 rung's and the written one."""
    model, data = Wide().eval(), wide_data()
    r = auto_precision(model, data[0], data, target="imx93", sqnr_db=TARGET_DB)
    assert r.reached, f"the search stopped at {r.sqnr_db:.1f} dB: it must go on from int16 to float ({r.message})"
    assert r.ladder == ("int16", "float") and r.promote_to == "float"
    assert r.rules.get("fc1") == "float" and len(r.rules) < len(r.layers)  # the others on the NPU
    (rung,) = r.rungs  # where the int16 rung ended: every layer int16, below the target, its cost from its lowering
    assert rung.precision == "int16" and set(rung.rules.values()) == {"int16"} and len(rung.rules) == 3
    with torch.no_grad():
        want = np.stack([model(*x).numpy() for x in data])
    all_int16 = numpy_sqnr(want, np.stack([runtime.run(rung.lowering.pte, list(x))[0].numpy() for x in data]))
    assert all_int16 == pytest.approx(rung.sqnr_db, abs=1e-6) and all_int16 < TARGET_DB
    assert rung.cost.cpu_nodes == 0 and rung.cost.cycles is not None
    assert pte_sqnr(r.save(tmp_path / "m.pte"), model, data) == pytest.approx(r.sqnr_db, abs=1e-6)
    assert r.sqnr_db >= TARGET_DB > all_int16
    assert r.lowering.report.partitions and r.cost.cpu_nodes >= 1  # fc1 on the CPU, the rest on the Ethos-U
    assert [s.precision for s in r.steps if s.action == "promote"][-1] == "float"
    text = str(r)
    assert "ladder int8 -> int16 -> float" in text and "promote fc1 to int16" in text and "promote fc1 to float" in text
    assert "sensitivity to int16" in text and "sensitivity to float" in text
    table = text[text.index("configuration"):].splitlines()  # the cost of each step of the ladder
    assert [row.split("  ")[0] for row in table[1:]] == ["all-int8", "int16 rung (3 layer(s))", "chosen"]
    assert all("cycles" in row and " us" in row for row in table[1:])
    d = r.to_dict()
    assert d["ladder"] == ["int8", "int16", "float"] and d["rungs"][0]["rules"] == rung.rules


def test_options_the_search_owns_are_refused():
    data = wide_data(2)
    with pytest.raises(ValueError, match="drop quantizer="):
        auto_precision(Wide(), data[0], data, sqnr_db=30, quantizer=quantizer_for("imxrt700"))
    with pytest.raises(ValueError, match="finite number of dB"):
        auto_precision(Wide(), data[0], data, sqnr_db=float("nan"))


def test_a_budget_is_held_against_the_chosen_configuration():
    data = wide_data(2)
    with pytest.raises(BudgetError, match="SRAM"):
        auto_precision(Wide(), data[0], data, target="imxrt700", sqnr_db=0, sram_budget="16B")


#: the CLI's factory file: this module's model and data (the CLI loads a file by path)
CLI_MODEL = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_auto_precision import Wide, wide_data


def factory():
    data = wide_data()
    return Wide().eval(), data[0], data
"""


def test_compile_accuracy_target_end_to_end(tmp_path, capsys):
    (tmp_path / "m.py").write_text(CLI_MODEL)
    code = cli.main(["compile", str(tmp_path / "m.py:factory"), "-o", str(tmp_path / "m.pte"), "--accuracy-target",
                     str(TARGET_DB), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "chosen: fc1=float" in out and "all-int8" in out and "Neutron estimate" in out
    assert f"wrote {tmp_path / 'm.pte'}" in out
    assert pte_sqnr(tmp_path / "m.pte", Wide().eval(), wide_data()) >= TARGET_DB


def test_compile_accuracy_target_the_float_model_alone_reaches_exits_0_with_npu_work(tmp_path, capsys):
    (tmp_path / "m.py").write_text(CLI_MODEL)
    code = cli.main(["compile", str(tmp_path / "m.py:factory"), "-o", str(tmp_path / "m.pte"), "--accuracy-target",
                     "100", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "needs the whole model on the CPU" in out and "on the Neutron NPU" in out, out


def test_compile_accuracy_target_refuses_qat_in_one_line(tmp_path, capsys):
    (tmp_path / "m.py").write_text(CLI_MODEL)
    code = cli.main(["compile", str(tmp_path / "m.py:factory"), "-o", str(tmp_path / "m.pte"), "--accuracy-target",
                     "30", "--qat"])
    err = capsys.readouterr().err
    assert code == 2 and "--accuracy-target" in err and "--qat" in err and not (tmp_path / "m.pte").exists()


@pytest.mark.fast
def test_layers_are_modules_or_root_nodes_and_activations_go_with_the_layer_they_follow():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten())
            self.fc = nn.Linear(4 * 5 * 6, 3)

        def forward(self, x, y):
            return self.fc(self.body(x)) + y

    layers = find_layers(M(), (torch.randn(1, 1, 7, 8), torch.randn(1, 3)), quantizer_for("imxrt700"))
    assert layers == [Layer("body.0", ("conv2d", "relu", "flatten"), ("aten.conv2d.default", "aten.relu.default",
                                                                   "aten.flatten.using_ints")),
                      Layer("fc", ("linear",), ("aten.linear.default",)),
                      Layer("add", ("add",), ("aten.add.Tensor",))]


@pytest.mark.fast
def test_worst_sqnr_is_the_worst_output_over_every_sample():
    rng = np.random.default_rng(0)
    ref = [[rng.standard_normal(5), rng.standard_normal(3)] for _ in range(4)]
    test = [[a + 0.01 * rng.standard_normal(5), b + 0.1 * rng.standard_normal(3)] for a, b in ref]
    want = min(numpy_sqnr(np.stack([r[i] for r in ref]), np.stack([t[i] for t in test])) for i in range(2))
    assert worst_sqnr(ref, test) == pytest.approx(want)
