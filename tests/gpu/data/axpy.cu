// Compiled by the GPU tests with nvcc into a cubin and a fatbin.
extern "C" __global__ void axpy(float a, const float* x, float* y, int n, char flag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && flag) y[i] += a * x[i];
}
