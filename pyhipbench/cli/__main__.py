"""`python -m pyhipbench.cli`: the `pyhipbench` command."""
import sys

from . import main

sys.exit(main())
