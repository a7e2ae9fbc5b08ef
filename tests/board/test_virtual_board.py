"""The virtual board as a user starts it (`executorch-neutron virtual-board`, a process on a pseudo-terminal that
answers NXP's modelrunner protocol with the host runtime): the client's runs give the host runtime's outputs byte
for byte (float and quantized I/O), `run --device --repeat` and `evaluate --device` work against it, the options that
mimic a firmware build give the firmware's error codes, it logs one line per command, Ctrl-C stops it cleanly, and
the session of docs/guide/board.md runs verbatim. References: the host runtime's outputs; the firmware's documented
error codes (0x03 model too big, 0x14 load_method)."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

from executorch_neutron import cli, lower
from executorch_neutron.board import BoardRunError, compare_with_host, run_on_board
from executorch_neutron.evaluation import evaluate
from executorch_neutron.evaluation.result import BOARD, HOST
from executorch_neutron.models.zoo import calibration
from executorch_neutron.runtime import run

ROOT = Path(__file__).resolve().parents[2]
X = torch.randn(1, 3, 9, 7, generator=torch.Generator().manual_seed(4))
WAIT = 120.0  # seconds per answer: the virtual board runs programs with the host runtime on a shared, busy machine


def env() -> dict:
    return dict(os.environ, PYTHONWARNINGS="ignore",
                PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
                PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))


@contextmanager
def virtual_board(where: Path, *options: str):
    """Start `executorch-neutron virtual-board --link WHERE/board OPTIONS`; yield (the link, its output lines so
    far); stop it with Ctrl-C (SIGINT) and check that it stopped cleanly and removed its link."""
    link = where / "board"
    proc = subprocess.Popen([sys.executable, "-m", "executorch_neutron", "virtual-board", "--link", str(link),
                             *options], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stdout), daemon=True)
    reader.start()  # what it prints: its port, "ready" once the host runtime is loaded, then one line per command
    deadline = time.monotonic() + WAIT
    while "ready" not in lines and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # a program opening the port before "ready" would wait for the runtime to load
    try:
        assert "ready" in lines and link.is_symlink(), lines
        yield str(link), lines
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()  # never left behind: the assertion below names what it printed
            proc.wait()
        reader.join(timeout=10)
    assert proc.returncode == 0 and re.fullmatch(r"virtual board on /dev/\S+ stopped", lines[-1]), lines[-5:]
    assert not link.is_symlink() and "Traceback" not in "\n".join(lines)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = torch.nn.Conv2d(3, 8, 3), torch.nn.Linear(8 * 7 * 5, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


@pytest.fixture(scope="module")
def ptes():
    """The same network lowered with float I/O and with quantized I/O."""
    torch.manual_seed(0)
    model, calib = Net().eval(), calibration((X,), 8)
    return {io: lower(model, (X,), calib, target="imxrt700", quantized_io=io == "quantized").pte
            for io in ("float", "quantized")}


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    with virtual_board(tmp_path_factory.mktemp("vboard")) as (port, lines):
        yield port, lines


@pytest.mark.parametrize("io", ["float", "quantized"])
def test_runs_are_the_host_runs(board, ptes, io):
    """Float inputs of the quantized-I/O .pte are quantized with its own qparams and the outputs dequantized, on the
    board as on the host; the comparison counts output steps, and the board's banner says it is a simulation."""
    port, lines = board
    run_ = run_on_board(ptes[io], [X], port, timeout=WAIT)
    host = run(ptes[io], [X])
    assert run_.outputs[0].dtype == host[0].dtype == torch.float32
    assert run_.outputs[0].numpy().tobytes() == host[0].numpy().tobytes()
    assert "virtual board" in run_.banner and "not a board's" in run_.banner
    (line,) = compare_with_host(ptes[io], run_.outputs, host)
    assert line.startswith("output 0: largest board-host difference 0 output step(s) (scale ") and "equal" in line


def test_quantized_io_given_int8_compares_in_its_own_steps(board, ptes, tmp_path, capsys):
    port, _ = board
    (tmp_path / "q.pte").write_bytes(ptes["quantized"])
    q = torch.quantize_per_tensor(X, 0.05, 0, torch.qint8).int_repr()
    np.save(tmp_path / "q.npy", q.numpy())
    code = cli.main(["run", str(tmp_path / "q.pte"), "--device", port, "--input", str(tmp_path / "q.npy"),
                     "--compare-host", "--repeat", "12", "--timeout", str(WAIT)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert re.search(r"on-board time over 12 runs: p50 [\d.]+ us, p90 \d+ us, max \d+ us \(min \d+ us\) \(this PC's "
                     r"times: a virtual board, not a board\)", out), out
    assert re.search(r"vs host: output 0: largest board-host difference 0 output step\(s\) \(int8 output of the "
                     r"program, scale [\d.e-]+\); bytes equal", out), out
    assert "no output scale" not in out and "(no banner)" not in out


def test_evaluate_against_it(board):
    port, _ = board
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3, 9, 7)).astype(np.float32), rng.integers(0, 10, 4)
    r = evaluate(Net().eval(), (x, y), target="imxrt700", calibration_samples=4, device=port, timeout=WAIT)
    assert r.row(BOARD).metrics == r.row(HOST).metrics
    assert r.outputs[BOARD].tobytes() == r.outputs[HOST].tobytes()


def test_one_line_per_command(board, ptes):
    port, lines = board
    assert lines[0].startswith("virtual board: a SIMULATION of NXP's executorch_modelrunner firmware")
    start = len(lines)
    run_on_board(ptes["float"], [X], port, repeat=2, timeout=WAIT)
    expected = [f"LOAD_MODEL {len(ptes['float']):,} bytes", "GET_INFO", "LOAD_INPUT 756 bytes", "RUN",
                "LOAD_INPUT 756 bytes", "RUN", "port closed"]
    deadline = time.monotonic() + 30
    while len(lines) < start + len(expected) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [line.split(" -> ")[0] for line in lines[start:]] == expected, lines[start:]


@pytest.mark.parametrize("options, io, says, logged", [
    (("--model-buffer", "1000"), "float", r"error 0x03 .*smaller model buffer", "ERROR 0x03 MODEL_TOO_BIG"),
    (("--kernels", "KERNELS"), "float", r"error 0x14 .*registers another table",
     "ERROR 0x14 LOAD_METHOD: load_method failed: not registered: quantized_decomposed::quantize_per_tensor.out"),
    (("--timing-us", "850", "--quiet"), "quantized", None, None),
], ids=["model-buffer", "kernels", "timing-quiet"])
def test_options_mimic_a_firmware_build(tmp_path, ptes, options, io, says, logged):
    kernels = tmp_path / "fw.txt"  # NXP's table without the quantize kernel the float-I/O .pte calls
    kernels.write_text("\n".join(line for line in (ROOT / "src/executorch_neutron/board/modelrunner.ops")
                                 .read_text().splitlines() if not line.startswith("quantized_decomposed::quantize_per_tensor")))
    options = tuple(str(kernels) if o == "KERNELS" else o for o in options)
    with virtual_board(tmp_path, *options) as (port, lines):
        if says:
            with pytest.raises(BoardRunError, match=says) as e:
                run_on_board(ptes[io], [X], port, timeout=WAIT)
            assert len(str(e.value).splitlines()) == 1
        else:
            assert run_on_board(ptes[io], [X], port, repeat=3, timeout=WAIT).times_us == [850, 850, 850]
    if logged:
        assert any(logged in line for line in lines), lines
    else:
        assert not [line for line in lines if " -> " in line]  # --quiet


def test_the_guide_session_runs_verbatim(tmp_path):
    """The three commands of docs/guide/board.md's virtual-board section, with its mynet.py, in a shell."""
    guide = (ROOT / "docs/guide/board.md").read_text()
    section = guide[guide.index("## Without a board: the virtual board"):guide.index("## Will it load?")]
    (factory,) = re.findall(r"```python\n(# mynet.py\n.*?)```", section, re.S)
    (commands,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(commands.strip().splitlines()) == 3 and commands.startswith("executorch-neutron virtual-board ")
    (tmp_path / "mynet.py").write_text(factory)
    proc = subprocess.run(["bash", "-c", f"set -e\n{commands}kill %1\nwait"], cwd=tmp_path, env=env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "runner check: every CPU operator of the .pte is in modelrunner's kernel table" in out
    assert re.search(r"on-board time over 10 runs: p50 .* \(this PC's times: a virtual board, not a board\)", out)
    assert "vs host: output 0: largest board-host difference 0 output step(s)" in out
    assert re.search(r"virtual board on /dev/\S+ stopped", out) and not (tmp_path / "board").is_symlink()
    assert json.dumps(out).count("LOAD_INPUT") == 10


def test_a_numpy_input_is_refused_as_the_host_run_refuses_it(ptes):
    """Before the change run_on_board raised a raw TypeError/AttributeError from inside the tensor conversion."""
    from executorch_neutron.board.tensors import TensorMismatch
    from executorch_neutron.runtime import NeutronRuntimeError

    with pytest.raises(NeutronRuntimeError, match=r"input 0 must be a tensor, got ndarray"):
        run(ptes["float"], [X.numpy()])
    with pytest.raises(TensorMismatch, match=r"input 0 must be a tensor, got ndarray: pass torch.from_numpy\(x\)"):
        run_on_board(ptes["float"], [X.numpy()], "/dev/null-never-opened")
