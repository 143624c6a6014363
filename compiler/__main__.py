"""The command line: `python -m compiler COMMAND ...` (the contract is in DESIGN.md).

The client's commands (upload, compare, baseline) run without the compiler library loaded."""

import sys

from compiler.client_cli import COMMANDS

if len(sys.argv) > 1 and sys.argv[1] in COMMANDS:
    from compiler.client_cli import main
else:
    from compiler.cli import main

sys.exit(main())
