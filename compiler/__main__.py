"""The command line: `python -m compiler COMMAND ...` (the contract is in DESIGN.md)."""

import sys

from compiler.cli import main

sys.exit(main())
