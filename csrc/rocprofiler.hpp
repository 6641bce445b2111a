// rocprofiler-sdk, loaded at run time: AMD's kernel-dispatch records, as
// CUPTI's activity records are NVIDIA's (the `rocprofiler` timer's source).
//
// The SDK's registration is process-wide and early: a tool configures it
// (rocprofiler_force_configure) before the HIP runtime initialises, since only
// then does the SDK receive HSA's API table and intercept the queues HIP
// creates; a context cannot be created after configuration. So the tracer is
// one per process, attached once (`attach`, which pyhipbench's HIP backend
// calls before its first HIP call) with one context and one buffer tracing
// kernel dispatches; a run switches the context on (`start`) and off (`stop`).
// A launch is tagged by pushing an external correlation id on the launching
// thread; its dispatch record carries the id, so a run finds its own records
// among any other dispatches. Where HIP had already initialised (another
// library in the process called it first, or an SDK up to ROCm 7.2, which has
// no late attach), the context records nothing: the timer refuses a run whose
// dispatches did not all come back, and pyhipbench's default probe falls back
// to events.
//
// The ABI followed is rocprofiler-sdk's from ROCm 6.2 (SDK 0.4) to ROCm 7.x
// (SDK 1.x): the calls below and the kernel-dispatch record's layout are the
// same in all (csrc/rocprofiler.cpp spells them out). Tested against a fake
// librocprofiler-sdk (tests/fakes/fake_rocprofiler.c); not run on AMD hardware.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dynamic_library.hpp"

namespace pyhipbench {

struct DispatchRecord {
  uint64_t external_id = 0;  // the id the launching thread had pushed; 0: none
  uint64_t start_ns = 0;     // the dispatch's start and end on the GPU, ns
  uint64_t end_ns = 0;
};

class RocprofilerTracer {
 public:
  // The process's tracer.
  static RocprofilerTracer& instance();

  // Loads rocprofiler-sdk (`library`; empty: $PYHIPBENCH_ROCPROFILER_LIBRARY,
  // else librocprofiler-sdk.so by the loader's search, then under $ROCM_PATH
  // and /opt/rocm) and configures the trace. The first call does the work;
  // every call returns why the tracer cannot trace ("" when it can).
  std::string attach(const std::string& library = "");
  // Why it cannot trace: "" once attached; "not attached" before.
  std::string unavailable() const;

  // Ids for `count` launches, fresh in the process: [first, first + count).
  uint64_t reserve(size_t count);
  void start();
  void stop();
  // Tags the launches the calling thread makes until pop() with `id`.
  void push(uint64_t id);
  void pop();
  // Every record the SDK has delivered since the last call (waits for its
  // buffer thread to deliver what it holds).
  std::vector<DispatchRecord> flush();

  // Called from the SDK (its configure and buffer callbacks).
  int initialize();
  void deliver(const DispatchRecord& record);

 private:
  RocprofilerTracer() = default;
  struct Api;
  void check(const char* call, int status) const;

  mutable std::mutex mutex_;
  std::unique_ptr<DynamicLibrary> library_;
  std::unique_ptr<Api> api_;
  bool attach_tried_ = false;
  std::string unavailable_ = "not attached";
  uint64_t context_ = 0;
  uint64_t buffer_ = 0;
  uint64_t next_id_ = 1;
  std::vector<DispatchRecord> delivered_;
};

}  // namespace pyhipbench
