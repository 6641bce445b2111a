"""What the tuning tests tune: the bundled copy kernel over N floats, its launches' times set on the fake driver."""
from importlib import resources

from pyhipbench._measure.bench import PreparedBench
from pyhipbench.errors import BenchError

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
N = 1024

RATED_MHZ = 1980.0  # the fake device's rated SM clock


def launch_us(monkeypatch, fake_driver, us: dict[int, float], held_us: dict[int, float] | None = None,
              ramp_us: dict[int, float] | None = None, held_mhz: dict[int, float] | None = None,
              hold_fails: tuple[int, ...] = ()) -> list:
    """Each launch of a block size takes us[block] µs on the fake (held_us[block] in a measurement with a
    hold, or right after one of the same block, its load still on, at an SM clock of held_mhz[block], else the
    rated one), each one ramp_us[block] µs more than the last; a measurement with a hold of a block in
    `hold_fails` raises BenchError; the (block, options) of every measurement."""
    measured = []
    real = PreparedBench.run
    last = {"block": None, "held": False}

    def run(self):
        block = self.checked[0][1].block[0]
        measured.append((block, self.options))
        if block in hold_fails and self.options.hold_s > 0:
            raise BenchError(f"block {block}'s hold failed")
        held = held_us is not None and (self.options.hold_s > 0 or (last["block"] == block and last["held"]))
        last.update(block=block, held=held)
        table = held_us if held else us
        fake_driver.lib.fake_set_launch_ms(table[block] / 1000)
        fake_driver.lib.fake_set_sm_clock_mhz((held_mhz or {}).get(block, RATED_MHZ) if held else RATED_MHZ)
        fake_driver.lib.fake_set_launch_ms_step((ramp_us or {}).get(block, 0.0) / 1000)
        return real(self)
    monkeypatch.setattr(PreparedBench, "run", run)
    return measured
