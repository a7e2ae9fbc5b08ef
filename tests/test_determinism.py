"""The same model and inputs give a byte-identical .pte, in one process and across processes."""

import hashlib
import os
import subprocess
import sys

from executorch_neutron import lower
from executorch_neutron.models import zoo

SCRIPT = """
import hashlib
from executorch_neutron import lower
from executorch_neutron.models import zoo
m, x = zoo.cifarnet()
print(hashlib.sha256(lower(m, x, zoo.calibration(x, 2)).pte).hexdigest())
"""


def _digest():
    m, x = zoo.cifarnet()
    return hashlib.sha256(lower(m, x, zoo.calibration(x, 2)).pte).hexdigest()


def test_pte_is_byte_identical():
    first = _digest()
    assert _digest() == first
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == first


def test_pte_does_not_depend_on_the_thread_count():
    """A 1x1 convolution over 256 channels sums in a different order on 1 and on 2 intra-op threads: its output's
    range differs in the last bit, and calibration must not let that reach a scale."""
    import torch

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(256, 64, 1)).eval()
    x = (torch.randn(1, 256, 20, 20),)
    threads = torch.get_num_threads()
    digests = []
    try:
        with torch.no_grad():
            torch.set_num_threads(1)
            one = model(*x)
            torch.set_num_threads(2)
            two = model(*x)
        assert (one.max() - one.min()) != (two.max() - two.min()), "the range no longer depends on the thread count"
        for n in (1, 2):
            torch.set_num_threads(n)
            digests.append(hashlib.sha256(lower(model, x, target="imxrt700").pte).hexdigest())
            assert torch.get_num_threads() == n  # lower() gives the caller's thread count back
    finally:
        torch.set_num_threads(threads)
    assert digests[0] == digests[1]
