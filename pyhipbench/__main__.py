"""`python -m pyhipbench`: the `pyhipbench` command (pyhipbench/cli/)."""
import sys

from .cli import main

sys.exit(main())
