// Timers: ways of timing the launches of a LaunchPlan on one driver context.
//
// A sample is one run of the plan's chain (one kernel, or several in order).
//
//   events   an event pair around each chain (HIP: the events
//            hipExtModuleLaunchKernel records around exactly the first and
//            last dispatch)
//   cupti    (CUDA) each kernel's start and end on the GPU, from CUPTI's kernel
//            activity records; a chain's sample is the sum of its kernels'
//            times; libcupti is loaded at run time
//            ($PYHIPBENCH_CUPTI_LIBRARY overrides where from)
//   graph    a graph of N chains, the rotation unrolled inside it, replayed
//            between one event pair; a sample is the graph's time / N
//   batched  N back-to-back chains between one event pair, queued behind a
//            spin kernel that holds the GPU until the host has queued them all;
//            a sample is the batch's time / N
//
// The contract, for C++ embedders (Python makes the same calls):
//
//   Context   run() makes the timer's context current itself (CUDA: pushes
//             the CUcontext given to make_timer, pops it on return; HIP: sets
//             the device, restores the caller's), so the calling thread needs
//             no current context and keeps the one it had. Driver::device_context
//             gives the context for a device ordinal.
//   Threads   one run() at a time per timer (a second caller waits for the
//             first, and for a whole Timer::Session another thread opened:
//             measure()'s); different timers may run from different threads at once,
//             but then share the GPU and time each other's work. cupti: one
//             trace per process at a time (a second waits).
//   Lifetime  a timer holds its driver, so the driver outlives it. The plan
//             must live through run(), and the device buffers its argument
//             sets point to (the embedder's own and RotatedBuffers' copies)
//             while any plan using them runs. The graph timer keeps the graphs
//             of the last plan it ran (keyed by LaunchPlan::id) until another
//             plan runs or the timer is destroyed.
//   Faults    a kernel that faults in run() throws KernelFault (a DriverError)
//             naming the kernel and whether the context is still usable
//             (context_usable()). After a sticky fault every later call in
//             that context throws DriverError; destructors then free nothing
//             and throw nothing (the driver released it all). On ROCm a GPU
//             memory fault usually aborts the process before HIP returns:
//             time untrusted candidates in a worker process. Any other failed
//             driver call throws DriverError (call(), code(), name(),
//             message()); launches that ran but could not each be timed throw
//             MeasurementError. run() never returns fewer samples than asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pyhipbench/call_plan.hpp"
#include "pyhipbench/driver.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/export.hpp"
#include "pyhipbench/launch_plan.hpp"

namespace pyhipbench {

// One piece of GPU work a call issued, as the cupti timer saw it.
struct Activity {
  enum class Kind { kernel, memcpy, memset };
  size_t sample = 0;  // the sample (call) that issued it, from 0
  Kind kind = Kind::kernel;
  std::string name;                   // the kernel's name; "memcpy" or "memset"
  uint64_t start_ns = 0, end_ns = 0;  // on the GPU's clock
  uint64_t bytes = 0;                 // memcpy, memset: bytes copied or set
};

struct Timings {
  // One per sample, µs: the sample's chain (one kernel, or several in order).
  // events: its event pair, the chain's first kernel to its last; cupti: the
  // sum of its kernels' own times; graph, batched: the mean over the chains
  // of a sample.
  std::vector<double> times_us;
  // calls (CallPlan): events, the event pair around the call on its stream;
  // cupti, the sum of the kernels the call issued.
  // cupti, for chains of more than one kernel (empty otherwise): each kernel's
  // own time, samples x kernels in row-major order, µs; and each sample's span,
  // its first kernel's start to its last kernel's end, µs.
  std::vector<double> kernel_times_us;
  std::vector<double> span_us;
  // cupti, calls: each sample's kernels, memcpys and memsets, sample by sample,
  // each sample's in the order they started.
  std::vector<Activity> activities;
  size_t launches_per_sample = 1;  // chains per sample: 1 for events and cupti; the batch/graph length otherwise
  double host_us = 0;              // host wall time spent issuing the launches, µs, all samples
  // The SM clock over the run, first sample to last (a clock probe's stamps
  // around them: CUDA), and the device's rated SM clock, MHz; 0 where not read.
  double clock_mhz = 0;
  double default_clock_mhz = 0;
};

class PYHIPBENCH_API Timer {  // one way of timing launches of a LaunchPlan
 public:
  virtual ~Timer() = default;
  virtual const std::string& name() const = 0;  // "events", "cupti", "batched", "graph"
  // `samples` samples; chain k of the run (its every kernel) uses argument set
  // (first_set + k) mod plan.sets(), so chunks continue the rotation. Makes the driver context current itself (and
  // restores the caller's on return). Nothing allocated inside the timed loop.
  virtual Timings run(LaunchPlan& plan, size_t samples, size_t first_set) = 0;
  // `samples` calls, each a sample (the events and cupti timers; the others
  // throw std::invalid_argument: they time launches they issue themselves).
  virtual Timings run(CallPlan& call, size_t samples);
  // Whether a call's sample holds the host's time to issue its work (the events timer's pair around the call),
  // so that a sample's time can stand for the call's kernels only where this is false.
  virtual bool call_samples_hold_issuing() const { return false; }

  // Keeps the timer's set-up across the runs of one measurement (measure() in
  // stopping.hpp opens one): the cupti timer subscribes to CUPTI and enables
  // kernel activity once, and each run then only flushes and reads its own
  // launches' records. Other timers set nothing up. While a session is open
  // only the thread that opened it runs the timer (another thread's run()
  // waits until it ends), so open, run and end it on one thread. Ending it
  // (end(), or the destructor on an error path) always turns the set-up off.
  class Session {
   public:
    explicit Session(Timer& timer) : timer_(&timer) { timer.begin_session(); }
    ~Session() {
      if (timer_ != nullptr) timer_->end_session(/*checked=*/false);
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    // Turns the set-up off; throws what the tear-down failed with (DriverError).
    void end() { std::exchange(timer_, nullptr)->end_session(/*checked=*/true); }

   private:
    Timer* timer_;
  };

 protected:
  virtual void begin_session() {}
  // Must leave the set-up off even when it throws; throws only if `checked`.
  virtual void end_session(bool checked) { (void)checked; }
};

// What a timer's constructor takes besides its driver and context.
struct TimerOptions {
  // graph: kernel nodes per graph; batched: launches per batch. Each sample
  // times that many launches (rotating) and reports their mean. 0 = the
  // timer's default (kDefaultLaunchesPerSample); events takes only 1.
  size_t launches_per_sample = 0;
  static constexpr size_t kDefaultLaunchesPerSample = 100;
  // batched, HIP only: the function handle (hipFunction_t as an int) of a
  // spin kernel with the signature of pyhipbench/kernels/amdgpu.ll's `spin`,
  // loaded on the timer's device. CUDA embeds its own: leave 0.
  uintptr_t spin_function = 0;
  // batched: how long the spin kernel holds the GPU waiting for the host to
  // queue a batch before it gives up and the run fails, ms.
  double spin_timeout_ms = 1000;
};

// A timer `name` on `driver`. `context`: CUDA, the CUcontext handle to push
// while running (for example the device's primary context); HIP, the device
// ordinal. Throws std::invalid_argument for an unknown name (listing those
// that exist) or options the timer cannot take.
PYHIPBENCH_API std::unique_ptr<Timer> make_timer(const std::string& name, std::shared_ptr<Driver> driver,
                                                 uintptr_t context, const TimerOptions& options = {});

// HIP's `rocprofiler` timer reads rocprofiler-sdk, which must be configured
// before the HIP runtime initialises: call this before the process's first
// HIP call. Loads `library` (empty: $PYHIPBENCH_ROCPROFILER_LIBRARY, else
// librocprofiler-sdk.so by the loader's search, $ROCM_PATH/lib, /opt/rocm/lib)
// and configures a kernel-dispatch trace, once per process; returns why the
// rocprofiler timer cannot trace, or "" when it can.
PYHIPBENCH_API std::string attach_rocprofiler(const std::string& library = "");

}  // namespace pyhipbench
