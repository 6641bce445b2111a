"""BenchOptions: what a measurement is asked for, checked once.

Every front end builds one and nothing re-checks its values: `bench()` from
its keywords, the CLI from its flags (it only turns text into values), a sweep
candidate from its "bench" object, `pyhipbench.triton.autotune` from its
keywords. So a value is accepted or refused the same way, with the same
message, wherever it comes from. Choices that need the device (the timer
"auto" resolves to) are made by bench(); the C++ core's `StopRule::validate`
checks the rule again for C++ callers, who do not come through here.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import _core
from .._values import integer, real, show
from ..errors import BenchError
from .cache import CACHE_STATES, DEFAULT_CACHE_STATE
from .rotation import checked_rotate
from .timers import PER_KERNEL_TIMERS, TIMERS

# Every launch of a chunk holds its driver events until the chunk's one
# synchronisation, so a chunk, and a fixed count, is bounded.
MAX_LAUNCHES = 1_000_000

# Racing's runs start short: with 6 samples the median's 95 % CI is the sample range (its exact coverage
# 1 - 2 / 2**6 = 96.9 %; 5 would cover only 93.8 %), so a candidate surely slower than the bound (its
# fastest sample above it) stops after a 3-sample warm-up chunk and 6 timed samples, and one near the bound
# goes on to the precision as any other; a clear loser (its 3 warm-up samples all over 1.5 times the bound)
# stops after the warm-up chunk, and with a bound of 50 µs or more a far loser (its first sample over 2 times the
# bound) after that one sample (docs/measurement.md#racing).
RACING_CHUNKS = {"warmup_chunk": 3, "first_chunk": 6, "min_samples": 6}

# The longest hold asked for, s: a power or thermal limit bites within a second (docs/measurement.md), so an
# hour is far past any use, and a typo (1e9 s) is refused rather than holding the GPU for years.
MAX_HOLD_S = 3600.0

# A fixed count is taken whatever the time: the time cap (which counts the
# warm-up sharing the first run) must never cut it short.
_FIXED_COUNT_TIME_CAP_S = 1e9


_RULE = _core.StopRule()  # the core's defaults: Python's options and C++'s StopRule share them


def option(default: Any, doc: str, *, unit: str = "", cli: str, see: str = "", choices: tuple[str, ...] = ()) -> Any:
    """A BenchOptions field, declared once: its default, what it means (`doc`), its unit ("s", "µs", or ""),
    how the CLI reads its flag (`cli`: "choice", "fraction", "number", "integer", "count_or_word" or
    "switch"), a "choice" option's values (`choices`) and the section of docs/measurement.md that explains it
    (`see`, "Title#anchor"). bench()'s,
    bench_chain()'s and bench_callable()'s keywords, the CLI's flags and their help, and the API docs' table
    derive from these declarations (`OPTIONS`)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "unit": unit, "cli": cli, "see": see,
                                                        "choices": choices})


@dataclass(frozen=True)
class BenchOptions:
    """A measurement's options, each checked on construction (BenchError naming the value).

    Each field is declared once below, with its default, unit and meaning; `OPTIONS` lists them, and
    docs/api.md's table is made from it.
    """
    timer: str = option("auto", "which clock reads a sample: cupti (kernel time, NVIDIA), rocprofiler (kernel "
                        "time, AMD), events, graph or batched; auto: the backend's kernel timer where it traces, "
                        "else events", cli="choice", see="Timers#timers", choices=("auto",) + TIMERS)
    cache: str = option("auto", "the cache state at each timed launch: clean-cold, dirty-cold or warm; auto: "
                        "clean-cold, or warm with rotate 1, dirty-cold with rotate > 1 or a timer whose sample "
                        "spans several launches (graph, batched)", cli="choice",
                        see="Cache states#cache-states", choices=("auto",) + CACHE_STATES)
    precision: float = option(_RULE.precision, "stop when the median's 95 % CI is within this fraction of it, "
                              "in (0, 1)", cli="fraction", see="The stopping rule#the-stopping-rule")
    max_time_s: float = option(_RULE.max_time_s, "cap on the measurement's wall time, warm-up included",
                               unit="s", cli="number", see="The stopping rule#the-stopping-rule")
    iterations: int | None = option(None, f"take exactly this many samples (1 to {MAX_LAUNCHES}) instead of a "
                                    "precision target", cli="integer")
    warmup: int | None = option(None, "this many untimed samples first; none: warm up until two chunk medians "
                                "agree", cli="integer")
    rotate: int | str = option("auto", "dirty-cold's argument-set count R, or auto (from the last-level cache "
                               "and free memory); 1 = warm", cli="count_or_word", see="Rotation#rotation")
    slower_than_us: float | None = option(None, "racing: stop (reason slower) once the median's 95 % CI lies "
                                          "wholly above this time by more than 2 %, e.g. the best candidate's "
                                          "CI upper bound so far", unit="µs", cli="number", see="Racing#racing")
    throttle_threshold: float = option(_RULE.throttle_threshold, "a run of samples whose SM clock is below this "
                                       "fraction of the rated clock is discarded and taken again; 0 = off, in "
                                       "[0, 1)", cli="fraction", see="The clock#the-clock")
    energy: bool = option(False, "after the measurement, read NVML's energy counter over a 1 s window of samples "
                          "(Result.energy: mJ per sample, mean W); NVIDIA only, not with clean-cold", cli="switch",
                          see="Energy#energy")
    hold_s: float = option(_RULE.hold_s, "untimed runs back to back for at least this long first: the samples "
                           "then run at the clock the GPU's power and thermal limits sustain, not its boost "
                           f"clock; max_time_s counts from the hold's end; at most {MAX_HOLD_S:g}", unit="s",
                           cli="number", see="Sustained load#sustained-load-the-hold")

    def __post_init__(self) -> None:
        if not (isinstance(self.timer, str) and self.timer in TIMERS + ("auto",)):
            raise BenchError(f"timer={show(self.timer)}: expected one of {', '.join(TIMERS)} or 'auto'")
        if not (isinstance(self.cache, str) and self.cache in CACHE_STATES + ("auto",)):
            raise BenchError(f"cache={show(self.cache)}: expected one of {', '.join(CACHE_STATES)} or 'auto' "
                             f"(default {DEFAULT_CACHE_STATE})")
        self._set("precision", real("precision", self.precision, above=0, below=1))
        self._set("max_time_s", real("max_time_s", self.max_time_s, above=0))
        if self.iterations is not None:
            self._set("iterations", integer("iterations", self.iterations, 1, MAX_LAUNCHES))
        if self.warmup is not None:
            self._set("warmup", integer("warmup", self.warmup, 0, MAX_LAUNCHES))
        self._set("rotate", checked_rotate(self.rotate))
        self._set("throttle_threshold", real("throttle_threshold", self.throttle_threshold, minimum=0, below=1))
        if self.slower_than_us is not None:
            self._set("slower_than_us", real("slower_than_us", self.slower_than_us, above=0))
            if self.iterations is not None:
                raise BenchError(f"slower_than_us={show(self.slower_than_us)} with iterations={self.iterations}: "
                                 "racing stops a run early, a fixed count never does; expected one of them")
        self._set("hold_s", real("hold_s", self.hold_s, minimum=0, maximum=MAX_HOLD_S))
        if not isinstance(self.energy, bool):
            raise BenchError(f"energy={show(self.energy)}: expected True or False")
        if self.energy and self.cache_state == "clean-cold":
            raise BenchError("energy=True with cache='clean-cold'" + (" (the default)" if self.cache == "auto" else "")
                             + ": each sample's clean step would count in its energy; expected cache='warm' or "
                             "'dirty-cold' with energy=True")
        if isinstance(self.rotate, int) and self.cache != "auto" and (self.cache == "dirty-cold") != (self.rotate > 1):
            raise BenchError(f"rotate={self.rotate} with cache={self.cache!r}: only dirty-cold rotates argument "
                             "sets (rotate > 1); rotate=1 is warm")
        if self.cache_state == "clean-cold" and self.timer not in PER_KERNEL_TIMERS + ("auto",):
            raise BenchError(f"cache='clean-cold' with timer={self.timer!r}: a {self.timer} sample spans several "
                             "launches, so it would time the clean step too; use timer='cupti' or 'events'")

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # the checked value, as a plain Python number

    @property
    def cache_state(self) -> str:
        """The cache state asked for, "auto" resolved: clean-cold, or warm with rotate=1, dirty-cold with
        rotate > 1 or a timer whose sample spans several launches (no clean step fits between them)."""
        if self.cache != "auto":
            return self.cache
        if self.rotate == 1:
            return "warm"
        if self.rotate != "auto" or self.timer not in PER_KERNEL_TIMERS + ("auto",):
            return "dirty-cold"
        return DEFAULT_CACHE_STATE

    @property
    def limit_s(self) -> float | None:
        """The most seconds a measurement with these options may run: the hold and max_time_s (None for a
        fixed count, which has no limit)."""
        return None if self.iterations is not None else self.hold_s + self.max_time_s

    def stop_rule(self) -> _core.StopRule:
        """The stopping rule these options ask for (the core applies it, csrc/include/pyhipbench/stopping.hpp)."""
        if self.iterations is None:
            if self.slower_than_us is None:
                return _core.StopRule(precision=self.precision, max_time_s=self.max_time_s,
                                      throttle_threshold=self.throttle_threshold, hold_s=self.hold_s)
            return _core.StopRule(precision=self.precision, max_time_s=self.max_time_s,
                                  slower_than_us=self.slower_than_us, throttle_threshold=self.throttle_threshold,
                                  hold_s=self.hold_s, **RACING_CHUNKS)
        return fixed_count(self.iterations, self.throttle_threshold, self.hold_s)

    def replace(self, **changes: Any) -> BenchOptions:
        """A copy with `changes` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: object) -> BenchOptions:
        """Options from a JSON object of bench() keywords; unknown keys refused, naming them."""
        if not isinstance(data, dict):
            raise BenchError(f"bench={show(data)}: expected an object of bench() options")
        return cls.from_keywords("bench", data)

    @classmethod
    def from_keywords(cls, what: str, keywords: dict[str, Any], leave_out: tuple[str, ...] = ()) -> BenchOptions:
        """Options from `what`'s keywords (bench(), tune(), ...): a name that is no option, or one of
        `leave_out` (options `what` does not take), refused, naming it."""
        names = [name for name in cls.field_names() if name not in leave_out]
        unknown = sorted(set(keywords) - set(names), key=str)
        if unknown:
            raise BenchError(f"{what} option(s) {', '.join(map(repr, unknown))} unknown; expected "
                             f"{', '.join(sorted(names))}")
        return cls(**keywords)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


@dataclass(frozen=True)
class Option:
    """One BenchOptions field as its declaration gives it: `name`, `type` (as annotated), `default`, `unit`,
    `doc`, how the CLI reads it (`cli`) and where measurement.md explains it (`see`)."""
    name: str
    type: str
    default: Any
    unit: str
    doc: str
    cli: str
    see: str
    choices: tuple[str, ...]  # the values of a "choice" option

    @property
    def flag(self) -> str:
        """The CLI flag: the name without its unit, dashed (max_time_s: --max-time)."""
        name = self.name.removesuffix("_us").removesuffix("_s") if self.unit else self.name
        return "--" + name.replace("_", "-")


OPTIONS: tuple[Option, ...] = tuple(
    Option(f.name, str(f.type), f.default, f.metadata["unit"], f.metadata["doc"], f.metadata["cli"],
           f.metadata["see"], f.metadata["choices"]) for f in dataclasses.fields(BenchOptions))

Function = TypeVar("Function", bound=Callable[..., Any])


def takes_options(leave_out: tuple[str, ...] = ()) -> Callable[[Function], Function]:
    """A decorator for a function taking the options as `**options`: its signature (help(), inspect, the API
    docs) lists them as keyword-only parameters with their defaults, after its positional ones; `leave_out`:
    options it does not take."""
    def decorate(fn: Function) -> Function:
        own = inspect.signature(fn)
        params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keyword = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        declared = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=o.type)
                    for o in OPTIONS if o.name not in leave_out]
        fn.__signature__ = own.replace(parameters=positional + declared + keyword)  # type: ignore[attr-defined]
        return fn
    return decorate


def markdown_table() -> str:
    """docs/api.md's table of the options: name, type, unit, default, meaning (linked to measurement.md), flag."""
    rows = ["| option | type | unit | default | meaning | CLI flag |", "|---|---|---|---|---|---|"]
    for o in OPTIONS:
        title, _, anchor = o.see.partition("#")
        see = f" ([{title}](measurement.md#{anchor}))" if o.see else ""
        kind = o.type.replace(" | ", " or ")  # a pipe would end the table's cell
        rows.append(f"| `{o.name}` | `{kind}` | {o.unit or '-'} | `{o.default!r}` | {o.doc}{see} | `{o.flag}` |")
    return "\n".join(rows) + "\n"


def fixed_count(samples: int, throttle_threshold: float, hold_s: float = 0.0) -> _core.StopRule:
    """The rule that takes exactly `samples` timed samples, in one run (after a hold of `hold_s`, s)."""
    return _core.StopRule(precision=0, min_samples=samples, max_samples=samples, first_chunk=samples,
                          max_time_s=_FIXED_COUNT_TIME_CAP_S, throttle_threshold=throttle_threshold, hold_s=hold_s)
