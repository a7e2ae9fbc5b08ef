"""End to end against the TEST DOUBLE of NXP's modelrunner firmware (modelrunner_double.py, on a pseudo-terminal):
a lowered conv -> relu model runs through the client and gives the host runtime's outputs byte for byte; repeated
runs, the board-host comparison, and every error path (model too big, a kernel the firmware lacks, no answer)
end in one line naming the cause. References: the host runtime's outputs; the double's own framing."""

import pytest
import torch

from executorch_neutron import lower
from executorch_neutron.board import BoardRunError, BoardTimeout, WillNotLoad, compare_with_host, run_on_board
from executorch_neutron.board.runners import _DATA
from executorch_neutron.pte import inspect_pte
from executorch_neutron.runtime import run
from executorch_neutron.board.qparams import output_qparams
from executorch_neutron.models.zoo import calibration
from harness import model_output_qparams

X = torch.randn(1, 3, 9, 7, generator=torch.Generator().manual_seed(3))
WAIT = 120.0  # seconds per answer: the double loads programs with the host runtime on a shared, busy machine


class ConvAct(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.conv, self.act = torch.nn.Conv2d(3, 8, 3), act

    def forward(self, x):
        return self.act(self.conv(x))


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    return lower(ConvAct(torch.nn.ReLU()).eval(), (X,), calibration((X,), 8), target="imxrt700")


@pytest.fixture(scope="module")
def conv_relu(lowered):
    return lowered.pte


@pytest.fixture(scope="module")
def conv_hardswish_on_cpu():
    """hardswish kept on the CPU: its float decomposition needs dim_order_ops::_to_dim_order_copy.out, which NXP's
    modelrunner does not register."""
    torch.manual_seed(0)
    return lower(ConvAct(torch.nn.Hardswish()).eval(), (X,), calibration((X,), 8), target="imxrt700",
                 operators_not_to_delegate=("aten.hardswish.default",)).pte


def test_board_outputs_are_the_host_outputs_byte_for_byte(modelrunner, conv_relu):
    board = run_on_board(conv_relu, [X], modelrunner(), timeout=WAIT)
    host = run(conv_relu, [X])
    assert len(board.outputs) == len(host) == 1
    assert board.outputs[0].dtype == host[0].dtype and board.outputs[0].shape == host[0].shape
    assert board.outputs[0].contiguous().numpy().tobytes() == host[0].contiguous().numpy().tobytes()
    assert "ExecuTorch Modelrunner Ready" in board.banner  # drained, not mistaken for a frame
    assert len(board.times_us) == 1 and board.timing().startswith("on-board time: ")


def test_repeat_and_compare_host(modelrunner, conv_relu):
    board = run_on_board(conv_relu, [X], modelrunner(), repeat=3, timeout=WAIT)
    assert len(board.times_us) == 3  # each RUN after its own LOAD_INPUT (the double refuses RUN otherwise)
    assert all(word in board.timing() for word in ("3 runs", "min", "median", "max"))
    (line,) = compare_with_host(conv_relu, board.outputs, run(conv_relu, [X]))
    assert "largest board-host difference 0 output step(s) (scale" in line and "bytes equal" in line


def test_output_qparams_are_pytorchs(lowered):
    (scale, zero_point), = output_qparams(lowered.pte)
    (ref_scale, ref_zero_point), = model_output_qparams(lowered.quantized_model)
    assert zero_point == ref_zero_point and scale == pytest.approx(ref_scale, rel=1e-6)


def test_channels_last_io_on_the_board(modelrunner):
    """A model kept channels-last takes and returns NHWC tensors: the board gets the input in that dim order and
    the output comes back as the host run returns it."""
    torch.manual_seed(0)
    model = ConvAct(torch.nn.ReLU()).eval().to(memory_format=torch.channels_last)
    x = X.to(memory_format=torch.channels_last)
    pte = lower(model, (x,), [(c[0].to(memory_format=torch.channels_last),) for c in calibration((x,), 8)],
                target="imxrt700").pte
    assert list(inspect_pte(pte).methods[0].inputs[0].shape) == [1, 3, 9, 7]
    board = run_on_board(pte, [x], modelrunner(), timeout=WAIT)
    assert board.inputs_info[0].dim_order == (0, 2, 3, 1)
    host = run(pte, [x])
    assert board.outputs[0].shape == host[0].shape and torch.equal(board.outputs[0], host[0])
    assert board.outputs[0].stride() == host[0].stride()


def test_model_too_big_says_by_how_much(modelrunner, conv_relu):
    with pytest.raises(BoardRunError, match=r"error 0x03 .*the \.pte is [\d,]+ bytes .*smaller model buffer") as e:
        run_on_board(conv_relu, [X], modelrunner("--model-buffer", "1000"), timeout=WAIT)
    assert f"{len(conv_relu):,} bytes" in str(e.value)


def test_refused_before_upload_when_kernels_are_missing(modelrunner, conv_hardswish_on_cpu):
    assert "dim_order_ops::_to_dim_order_copy.out" in inspect_pte(conv_hardswish_on_cpu).methods[0].cpu_kernels
    with pytest.raises(WillNotLoad, match=r"dim_order_ops::_to_dim_order_copy.out \(2 calls\) is not in "
                                          r"modelrunner's kernel table"):
        run_on_board(conv_hardswish_on_cpu, [X], "/dev/null-never-opened")


def test_load_method_error_names_the_missing_kernels(modelrunner, conv_hardswish_on_cpu, tmp_path):
    """A custom --runner file that lists every kernel passes the check; the board runs NXP's table and answers
    0x14, and the line names the operators NXP's table lacks."""
    mine = tmp_path / "mine.txt"
    mine.write_text("\n".join(inspect_pte(conv_hardswish_on_cpu).methods[0].cpu_kernels))
    with pytest.raises(BoardRunError, match=r"error 0x14 .*dim_order_ops::_to_dim_order_copy.out") as e:
        run_on_board(conv_hardswish_on_cpu, [X], modelrunner("--kernels", str(_DATA)), runner=mine, timeout=WAIT)
    assert "modelrunner's kernel table" in str(e.value) and len(str(e.value).splitlines()) == 1


def test_no_answer_names_the_step(modelrunner, conv_relu):
    with pytest.raises(BoardTimeout, match=r"no answer to LOAD_MODEL from .* within [\d.]+ s at 115200 baud.*"
                                           r"check the port, the baud rate"):
        run_on_board(conv_relu, [X], modelrunner("--silent"), timeout=1.0)
