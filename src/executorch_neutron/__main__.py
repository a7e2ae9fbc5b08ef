"""`python -m executorch_neutron ...` runs the CLI."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python starts: a clean exit, as later (cli.main)
    print("error: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
