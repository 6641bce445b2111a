// The SM clock a run of samples ran at, as NVIDIA's nvbench reads it.
//
// A stamp kernel (one warp per SM; only SM 0's first thread writes) records
// %globaltimer (ns) and %clock64 (SM 0's cycles) into pinned host memory
// mapped into the device. A timer stamps before a run's first sample and after
// its last, on the run's stream and before its synchronisation, so the two
// stamps bracket the samples and nothing else: clock = Δcycles / Δns. Both
// stamps come from SM 0, whose cycle counter is the only one compared. Cost:
// two launches per run (a few µs of GPU time each), no extra synchronisation.
//
// CUDA embeds the kernel as PTX the driver compiles for the device at hand.
// HIP has no probe: AMD's cycle counter (s_memtime) and real-time counter
// (s_memrealtime) would serve, but the kernel is not built, so an AMD run
// reports no clock. A run whose stamp SM 0 never ran (the scheduler may leave
// an SM without a block) reports no clock either.
#pragma once

#include <cstdint>
#include <memory>

#include "status.hpp"

namespace pyhipbench {

inline constexpr const char* kClockStampName = "pyhipbench_clock_stamp";

// pyhipbench_clock_stamp(out): on SM 0, thread 0 stores %globaltimer to out[0]
// and %clock64 to out[1]. PTX ISA 7.0 / sm_52, as the spin kernel.
inline constexpr const char* kClockStampPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .entry pyhipbench_clock_stamp(
    .param .u64 pyhipbench_clock_stamp_param_out
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<4>;
    .reg .b64   %rd<4>;

    mov.u32         %r1, %smid;
    mov.u32         %r2, %tid.x;
    or.b32          %r3, %r1, %r2;
    setp.ne.u32     %p1, %r3, 0;
    @%p1 bra        DONE;
    ld.param.u64    %rd1, [pyhipbench_clock_stamp_param_out];
    mov.u64         %rd2, %globaltimer;
    mov.u64         %rd3, %clock64;
    st.volatile.global.u64  [%rd1], %rd2;
    st.volatile.global.u64  [%rd1+8], %rd3;
DONE:
    ret;
}
)PTX";

// Made with the timer's context current; `Driver` is CudaDriver or HipDriver.
template <class Driver>
class ClockProbe {
 public:
  using Stream = typename Driver::Stream;

  // A probe on the current context's device; available() is false where the
  // backend has none (HIP) or the device does not say its SM count and clock.
  explicit ClockProbe(const Driver& driver) : driver_(driver) {
    if constexpr (Driver::kEmbedsClockProbe) {
      int sms = 0, khz = 0;
      if (driver.sm_count_and_clock(&sms, &khz).code != 0 || sms <= 0 || khz <= 0) return;
      Status status = driver.module_load_data(&module_, kClockStampPtx);
      if (status.code == 0) status = driver.module_get_function(&stamp_, module_, kClockStampName);
      if (status.code == 0) status = driver.host_alloc_mapped(&host_, kHostBytes);
      if (status.code == 0) status = driver.host_device_pointer(&device_, host_);
      if (status.code != 0) {
        release();
        driver.check(status.call, status.code);
      }
      words_ = static_cast<volatile uint64_t*>(host_);
      sms_ = static_cast<unsigned>(sms);
      default_mhz_ = khz / 1000.0;
    }
  }
  ~ClockProbe() { release(); }
  ClockProbe(const ClockProbe&) = delete;
  ClockProbe& operator=(const ClockProbe&) = delete;

  bool available() const { return words_ != nullptr; }
  double default_mhz() const { return default_mhz_; }  // the device's rated SM clock, MHz

  // The stamp before a run's first sample (`end` false) or after its last.
  Status stamp(bool end, Stream stream) {
    if constexpr (Driver::kEmbedsClockProbe) {
      volatile uint64_t* words = words_ + (end ? 2 : 0);
      words[0] = words[1] = 0;  // written before the launch that overwrites them is queued
      void* at = static_cast<uint64_t*>(device_) + (end ? 2 : 0);
      void* params[] = {&at};
      return driver_.launch_grid(stamp_, sms_, 32, params, stream);
    } else {
      (void)end, (void)stream;
      return {0, nullptr};
    }
  }

  // After the run's synchronisation: the SM clock between the stamps, MHz; 0
  // if a stamp was not written.
  double clock_mhz() const {
    const uint64_t t0 = words_[0], c0 = words_[1], t1 = words_[2], c1 = words_[3];
    if (t0 == 0 || t1 <= t0 || c1 < c0) return 0;
    return static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0) * 1000.0;
  }

 private:
  void release() noexcept {
    if constexpr (Driver::kEmbedsClockProbe) {
      if (host_ != nullptr) driver_.host_free(host_);
      if (module_ != nullptr) driver_.module_unload(module_);
    }
    host_ = nullptr;
    module_ = nullptr;
    words_ = nullptr;
  }

  static constexpr size_t kHostBytes = 64;  // two stamps of (ns, cycles), one cache line

  const Driver& driver_;
  typename Driver::Module module_ = nullptr;
  typename Driver::Function stamp_ = nullptr;
  void* host_ = nullptr;
  void* device_ = nullptr;
  volatile uint64_t* words_ = nullptr;
  unsigned sms_ = 0;
  double default_mhz_ = 0;
};

}  // namespace pyhipbench
