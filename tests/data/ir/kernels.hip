// Source of the kernels_gfx*.ll test data (see PROVENANCE.md).
// No HIP headers: built with -nogpuinc, so the attributes are spelled out.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))

static __device__ long global_id() {
  return (long)__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
         __builtin_amdgcn_workitem_id_x();
}

// A non-kernel function that survives optimisation: the IR pass must leave it alone.
extern "C" __device__ __attribute__((noinline)) float twice(float x) { return 2.0f * x; }

// An argument named `n`: LLVM <= 19 reads it as a YAML boolean in LLVM 22's metadata.
extern "C" __global__ void copy(const float* __restrict__ src, float* __restrict__ dst, long n) {
  long i = global_id();
  if (i < n) dst[i] = src[i];
}

extern "C" __global__ void scale(float* x, float a, int n) {
  long i = global_id();
  if (i < n) x[i] = a * twice(x[i]);
}
