"""StopRule: the adaptive stopping rule's targets and caps, checked and handed to the C++ core.

The core applies the rule (csrc/include/pyhipbench/stopping.hpp; `measure`
takes chunks of samples and, after each, asks the rule whether to go on): a
run stops at the median's 95 % CI within ±`precision` ("precision"), surely
slower than `slower_than_us` by more than `race_threshold` ("slower",
racing: compare's rule), `max_samples` or `max_time_s`.
docs/measurement.md explains the warm-up, the run sizing and each stop.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from .. import _core

_DEFAULT = _core.StopRule()  # the defaults are the core's


@dataclass(frozen=True)
class StopRule:
    """Targets and caps of one measurement; see the module docstring. `core`: the same rule, for the core."""
    precision: float = _DEFAULT.precision        # relative half-width of the median's 95 % CI; 0 = no target
    min_samples: int = _DEFAULT.min_samples
    max_samples: int = _DEFAULT.max_samples
    max_time_s: float = _DEFAULT.max_time_s      # wall time of the measurement, warm-up included, seconds
    settle: float = _DEFAULT.settle              # warm-up: consecutive chunk medians within ±settle
    max_warmup_samples: int = _DEFAULT.max_warmup_samples
    warmup_chunk: int = _DEFAULT.warmup_chunk    # samples per warm-up chunk
    first_chunk: int = _DEFAULT.first_chunk
    # CUPTI's timestamps tick every 32 ns on the H200 (docs/measurement.md): an
    # interval one tick wide is as narrow as a sub-µs kernel's samples can show.
    tick_us: float = _DEFAULT.tick_us
    slower_than_us: float = _DEFAULT.slower_than_us  # racing: stop once surely slower than this, µs; 0 = never
    race_threshold: float = _DEFAULT.race_threshold  # racing: "slower" by more than this fraction (compare's 2 %)
    throttle_threshold: float = _DEFAULT.throttle_threshold  # runs below this fraction of the rated clock: again
    hold_s: float = _DEFAULT.hold_s              # untimed runs back to back for this long first, seconds; 0 = none
    core: _core.StopRule = field(init=False, repr=False, compare=False)  # the same rule, for the core

    def __post_init__(self) -> None:
        # The core's rule checks every field (StopRule::validate, BenchError naming it); a user's values
        # reach here through BenchOptions, which checked them first. A flat copy: dataclasses.asdict
        # deep-copies, a cost on every bench().
        rule = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        object.__setattr__(self, "core", _core.StopRule(**rule))
