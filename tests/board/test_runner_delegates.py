"""The runner check knows the chip: NXP's modelrunner firmware registers NeutronBackend only (its
executorch_engine.cpp), so a .pte lowered for the i.MX 93 (EthosUBackend delegates, through Vela) is refused by
`compile --runner modelrunner` and by `run --device`, naming the delegate and the target to lower for; a runner file
that declares `delegate EthosUBackend` accepts it. Reference: the delegate ids ExecuTorch's own deserializer reads
from the .pte."""

import numpy as np
import pytest
import torch
from executorch.exir._serialize._program import deserialize_pte_binary

from executorch_neutron.board import WillNotLoad, run_on_board
from executorch_neutron.board.runners import check_pte, load_runner
from board.test_cli_board import FACTORY, cli


@pytest.fixture(scope="module")
def imx93(tmp_path_factory):
    out = tmp_path_factory.mktemp("imx93")
    (out / "model.py").write_text(FACTORY)
    np.save(out / "x.npy", np.zeros((1, 3, 9, 7), np.float32))
    proc = cli("compile", f"{out / 'model.py'}:factory", "--random-calibration", "--target", "imx93",
               "-o", out / "m.pte", "--runner", "modelrunner")
    return out, proc


def test_compile_for_another_chip_is_refused(imx93):
    out, proc = imx93
    program = deserialize_pte_binary((out / "m.pte").read_bytes()).program
    assert {d.id for plan in program.execution_plan for d in plan.delegates} == {"EthosUBackend"}
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert ("runner check: delegate EthosUBackend (1 partition) is not registered by modelrunner's firmware, which "
            "registers NeutronBackend" in proc.stdout)
    assert "lower for --target imxrt700" in proc.stdout
    assert "error: the .pte will not load on modelrunner: 1 problem(s)" in proc.stderr


def test_run_on_the_device_refuses_before_uploading(imx93):
    out, _ = imx93
    with pytest.raises(WillNotLoad, match="delegate EthosUBackend .* lower for --target imxrt700"):
        run_on_board(out / "m.pte", [torch.zeros(1, 3, 9, 7)], "/dev/null-never-opened")
    proc = cli("run", out / "m.pte", "--device", "/dev/null-never-opened", "--input", out / "x.npy")
    assert proc.returncode == 2 and "error: delegate EthosUBackend (1 partition)" in proc.stderr, proc.stderr


def test_a_runner_file_declaring_ethos_u_accepts_it(imx93, tmp_path):
    out, _ = imx93
    f = tmp_path / "ethos_fw.txt"
    f.write_text("delegate EthosUBackend\ntarget imx93\nquantized_decomposed::quantize_per_tensor.out\n"
                 "quantized_decomposed::dequantize_per_tensor.out\n")
    assert check_pte(out / "m.pte", load_runner(f)) == []
    assert [type(f).__name__ for f in check_pte(out / "m.pte", load_runner("modelrunner"))] == ["MissingDelegate"]
