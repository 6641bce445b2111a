// Source of copy_sm_90.ll (see PROVENANCE.md). No CUDA headers (-nocudainc).
#define __global__ __attribute__((global))

extern "C" __global__ void copy(const float* __restrict__ src, float* __restrict__ dst, long n) {
  long i = (long)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
           __nvvm_read_ptx_sreg_tid_x();
  if (i < n) dst[i] = src[i];
}
