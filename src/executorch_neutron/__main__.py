"""`python -m executorch_neutron ...` runs the CLI."""

import sys

from .cli import main

sys.exit(main())
