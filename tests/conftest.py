"""Shared test setup: make tests/harness.py importable from every test folder; quiet third-party noise."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
logging.getLogger("torchao").setLevel(logging.ERROR)
