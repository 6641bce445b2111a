// Compiled (not run) by test_cupti_layout.py where a CUDA toolkit's CUPTI headers
// are installed: the types and offsets csrc/cupti.hpp declares so that the core
// builds without the SDK must be CUPTI's own.
#include <cstddef>
#include <type_traits>

// generated_cuda_meta.h names the _v1 driver types, which cuda.h declares only with this.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_version.h>
#include <generated_cuda_meta.h>
#if CUPTI_API_VERSION >= 130000
#include <cupti_activity_deprecated.h>
#endif

#include "cupti.hpp"

namespace record = pyhipbench::cupti::kernel_record;
namespace ours = pyhipbench::cupti;

#define CHECK_KERNEL_RECORD(T)                                                       \
  static_assert(offsetof(T, kind) == record::kKind, #T ".kind");                     \
  static_assert(offsetof(T, start) == record::kStart, #T ".start");                  \
  static_assert(offsetof(T, end) == record::kEnd, #T ".end");                        \
  static_assert(offsetof(T, streamId) == record::kStreamId, #T ".streamId");         \
  static_assert(offsetof(T, gridX) == record::kGrid, #T ".gridX");                   \
  static_assert(offsetof(T, gridZ) == record::kGrid + 8, #T ".gridZ");               \
  static_assert(offsetof(T, blockX) == record::kBlock, #T ".blockX");                \
  static_assert(offsetof(T, blockZ) == record::kBlock + 8, #T ".blockZ");            \
  static_assert(offsetof(T, correlationId) == record::kCorrelationId, #T ".corrId"); \
  static_assert(offsetof(T, name) == record::kName, #T ".name");                     \
  static_assert(sizeof(T) >= record::kEndOfFields, #T " size");

CHECK_KERNEL_RECORD(CUpti_ActivityKernel4)
CHECK_KERNEL_RECORD(CUpti_ActivityKernel5)
CHECK_KERNEL_RECORD(CUpti_ActivityKernel6)
CHECK_KERNEL_RECORD(CUpti_ActivityKernel7)
CHECK_KERNEL_RECORD(CUpti_ActivityKernel8)
CHECK_KERNEL_RECORD(CUpti_ActivityKernel9)
#if CUPTI_API_VERSION >= 130000
CHECK_KERNEL_RECORD(CUpti_ActivityKernel10)
#endif

static_assert(sizeof(CUpti_ActivityKind) == sizeof(uint32_t), "kind is read as uint32_t");
static_assert(CUPTI_ACTIVITY_KIND_KERNEL == ours::kKindKernel, "KERNEL");
static_assert(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == ours::kKindConcurrentKernel, "CONCURRENT_KERNEL");
static_assert(CUPTI_CB_DOMAIN_DRIVER_API == ours::kDomainDriverApi, "driver API domain");
static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel == ours::kCallbackCuLaunchKernel, "cuLaunchKernel cbid");
static_assert(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch == ours::kCallbackCuGraphLaunch, "cuGraphLaunch cbid");
static_assert(CUPTI_CB_DOMAIN_RUNTIME_API == ours::kDomainRuntimeApi, "runtime API domain");
static_assert(CUPTI_API_ENTER == ours::kApiEnter, "API enter");
static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == ours::kKindMemcpy, "MEMCPY");
static_assert(CUPTI_ACTIVITY_KIND_MEMSET == ours::kKindMemset, "MEMSET");

namespace copy = pyhipbench::cupti::copy_record;
#define CHECK_COPY_RECORD(T)                                                       \
  static_assert(offsetof(T, bytes) == copy::kBytes, #T ".bytes");                  \
  static_assert(offsetof(T, start) == copy::kStart, #T ".start");                  \
  static_assert(offsetof(T, end) == copy::kEnd, #T ".end");                        \
  static_assert(offsetof(T, correlationId) == copy::kCorrelationId, #T ".corrId"); \
  static_assert(sizeof(T) >= copy::kEndOfFields, #T " size");
CHECK_COPY_RECORD(CUpti_ActivityMemcpy5)
CHECK_COPY_RECORD(CUpti_ActivityMemset4)
#if CUPTI_API_VERSION >= 130000
CHECK_COPY_RECORD(CUpti_ActivityMemcpy6)
#endif
static_assert(offsetof(CUpti_ActivityMemcpy5, copyKind) == copy::kCopyKind, "memcpy copyKind");
static_assert(CUPTI_API_EXIT == ours::kApiExit, "API exit");
static_assert(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED == ours::kFlushForced, "forced flush");
static_assert(CUPTI_SUCCESS == ours::kSuccess, "success");
static_assert(CUPTI_ERROR_MAX_LIMIT_REACHED == ours::kMaxLimitReached, "max limit reached");
static_assert(CUPTI_ERROR_INVALID_KIND == ours::kInvalidKind, "invalid kind");

static_assert(offsetof(CUpti_CallbackData, callbackSite) == offsetof(ours::CallbackData, callback_site), "site");
static_assert(offsetof(CUpti_CallbackData, functionParams) == offsetof(ours::CallbackData, function_params),
              "functionParams");
static_assert(offsetof(CUpti_CallbackData, functionReturnValue) == offsetof(ours::CallbackData, function_return_value),
              "functionReturnValue");
static_assert(offsetof(CUpti_CallbackData, correlationId) == offsetof(ours::CallbackData, correlation_id),
              "correlationId");
static_assert(offsetof(cuLaunchKernel_params, f) == 0, "cuLaunchKernel_params begins with the CUfunction");
static_assert(std::is_same<CUpti_BuffersCallbackRequestFunc, ours::BufferRequested>::value, "buffer request");
