"""A CUDA C++ row softmax compiled with NVRTC and timed by pyhipbench on torch tensors, in two cache states.

The kernel below is a template (element type, threads per block): pyhipbench.codegen.source.compile_source
compiles it with NVRTC into a cubin for the GPU (sm_90a on an H200), with the name expression
"row_softmax<float, 256>" and the option -DFAST_EXP (the exponential as __expf). x and y are torch
tensors, passed to the kernel through DLPack. pyhipbench._measure.bench times one block per row,
cache "clean-cold" (the L2 flushed before each launch) and "warm" (x and y left in it), and
before timing checks the kernel's y against torch.softmax (expect=, rtol 1e-4: __expf is not
expf). It prints each result's summary line and its effective bandwidth (x read, y written).

    python examples/cuda_source_with_torch.py [--rows 4096] [--cols 1024]

Needs an NVIDIA GPU, torch with CUDA, cuda-bindings and NVRTC (pip install ".[cuda,nvrtc]" torch).
Without torch or a GPU it says so and exits with status 1.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import pyhipbench as hb
from pyhipbench.codegen.source import compile_source

SOURCE = r"""
#ifdef FAST_EXP
#define EXP(v) __expf(v)
#else
#define EXP(v) expf(v)
#endif

struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };

// `value` combined by `op` over the block's THREADS threads, returned to every thread.
template <int THREADS, typename Op>
__device__ float block_reduce(float value, Op op) {
  __shared__ float partial[THREADS / 32];
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  value = partial[0];
  for (int warp = 1; warp < THREADS / 32; ++warp) value = op(value, partial[warp]);
  __syncthreads();  // partial is written again by the next reduction
  return value;
}

// y[row] = softmax(x[row]) for a C-contiguous rows x cols x; one block of THREADS threads per row.
template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) row_softmax(const T* x, T* y, int cols) {
  static_assert(THREADS % 32 == 0, "whole warps");
  const T* in = x + (long long)blockIdx.x * cols;
  T* out = y + (long long)blockIdx.x * cols;
  float largest = -3.402823466e38f;
  for (int i = threadIdx.x; i < cols; i += THREADS) largest = fmaxf(largest, float(in[i]));
  largest = block_reduce<THREADS>(largest, Max());
  float total = 0.0f;
  for (int i = threadIdx.x; i < cols; i += THREADS) total += EXP(float(in[i]) - largest);
  total = block_reduce<THREADS>(total, Sum());
  for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = T(EXP(float(in[i]) - largest) / total);
}
"""
THREADS = 256
NAME_EXPRESSION = f"row_softmax<float, {THREADS}>"
OPTIONS = ["-DFAST_EXP", "-std=c++17"]
CACHE_STATES = ("clean-cold", "warm")
ATOL, RTOL = 1e-7, 1e-4  # __expf's error, relative (its argument is at most 0 here, so outputs are in [0, 1])


def compile_softmax(device: hb.Device) -> hb.Kernel:
    """row_softmax<float, THREADS> compiled by NVRTC for `device`'s processor and loaded on it."""
    code = compile_source(device, SOURCE, name_expressions=[NAME_EXPRESSION], options=OPTIONS)
    return device.load_module(code.data).kernel(code.lowered_names[NAME_EXPRESSION])


def bench_softmax(kernel: hb.Kernel, x, y, *, reference: np.ndarray | None, **bench_options) -> dict[str, hb.Result]:
    """Times `kernel` on x -> y (rows x cols float32: torch tensors or pyhipbench arrays) in each of CACHE_STATES.

    `reference`: the host array y must hold after one launch, checked by bench's expect= on every
    argument set before timing (OutputMismatch if not); None checks nothing (the tests' fake
    driver runs no kernel). `bench_options`: pyhipbench._measure.bench's other options.
    """
    rows, cols = x.shape
    verify = {} if reference is None else {"expect": {1: reference}, "atol": ATOL, "rtol": RTOL}
    return {cache: hb.bench(kernel, (rows,), (THREADS,), [x, y, hb.int32(cols)], cache=cache,
                            **verify, **bench_options)
            for cache in CACHE_STATES}


def positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=positive, default=4096)
    parser.add_argument("--cols", type=positive, default=1024)
    options = parser.parse_args(argv)
    try:
        import torch
    except ImportError as error:
        sys.exit(f"cuda_source_with_torch.py needs torch with CUDA ({error}): pip install torch")
    if not torch.cuda.is_available():
        sys.exit(f"cuda_source_with_torch.py needs an NVIDIA GPU: torch {torch.__version__} sees no CUDA device")
    x = torch.randn(options.rows, options.cols, device="cuda")
    y = torch.empty_like(x)
    reference = torch.softmax(x, dim=1).cpu().numpy()
    try:  # no usable GPU for pyhipbench, a compile error, or y differing from the reference (OutputMismatch)
        device = hb.Device("cuda", torch.cuda.current_device())
        kernel = compile_softmax(device)
        print(f"{NAME_EXPRESSION} ({' '.join(OPTIONS)}) on {device.properties.name}, "
              f"{options.rows} x {options.cols} float32")
        results = bench_softmax(kernel, x, y, reference=reference)
    except hb.Error as error:
        sys.exit(f"cuda_source_with_torch.py: {type(error).__name__}: {error}")
    moved_bytes = 2 * x.numel() * x.element_size()
    for cache, result in results.items():
        print(f"{cache:10} {moved_bytes / result.median_us / 1e3:7.1f} GB/s  {result.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
