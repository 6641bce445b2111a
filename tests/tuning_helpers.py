"""What the tuning tests tune: the bundled copy kernel over N floats."""
from importlib import resources

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
N = 1024
