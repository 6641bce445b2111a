"""`pyhipbench info`: the GPU, its caches and memory, and the rotation for a size; without a GPU, a profile's."""
from __future__ import annotations

import argparse
import functools

from .._device import archs
from .._measure.rotation import MAX_BYTES, plan_rotation
from .._values import integer
from ..errors import NoDeviceError
from . import values
from .command import OpenDevice, add_command, add_device_options, add_profile_option, chosen_profile, no_gpu_line

GiB = 1 << 30


def add_parser(commands: argparse._SubParsersAction, open_device: OpenDevice) -> None:
    parser = add_command(
        commands, "info", "the GPU, its caches and memory, and the rotation for a size",
        "The rotation is how many argument sets the dirty-cold cache state would rotate through for one "
        "argument set of --size bytes, from the last-level cache and the free memory. Without a GPU: the same "
        "for --profile's device, from its published sizes, saying so.",
        ["pyhipbench info", "pyhipbench info --backend cuda --device 1 --size 1.5G",
         "pyhipbench info --profile mi300x   # without a GPU"])
    add_device_options(parser)
    add_profile_option(parser, "show")
    parser.add_argument("--size", type=values.size, default=64 * archs.MiB, keyword="set_bytes",
                        help="bytes of one argument set, for the rotation shown: 4096, 64M, 1.5G (default 64M)")
    parser.set_defaults(handler=functools.partial(run, open_device=open_device))


def run(args: argparse.Namespace, open_device: OpenDevice) -> int:
    # What needs no device is checked first: a GPU's absence is not news about a bad value.
    size = integer("set_bytes", args.size, 1, MAX_BYTES, unit="bytes")
    profile_name = chosen_profile(args)
    try:
        device = open_device(args.backend, args.device)
    except NoDeviceError as e:  # no GPU is no failure here: the profile shows what info would
        print_profile(no_gpu_line(e, args.verbose), profile_name, size)
        return 0
    p = device.properties
    free, total = device.memory_info()
    rotation = plan_rotation(size, p.llc_bytes, free, total)
    print(f"backend        {p.backend} (driver library {device.driver.library_path})")
    print(f"device         {p.index}: {p.name}")
    print(f"arch           {p.arch}, {p.compute_units} compute units")
    print_sizes(p.l2_bytes, p.llc_bytes, f"{free / GiB:.1f} GiB free of {total / GiB:.1f} GiB")
    print(f"rotation       {rotation.sets} sets for {size} bytes: {rotation.reason}")
    return 0


def print_profile(why: str, profile_name: str, size: int) -> None:
    """What info shows of the profile's device (its memory all free), under a line saying it is no GPU here."""
    profile = archs.PROFILES[profile_name]
    rotation = plan_rotation(size, profile.llc_bytes, profile.total_bytes, profile.total_bytes)
    print(f"no GPU here: what follows is the profile of an {profile.name} (--profile {profile_name}), "
          "not a device of this machine")
    print(f"  why no GPU: {why}")
    print(f"backend        {profile.backend} (the profile's)")
    print(f"device         {profile.name}")
    print(f"arch           {profile.arch}")
    print_sizes(profile.l2_bytes, profile.llc_bytes, f"{profile.total_bytes / GiB:.1f} GiB, all of it taken as free")
    print(f"rotation       {rotation.sets} sets for {size} bytes: {rotation.reason}")


def print_sizes(l2_bytes: int, llc_bytes: int, memory: str) -> None:
    """The L2, last-level cache and `memory` lines."""
    print(f"L2             {l2_bytes / archs.MiB:.1f} MiB")
    print(f"last-level     {llc_bytes / archs.MiB:.1f} MiB")
    print(f"memory         {memory}")
