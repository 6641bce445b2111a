// Compiled by the GPU tests with NVRTC (pyhipbench.source): a template kernel, FACTOR from -D.
template <typename T>
__global__ void scale(const T* x, T* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * T(FACTOR);
}
