// The `batched` timer: N back-to-back chains (still rotating) between one
// event pair, queued behind a spin kernel that holds the GPU until the host
// has queued them all, so no launch gap of the host's enters the time.
//
// Per sample: the spin kernel (one thread, waiting on a word of pinned host
// memory mapped into the device), the start event, N launches, the stop
// event; then the host writes the word, releasing the spin. The word counts
// up (one generation per sample), so a spin waits for its own release only.
// A sample is the pair's time / N.
//
// Deadlock guard: if the host cannot finish queuing (the driver's launch
// queue is full while the spin holds the GPU, and the launch call blocks), the
// spin kernel gives up after `spin_timeout_ms` (its own clock: %globaltimer on
// NVIDIA, the 100 MHz real-time counter on AMD) and writes a "timed out" word;
// the run then fails with a DriverError naming the batch size, not a hang.
// Any other failure while queuing releases the spin at once (scope guard).
//
// The spin kernel: CUDA, embedded PTX (spin_kernel_ptx.hpp) loaded into the
// timer's context when the timer is made; HIP, a function handle the caller
// passes (an AMD code object is per processor).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "timers/spin_kernel_ptx.hpp"
#include "timers/timer_support.hpp"

namespace pyhipbench {

template <class Driver>
class BatchedTimer final : public TimerBase<Driver> {
  using Base = TimerBase<Driver>;
  using Function = typename Driver::Function;

 public:
  BatchedTimer(std::shared_ptr<Driver> driver, uintptr_t context, size_t launches, uintptr_t spin_function,
               double spin_timeout_ms)
      : Base("batched", std::move(driver), context, launches), launches_(launches) {
    if (!(spin_timeout_ms > 0) || spin_timeout_ms > 3.6e6) {
      throw std::invalid_argument("spin_timeout_ms=" + milliseconds(spin_timeout_ms) +
                                  ": expected a time in ms above 0 and at most an hour");
    }
    timeout_ns_ = static_cast<uint64_t>(spin_timeout_ms * 1e6);
    const Driver& d = *this->driver_;
    if constexpr (Driver::kEmbedsSpinKernel) {
      if (spin_function != 0) {
        throw std::invalid_argument("spin_function=" + std::to_string(spin_function) + ": the " + d.backend() +
                                    " batched timer embeds its own spin kernel; expected 0");
      }
    } else if (spin_function == 0) {
      throw std::invalid_argument(
          "the " + d.backend() +
          " batched timer needs spin_function: the handle of a spin kernel "
          "loaded on the device (compile pyhipbench/kernels/amdgpu.ll for it and take its 'spin')");
    }
    typename Base::CurrentContext current(d, this->context_);
    if constexpr (Driver::kEmbedsSpinKernel) {
      check(d.module_load_data(&module_, kSpinKernelPtx));
      const Status found = d.module_get_function(&spin_, module_, kSpinKernelName);
      if (found.code != 0) release();
      check(found);
    } else {
      spin_ = reinterpret_cast<Function>(spin_function);
    }
    Status status = d.host_alloc_mapped(&host_words_, kHostBytes);
    if (status.code == 0) status = d.host_device_pointer(&device_words_, host_words_);
    if (status.code != 0) release();
    check(status);
    flag_ = static_cast<uint32_t*>(host_words_);
    timed_out_ = static_cast<uint32_t*>(host_words_) + kTimedOutWord;
    __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
    spin_flag_ = static_cast<uint32_t*>(device_words_);
    spin_timed_out_ = static_cast<uint32_t*>(device_words_) + kTimedOutWord;
  }

  ~BatchedTimer() override {
    this->release_in_context([this] {
      release();
      this->release_pool_and_probe();
    });
  }

 private:
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override {
    const Driver& driver = *this->driver_;
    this->grow_event_pool(2 * samples);
    // Every spin of earlier runs has finished (their runs synchronized), so
    // the count may restart before it could wrap.
    if (generation_ > UINT32_MAX - samples) {
      generation_ = 0;
      __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
    }
    __atomic_store_n(timed_out_, 0u, __ATOMIC_RELEASE);
    const auto stream = reinterpret_cast<typename Base::Stream>(plan.stream());
    const auto* events = this->events_.data();
    const size_t sets = plan.sets();
    size_t set = first_set % sets;
    void* spin_params[] = {&spin_flag_, &spin_target_, &timeout_ns_, &spin_timed_out_};

    this->stamp_clock(false, stream, plan.name());
    const auto start = std::chrono::steady_clock::now();
    for (size_t j = 0; j < samples; ++j) {
      spin_target_ = ++generation_;  // the launch copies the value: one variable serves every sample
      const Status spun = driver.launch_single(spin_, spin_params, stream);
      if (spun.code != 0) this->fail("batched timer spin kernel", spun.call, spun.code);
      const Release release_after_queuing(flag_, spin_target_);
      int status = driver.event_record(events[2 * j], stream);
      if (status != 0) this->fail(plan.name(), Driver::kEventRecord, status);
      for (size_t k = 0; k < launches_; ++k) {
        this->launch_chain_or_fail(plan, set, stream);
        set = set + 1 == sets ? 0 : set + 1;
      }
      status = driver.event_record(events[2 * j + 1], stream);
      if (status != 0) this->fail(plan.name(), Driver::kEventRecord, status);
    }
    timings.host_us = Base::elapsed_us(start);
    this->stamp_clock(true, stream, plan.name());
    timings.times_us = this->read_event_pairs(plan.name(), samples, launches_);
    if (const uint32_t gave_up = __atomic_load_n(timed_out_, __ATOMIC_ACQUIRE)) stalled(plan, gave_up);
  }

  // Writes the spin's release when a sample's batch is queued, or when
  // queuing fails (so the GPU is not held for the whole timeout).
  class Release {
   public:
    Release(uint32_t* flag, uint32_t generation) : flag_(flag), generation_(generation) {}
    ~Release() { __atomic_store_n(flag_, generation_, __ATOMIC_RELEASE); }
    Release(const Release&) = delete;
    Release& operator=(const Release&) = delete;

   private:
    uint32_t* flag_;
    uint32_t generation_;
  };

  [[noreturn]] void stalled(const LaunchPlan& plan, uint32_t generation) {
    const std::string explanation =
        "the batched timer's spin kernel held the GPU for spin_timeout_ms=" + milliseconds(timeout_ns_ / 1e6) +
        " waiting for the host to queue a batch of " + std::to_string(launches_) + " launches of kernel '" +
        plan.name() + "' (sample generation " + std::to_string(generation) +
        ") and gave up: the driver's launch queue probably filled while the "
        "spin held the GPU, so the host could not queue the whole batch. Use a smaller "
        "launches_per_sample; this run's times are discarded";
    throw DriverError(DriverError("batched timer", -1, "SPIN_TIMEOUT", explanation), explanation);
  }

  // snprintf, not an ostream: under the H200 machine's Python (its torch
  // environment) `ostream << double` in the core segfaulted inside
  // std::codecvt (seen with cuda-gdb); snprintf does not go through the locale.
  static std::string milliseconds(double ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", ms);
    return text;
  }

  void check(Status status) const {
    if (status.code != 0) throw this->driver_->error(status.call, status.code);
  }

  // Frees what the constructor made, in the timer's context.
  void release() {
    const Driver& d = *this->driver_;
    if (host_words_ != nullptr) d.host_free(host_words_);
    host_words_ = nullptr;
    if constexpr (Driver::kEmbedsSpinKernel) {
      if (module_ != nullptr) d.module_unload(module_);
      module_ = nullptr;
    }
  }

  static constexpr size_t kHostBytes = 128;    // the release word and the timed-out word,
  static constexpr size_t kTimedOutWord = 16;  // on separate 64-byte lines (words of 4 bytes)

  const size_t launches_;
  uint64_t timeout_ns_ = 0;
  typename Driver::Module module_ = nullptr;  // CUDA: the embedded spin kernel's module
  Function spin_ = nullptr;
  void* host_words_ = nullptr;     // pinned, mapped: the host's view
  void* device_words_ = nullptr;   // the same memory, as the kernel addresses it
  uint32_t* flag_ = nullptr;       // host view: release word
  uint32_t* timed_out_ = nullptr;  // host view: nonzero once a spin gave up
  uint32_t* spin_flag_ = nullptr;  // device views, passed to the spin kernel
  uint32_t* spin_timed_out_ = nullptr;
  uint32_t spin_target_ = 0;
  uint32_t generation_ = 0;
};

}  // namespace pyhipbench
