"""`python -m pyhipbench`: the `pyhipbench` command (pyhipbench/cli.py)."""
import sys

from .cli import main

sys.exit(main())
