/* The rest of a fake HIP runtime: the calls pyhipbench's HipBackend makes
 * through hip-python (device queries, memory, modules, versions).
 *
 * Compiled together with fake_driver.c (which has the launch, event and error
 * name symbols) into one libamdhip64.so, so hip-python and the C++ core load
 * the same fake, as they load the same runtime on a real machine.
 *
 * One fake device: an MI300X (gfx942) that reports a 4 MiB L2 and 304 CUs.
 * Device memory is host memory, so copies really copy and tests can check
 * contents (hipMemsetAsync and hipMemcpyDtoDAsync too, at once, each taking
 * the fake driver's copy time on its clock). Modules must be AMDGPU ELF code
 * objects; kernels are looked up in the ELF symbol table, as the real runtime
 * finds them by symbol.
 *
 * Environment, read at each call so one process can change it:
 *   FAKE_HIP_DEVICE_COUNT     devices reported (default 1; 0 = no device)
 *   FAKE_HIP_INIT_ERROR       the hipError_t hipInit returns (default 0, success)
 *   FAKE_KERNEL_FAULT, FAKE_KERNEL_HANG, FAKE_KERNEL_ABORT: kernels that misbehave (fake_driver.c)
 *   FAKE_HIP_RUNTIME_VERSION  what hipRuntimeGetVersion returns, as HIP encodes
 *                             it: major*10000000 + minor*100000 + patch
 *                             (default FAKE_HIP_DEFAULT_VERSION: tests/fakes/build.py
 *                             sets it to the installed hip-python's HIP version)
 *   FAKE_HIP_SHARED_OPTIN     sharedMemPerBlockOptin, bytes (default 65536: as ROCm
 *                             reports on MI300X, the same as sharedMemPerBlock)
 *   FAKE_HIP_FUNC_MAX_THREADS what hipFuncGetAttribute reports as every kernel's
 *                             HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (default 1024)
 *   FAKE_HIP_FUNC_STATIC_SHARED  ... as its HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (default 0)
 */
#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_launch_observer.h" /* FAKE_WORK_MEMCPY, FAKE_WORK_MEMSET */

#ifndef FAKE_HIP_DEFAULT_VERSION
#define FAKE_HIP_DEFAULT_VERSION 70253211 /* HIP 7.2.53211, what hip-python 7.2.2 was built for */
#endif

/* The hipDeviceProp_t revision the paired hip-python declares, 600 for
 * hipDeviceProp_tR0600 (tests/fakes/build.py reads it from the bindings' .pxd).
 * hip-python 6.2 to 7.2 and 10.0 (HIP 7.15) all bind hipGetDevicePropertiesR0600
 * with hipDeviceProp_tR0600: 1472 bytes, every field at the same offset, measured
 * through 7.2.2 and 10.0.0.0.1.2. So R0600 is the one layout mirrored here; a
 * hip-python that declares another revision fails the build instead of reading
 * this one. */
#ifndef FAKE_HIP_DEVICE_PROP
#define FAKE_HIP_DEVICE_PROP 600
#endif
#if FAKE_HIP_DEVICE_PROP != 600
#error "the installed hip-python declares a hipDeviceProp_t revision other than R0600: mirror its layout here"
#endif

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif

/* hipError_t values used here (from hip-python's hipError_t enum). */
enum {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotFound = 500,
};

/* hipDeviceProp_tR0600, the struct hipGetDevicePropertiesR0600 fills. Field
 * order and types follow hip-python 7.2's chip.pxd (10.0's cyhip.pxd declares
 * the same); the offsets asserted below were measured through hip-python's own
 * accessors (set a field, find the changed byte), and the tests read every
 * field set here back through hip-python. */
typedef struct {
  /* In HIP's header these are one-bit fields: the whole struct is 4 bytes. */
  unsigned hasGlobalInt32Atomics : 1, hasGlobalFloatAtomicExch : 1, hasSharedInt32Atomics : 1,
      hasSharedFloatAtomicExch : 1, hasFloatAtomicAdd : 1, hasGlobalInt64Atomics : 1, hasSharedInt64Atomics : 1,
      hasDoubles : 1, hasWarpVote : 1, hasWarpBallot : 1, hasWarpShuffle : 1, hasFunnelShift : 1,
      hasThreadFenceSystem : 1, hasSyncThreadsExt : 1, hasSurfaceFuncs : 1, has3dGrid : 1, hasDynamicParallelism : 1;
} fake_device_arch;

typedef struct {
  char name[256];
  char uuid[16];
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseHipArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingHipArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
  size_t maxSharedMemoryPerMultiProcessor;
  int clockInstructionRate;
  fake_device_arch arch;
  unsigned int* hdpMemFlushCntl;
  unsigned int* hdpRegFlushCntl;
  int cooperativeMultiDeviceUnmatchedFunc;
  int cooperativeMultiDeviceUnmatchedGridDim;
  int cooperativeMultiDeviceUnmatchedBlockDim;
  int cooperativeMultiDeviceUnmatchedSharedMem;
  int isLargeBar;
  int asicRevision;
} fake_device_prop;

/* Measured through hip-python 7.2.2 and 10.0.0.0.1.2 (hipDeviceProp_t.c_sizeof() and setters). */
_Static_assert(sizeof(fake_device_prop) == 1472, "hipDeviceProp_tR0600 is 1472 bytes");
_Static_assert(offsetof(fake_device_prop, totalGlobalMem) == 288, "totalGlobalMem");
_Static_assert(offsetof(fake_device_prop, sharedMemPerBlock) == 296, "sharedMemPerBlock");
_Static_assert(offsetof(fake_device_prop, maxThreadsPerBlock) == 320, "maxThreadsPerBlock");
_Static_assert(offsetof(fake_device_prop, multiProcessorCount) == 388, "multiProcessorCount");
_Static_assert(offsetof(fake_device_prop, l2CacheSize) == 616, "l2CacheSize");
_Static_assert(offsetof(fake_device_prop, unifiedFunctionPointers) == 776, "unifiedFunctionPointers");
_Static_assert(offsetof(fake_device_prop, maxSharedMemoryPerMultiProcessor) == 1416,
               "maxSharedMemoryPerMultiProcessor");
_Static_assert(offsetof(fake_device_prop, isLargeBar) == 1464, "isLargeBar");

#define FAKE_TOTAL_BYTES 192000000000ull    /* 192 GB, as pyhipbench's mi300x profile */
#define FAKE_HIP_L2_BYTES (4 * 1024 * 1024) /* one XCD's L2, as HIP reports on MI300X */

static int env_int(const char* name, int fallback) {
  const char* text = getenv(name);
  return text && *text ? atoi(text) : fallback;
}

static int device_count(void) { return env_int("FAKE_HIP_DEVICE_COUNT", 1); }

/* ---- initialization, versions, devices ---- */
static int initialized; /* hipInit succeeded: what a profiler configured later misses (fake_rocprofiler.c) */
int fake_hip_initialized(void) { return initialized; }

int hipInit(unsigned flags) {
  if (flags != 0) return hipErrorInvalidValue;
  const int err = env_int("FAKE_HIP_INIT_ERROR", hipSuccess);
  if (err == hipSuccess) initialized = 1;
  return err;
}

int hipRuntimeGetVersion(int* version) {
  if (!version) return hipErrorInvalidValue;
  *version = env_int("FAKE_HIP_RUNTIME_VERSION", FAKE_HIP_DEFAULT_VERSION);
  return hipSuccess;
}

int hipDriverGetVersion(int* version) { return hipRuntimeGetVersion(version); }

/* As ROCm: no GPU is an error, not a count of zero. */
int hipGetDeviceCount(int* count) {
  if (!count) return hipErrorInvalidValue;
  *count = device_count();
  return *count > 0 ? hipSuccess : hipErrorNoDevice;
}

/* hipSetDevice and hipGetDevice are in fake_driver.c, which records them. */

/* hipDeviceAttributeL2CacheSize (19) only, as hipGetDeviceProperties' l2CacheSize;
 * any other attribute is hipErrorInvalidValue. */
int hipDeviceGetAttribute(int* value, int attribute, int device) {
  if (!value || attribute != 19) return hipErrorInvalidValue;
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  *value = FAKE_HIP_L2_BYTES;
  return hipSuccess;
}

int hipGetDevicePropertiesR0600(fake_device_prop* prop, int device) {
  if (!prop) return hipErrorInvalidValue;
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  memset(prop, 0, sizeof *prop);
  strcpy(prop->name, "AMD Instinct MI300X (fake)");
  strcpy(prop->gcnArchName, "gfx942:sramecc+:xnack-");
  prop->totalGlobalMem = FAKE_TOTAL_BYTES;
  prop->sharedMemPerBlock = 64 * 1024;
  prop->sharedMemPerBlockOptin = env_int("FAKE_HIP_SHARED_OPTIN", 64 * 1024);
  prop->warpSize = 64;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 1024;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65536;
  prop->maxGridSize[2] = 65536;
  prop->major = 9;
  prop->minor = 4;
  prop->multiProcessorCount = 304;
  prop->l2CacheSize = FAKE_HIP_L2_BYTES;
  prop->maxSharedMemoryPerMultiProcessor = 64 * 1024;
  prop->isLargeBar = 1;
  prop->clockRate = 2100000; /* kHz */
  prop->memoryClockRate = 1300000;
  prop->ECCEnabled = 1;
  prop->pciDomainID = 0;
  prop->pciBusID = 0x1b;
  prop->pciDeviceID = 0;
  return hipSuccess;
}

/* ---- memory: host memory standing in for device memory ---- */
typedef struct allocation {
  char* base;
  size_t bytes;
  int device; /* the device current when it was allocated */
  struct allocation* next;
} allocation;
int fake_current_device(void);                                                      /* fake_driver.c */
int fake_host_allocation_range(uintptr_t address, uintptr_t* start, size_t* bytes); /* fake_driver.c */

static allocation* allocations;
static size_t allocated_bytes;
static int live_allocations;
int fake_hip_live_allocations(void) { return live_allocations; }

/* The live allocation holding [address, address + bytes), or NULL. */
static allocation* find_range(const void* address, size_t bytes) {
  const char* p = address;
  for (allocation* a = allocations; a; a = a->next)
    if (p >= a->base && p <= a->base + a->bytes && bytes <= (size_t)(a->base + a->bytes - p)) return a;
  return NULL;
}

int hipMalloc(void** ptr, size_t bytes) {
  if (!ptr) return hipErrorInvalidValue;
  *ptr = NULL;
  if (bytes == 0) return hipSuccess; /* as HIP: nothing allocated, NULL returned */
  if (bytes > FAKE_TOTAL_BYTES - allocated_bytes) return hipErrorOutOfMemory;
  allocation* a = malloc(sizeof *a);
  if (!a) return hipErrorOutOfMemory;
  a->base = aligned_alloc(256, (bytes + 255) / 256 * 256); /* HIP aligns allocations to >= 256 B */
  if (!a->base) {
    free(a);
    return hipErrorOutOfMemory;
  }
  a->bytes = bytes;
  a->device = fake_current_device();
  a->next = allocations;
  allocations = a;
  allocated_bytes += bytes;
  ++live_allocations;
  *ptr = a->base;
  return hipSuccess;
}

int hipFree(void* ptr) {
  if (!ptr) return hipSuccess;
  for (allocation** link = &allocations; *link; link = &(*link)->next) {
    allocation* a = *link;
    if (a->base == ptr) {
      *link = a->next;
      allocated_bytes -= a->bytes;
      --live_allocations;
      free(a->base);
      free(a);
      return hipSuccess;
    }
  }
  return hipErrorInvalidValue;
}

int hipMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return hipErrorInvalidValue;
  *total_bytes = FAKE_TOTAL_BYTES;
  *free_bytes = FAKE_TOTAL_BYTES - allocated_bytes;
  return hipSuccess;
}

/* Device ranges must lie inside one live allocation, so tests catch copies
 * past the end of a buffer. */
int hipMemcpyHtoD(void* device, const void* host, size_t bytes) {
  if (!find_range(device, bytes) || (!host && bytes)) return hipErrorInvalidValue;
  memcpy(device, host, bytes);
  return hipSuccess;
}

int hipMemcpyDtoH(void* host, void* device, size_t bytes) {
  if (!find_range(device, bytes) || (!host && bytes)) return hipErrorInvalidValue;
  memcpy(host, device, bytes);
  return hipSuccess;
}

/* Whether a device-to-device copy may read or write [address, address + bytes):
 * inside one live allocation, or clear of every one. The second is host memory
 * a test owns standing in for device memory made elsewhere in the process (the
 * host backend's arrays, fake tensors), as the real runtime copies between
 * allocations made through other bindings of it. */
static int copyable_range(const void* address, size_t bytes) {
  if (!address) return 0;
  if (find_range(address, bytes)) return 1;
  const char* p = address;
  for (allocation* a = allocations; a; a = a->next) {
    const int overlaps = a->base <= p ? (size_t)(p - a->base) < a->bytes : (size_t)(a->base - p) < bytes;
    if (overlaps) return 0; /* runs into or past an allocation: not inside it */
  }
  return 1;
}

int hipMemcpyDtoD(void* destination, void* source, size_t bytes) {
  if (!copyable_range(destination, bytes) || !copyable_range(source, bytes)) return hipErrorInvalidValue;
  memmove(destination, source, bytes);
  return hipSuccess;
}

/* The asynchronous forms, for per-sample reset steps: checked as hipMemcpyDtoD,
 * then run (or, on a capturing stream, captured) by fake_driver.c, which
 * records them as "hipMemsetAsync" / "hipMemcpyDtoDAsync", sets or copies the
 * memory at once and gives each its copy time on the fake clock. */
int fake_injected(const char* call); /* fake_driver.c */
int fake_issue_copy(const char* call, int kind, uint8_t copy_kind, void* destination, const void* source,
                    uint32_t value, size_t bytes, void* stream, uint32_t correlation_id); /* fake_driver.c */

int hipMemsetAsync(void* destination, int value, size_t bytes, void* stream) {
  int err = fake_injected("hipMemsetAsync");
  if (err) return err;
  if (!copyable_range(destination, bytes)) return hipErrorInvalidValue;
  return fake_issue_copy("hipMemsetAsync", FAKE_WORK_MEMSET, 0, destination, NULL, (uint32_t)(value & 0xFF), bytes,
                         stream, 0);
}

int hipMemcpyDtoDAsync(void* destination, void* source, size_t bytes, void* stream) {
  int err = fake_injected("hipMemcpyDtoDAsync");
  if (err) return err;
  if (!copyable_range(destination, bytes) || !copyable_range(source, bytes)) return hipErrorInvalidValue;
  return fake_issue_copy("hipMemcpyDtoDAsync", FAKE_WORK_MEMCPY, 8 /* DTOD */, destination, source, 0, bytes, stream,
                         0);
}

/* ---- pointer attributes ----
 * hipPointerAttribute_t as hip-python 7.2's chip.pxd declares it (10.0's
 * cyhip.pxd the same). An address inside a live hipMalloc allocation is device
 * memory (hipMemoryTypeDevice) of the device it was allocated on; inside a
 * hipHostMalloc one, host memory (hipMemoryTypeHost); anything else (plain host
 * memory, a test's buffers) is memory HIP does not know: hipErrorInvalidValue,
 * as ROCm answers for unregistered host memory. hipMemGetAddressRange gives a
 * device allocation's start and size, hipErrorNotFound for anything else. */
typedef struct {
  int type; /* hipMemoryType: 1 host, 2 device */
  int device;
  void* devicePointer;
  void* hostPointer;
  int isManaged;
  unsigned allocationFlags;
} fake_pointer_attributes;
_Static_assert(sizeof(fake_pointer_attributes) == 32, "hipPointerAttribute_t is 32 bytes");

static allocation* find_allocation(const void* address) {
  const char* p = address;
  for (allocation* a = allocations; a; a = a->next)
    if (p >= a->base && p < a->base + a->bytes) return a;
  return NULL;
}

int hipPointerGetAttributes(fake_pointer_attributes* attributes, const void* ptr) {
  if (!attributes || !ptr) return hipErrorInvalidValue;
  memset(attributes, 0, sizeof *attributes);
  const allocation* a = find_allocation(ptr);
  uintptr_t start;
  size_t bytes;
  if (a) {
    attributes->type = 2;
    attributes->device = a->device;
    attributes->devicePointer = (void*)ptr;
    return hipSuccess;
  }
  if (fake_host_allocation_range((uintptr_t)ptr, &start, &bytes)) {
    attributes->type = 1;
    attributes->device = fake_current_device();
    attributes->hostPointer = (void*)ptr;
    return hipSuccess;
  }
  return hipErrorInvalidValue;
}

int hipMemGetAddressRange(void** base, size_t* size, void* ptr) {
  const allocation* a = find_allocation(ptr);
  if (!a) return hipErrorNotFound;
  if (base) *base = a->base;
  if (size) *size = a->bytes;
  return hipSuccess;
}

int hipDeviceSynchronize(void) { return hipSuccess; }

/* ---- streams: hipStreamCreate and hipStreamDestroy are in fake_driver.c (capture needs them) ---- */
int hipStreamSynchronize(void* stream) {
  (void)stream;
  return hipSuccess;
}

/* ---- modules: AMDGPU ELF code objects ---- */
typedef struct fake_function {
  char name[256];
  int max_dynamic_shared; /* hipFuncAttributeMaxDynamicSharedMemorySize as last set, bytes */
  struct fake_function* next;
} fake_function;

typedef struct module {
  unsigned char* image; /* a copy: the caller may free its buffer after loading, as with HIP */
  size_t bytes;
  fake_function* functions; /* handles given out, valid until unload */
  struct module* next;
} module;

static module* modules;

static int is_live_module(const module* m) {
  for (module* each = modules; each; each = each->next)
    if (each == m) return 1;
  return 0;
}

/* The ELF64 header if `image` is an AMDGPU code object, else NULL. The size is
 * not passed to hipModuleLoadData, so it is read from the headers: the section
 * header table ends the file ld.lld writes. */
static const Elf64_Ehdr* amdgpu_elf(const void* image, size_t* bytes) {
  const Elf64_Ehdr* header = image;
  if (memcmp(header->e_ident, ELFMAG, SELFMAG) != 0) return NULL;
  if (header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_machine != EM_AMDGPU) return NULL;
  if (header->e_shentsize != sizeof(Elf64_Shdr)) return NULL;
  *bytes = header->e_shoff + (size_t)header->e_shnum * sizeof(Elf64_Shdr);
  return header;
}

int hipModuleLoadData(module** out, const void* image) {
  if (!out || !image) return hipErrorInvalidValue;
  *out = NULL;
  size_t bytes;
  if (!amdgpu_elf(image, &bytes)) return hipErrorInvalidImage;
  module* m = calloc(1, sizeof *m);
  if (!m) return hipErrorOutOfMemory;
  m->image = malloc(bytes);
  if (!m->image) {
    free(m);
    return hipErrorOutOfMemory;
  }
  memcpy(m->image, image, bytes);
  m->bytes = bytes;
  m->next = modules;
  modules = m;
  *out = m;
  return hipSuccess;
}

int hipModuleUnload(module* m) {
  for (module** link = &modules; *link; link = &(*link)->next) {
    if (*link == m) {
      *link = m->next;
      while (m->functions) {
        fake_function* next = m->functions->next;
        free(m->functions);
        m->functions = next;
      }
      free(m->image);
      free(m);
      return hipSuccess;
    }
  }
  return hipErrorInvalidResourceHandle;
}

/* Whether the symbol table holds `name` with type `type`. */
static int has_symbol(const module* m, const char* name, int type) {
  const Elf64_Ehdr* header = (const Elf64_Ehdr*)m->image;
  const Elf64_Shdr* sections = (const Elf64_Shdr*)(m->image + header->e_shoff);
  for (int s = 0; s < header->e_shnum; ++s) {
    if (sections[s].sh_type != SHT_SYMTAB && sections[s].sh_type != SHT_DYNSYM) continue;
    if (sections[s].sh_link >= header->e_shnum) continue;
    const Elf64_Shdr* strings = &sections[sections[s].sh_link];
    if (sections[s].sh_offset + sections[s].sh_size > m->bytes || strings->sh_offset + strings->sh_size > m->bytes)
      continue;
    const Elf64_Sym* symbols = (const Elf64_Sym*)(m->image + sections[s].sh_offset);
    const char* names = (const char*)(m->image + strings->sh_offset);
    size_t count = sections[s].sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < count; ++i) {
      if (symbols[i].st_name >= strings->sh_size) continue;
      if (ELF64_ST_TYPE(symbols[i].st_info) == type && strcmp(names + symbols[i].st_name, name) == 0) return 1;
    }
  }
  return 0;
}

/* A kernel is its code (an STT_FUNC symbol `name`) plus its kernel descriptor
 * (the object `name.kd`), which is what the real runtime dispatches from; a
 * device function has no descriptor and is not found. As HIP, one name gives
 * one handle. */
int hipModuleGetFunction(fake_function** out, module* m, const char* name) {
  if (!out || !name) return hipErrorInvalidValue;
  *out = NULL;
  if (!is_live_module(m)) return hipErrorInvalidResourceHandle;
  char descriptor[sizeof((fake_function*)0)->name + 3];
  if (strlen(name) >= sizeof((fake_function*)0)->name) return hipErrorNotFound;
  for (fake_function* f = m->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *out = f;
      return hipSuccess;
    }
  strcpy(descriptor, name);
  strcat(descriptor, ".kd");
  if (!has_symbol(m, name, STT_FUNC) || !has_symbol(m, descriptor, STT_OBJECT)) return hipErrorNotFound;
  fake_function* f = calloc(1, sizeof *f);
  if (!f) return hipErrorOutOfMemory;
  strcpy(f->name, name);
  f->next = m->functions;
  m->functions = f;
  *out = f;
  return hipSuccess;
}

/* ---- kernel attributes ---- */
/* hipFunction_attribute and hipFuncAttribute values used here (from hip-python's enums). */
enum {
  HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  hipFuncAttributeMaxDynamicSharedMemorySize = 8,
};

static fake_function* live_function(const void* handle) {
  for (module* m = modules; m; m = m->next)
    for (fake_function* f = m->functions; f; f = f->next)
      if (f == handle) return f;
  return NULL;
}

int hipFuncGetAttribute(int* value, int attribute, const void* function) {
  if (!value) return hipErrorInvalidValue;
  fake_function* f = live_function(function);
  if (!f) return hipErrorInvalidDeviceFunction;
  switch (attribute) {
    case HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = env_int("FAKE_HIP_FUNC_MAX_THREADS", 1024);
      break;
    case HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = env_int("FAKE_HIP_FUNC_STATIC_SHARED", 0);
      break;
    case HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = f->max_dynamic_shared;
      break;
    default:
      return hipErrorInvalidValue;
  }
  return hipSuccess;
}

/* As CUDA's cuFuncSetAttribute: static + the new maximum must fit the opt-in limit. */
int hipFuncSetAttribute(const void* function, int attribute, int value) {
  fake_function* f = live_function(function);
  if (!f) return hipErrorInvalidDeviceFunction;
  if (attribute != hipFuncAttributeMaxDynamicSharedMemorySize) return hipErrorInvalidValue;
  int limit = env_int("FAKE_HIP_SHARED_OPTIN", 64 * 1024) - env_int("FAKE_HIP_FUNC_STATIC_SHARED", 0);
  if (value < 0 || value > limit) return hipErrorInvalidValue;
  f->max_dynamic_shared = value;
  return hipSuccess;
}

/* The kernel name of a function handle this runtime gave out, or NULL (fake_driver.c's misbehaving kernels). */
const char* fake_function_name(uintptr_t function) {
  for (module* m = modules; m; m = m->next)
    for (fake_function* f = m->functions; f; f = f->next)
      if ((uintptr_t)f == function) return f->name;
  return NULL;
}
