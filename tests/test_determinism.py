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
