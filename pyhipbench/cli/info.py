"""`pyhipbench info`: the GPU, its caches and memory, and the rotation for a size."""
from __future__ import annotations

import argparse
import functools

from .._device import archs
from .._measure.rotation import plan_rotation
from ..errors import BenchError
from . import values
from .command import OpenDevice, add_command, add_device_options

GiB = 1 << 30


def add_parser(commands: argparse._SubParsersAction, open_device: OpenDevice) -> None:
    parser = add_command(
        commands, "info", "the GPU, its caches and memory, and the rotation for a size",
        "The rotation is how many argument sets the dirty-cold cache state would rotate through for one "
        "argument set of --size bytes, from the last-level cache and the free memory.",
        ["pyhipbench info", "pyhipbench info --backend cuda --device 1 --size 1.5G"])
    add_device_options(parser)
    parser.add_argument("--size", type=_size_as_written, default=("64M", 64 * archs.MiB),
                        help="bytes of one argument set, for the rotation shown: 4096, 64M, 1.5G (default 64M)")
    parser.set_defaults(handler=functools.partial(run, open_device=open_device))


def _size_as_written(text: str) -> tuple[str, int]:
    """('1.5G', 1610612736): the bytes, and the text for a message about them."""
    return text, values.size(text)


def run(args: argparse.Namespace, open_device: OpenDevice) -> int:
    text, size = args.size
    device = open_device(args.backend, args.device)
    p = device.properties
    free, total = device.memory_info()
    try:
        rotation = plan_rotation(size, p.llc_bytes, free, total)  # the size's one check, before anything is printed
    except BenchError as e:  # it names set_bytes, in bytes: the flag as written says which value that is
        raise BenchError(f"--size {text}: {e}") from None
    print(f"backend        {p.backend} (driver library {device.driver.library_path})")
    print(f"device         {p.index}: {p.name}")
    print(f"arch           {p.arch}, {p.compute_units} compute units")
    print(f"L2             {p.l2_bytes / archs.MiB:.1f} MiB")
    print(f"last-level     {p.llc_bytes / archs.MiB:.1f} MiB")
    print(f"memory         {free / GiB:.1f} GiB free of {total / GiB:.1f} GiB")
    print(f"rotation       {rotation.sets} sets for {size} bytes: {rotation.reason}")
    return 0
