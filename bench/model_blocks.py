"""Four Triton kernels, each in its place in a small real model and launched alone: the spaces that
bench/cache_state_study.py and bench/pick_quality.py tune and read.

  gemm       triton_matmul.py's kernel (24 configs) as an MLP block's up projection: x @ W1,
             512 x 8192 x 2048, fp16
  split-k    split_k_kernel.py's kernel (24 configs) as the same block's down projection: g @ W2,
             512 x 2048 x 8192, into an fp32 C that torch.zeros makes just before it, as real code
             allocates it (alone: autotune's reset_to_zero)
  bias-gelu  bias_gelu_kernel.py's kernel (16 configs) between the two projections: gelu(h + b1),
             512 x 8192, fp16
  attention  attention_kernel.py's forward (36 configs) between an attention block's QKV projection and
             its output projection: 4 x 32 heads x 2048 x 64, fp16 (compile_ahead.py's shapes)

The MLP block is y = x + (gelu(x @ W1 + b1) @ W2 + b2), x [512, 2048]: one of its ops is the space's
kernel, torch runs the rest. The attention block is y = x + attention(heads of x @ Wqkv) @ Wo, x
[4, 2048, 2048]. A block runs eagerly (plain torch) or compiled: torch.compile of the block, with the
kernel's call kept out of the graph by torch.compiler.disable, so Inductor compiles the ops around it
(fusing the elementwise ones, cuBLAS for its matmuls) and the kernel runs as written, between them.

Needs torch and triton 3.x.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.testing
from attention_kernel import attention_forward
from attention_kernel import configs as attention_configs
from bias_gelu_kernel import bias_gelu_kernel
from bias_gelu_kernel import configs as bias_gelu_configs
from bias_gelu_kernel import grid as bias_gelu_grid
from compile_ahead import HEAD_DIM, N_CTX, Z, attention_args, attention_grid, attention_tensors
from split_k_kernel import configs as split_k_configs
from split_k_kernel import grid as split_k_grid
from split_k_kernel import splitk_matmul_kernel
from triton_matmul import configs as gemm_configs
from triton_matmul import grid as gemm_grid
from triton_matmul import matmul_kernel

import pyhipbench as hb
import pyhipbench.triton as ht

TOKENS, MODEL_DIM, HIDDEN_DIM = 512, 2048, 8192
ATTENTION_DIM = 2048  # 32 heads x HEAD_DIM


def label(config: triton.Config) -> str:
    """A config's meta-parameters and compile options, as one string: the same in every process."""
    return " ".join(f"{k}={v}" for k, v in config.all_kwargs().items())


@dataclass
class KernelCall:
    """One launch of a space's kernel: the grid, arguments and constexprs Triton's launcher takes, and the
    tensor it writes."""
    kernel: Any
    grid: Callable[[dict], tuple]
    args: list
    constexprs: dict
    out: torch.Tensor

    def launch(self, config: triton.Config) -> torch.Tensor:
        self.kernel[self.grid](*self.args, **self.constexprs, **config.all_kwargs())
        return self.out


def gemm_call(a: torch.Tensor, b: torch.Tensor) -> KernelCall:
    """C = A @ B, fp16, C made by torch.empty."""
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float16)
    return KernelCall(matmul_kernel, gemm_grid, [a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                                 b.stride(1), c.stride(0), c.stride(1)], {}, c)


def split_k_call(a: torch.Tensor, b: torch.Tensor) -> KernelCall:
    """C = A @ B, fp32 C made by torch.zeros (the atomic adds need it zeroed)."""
    (m, k), n = a.shape, b.shape[1]
    c = torch.zeros((m, n), device=a.device, dtype=torch.float32)
    return KernelCall(splitk_matmul_kernel, split_k_grid, [a, b, c, m, n, k, a.stride(0), a.stride(1),
                                                           b.stride(0), b.stride(1), c.stride(0), c.stride(1)], {}, c)


def bias_gelu_call(x: torch.Tensor, bias: torch.Tensor) -> KernelCall:
    out = torch.empty_like(x)
    return KernelCall(bias_gelu_kernel, bias_gelu_grid, [x, bias, out, x.numel(), x.shape[1]], {}, out)


def attention_call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> KernelCall:
    out = torch.empty_like(q)
    return KernelCall(attention_forward, attention_grid, attention_args(q, k, v, out), {"HEAD_DIM": HEAD_DIM}, out)


def _random(*shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(shape, device="cuda", dtype=torch.float16) * scale


@dataclass(frozen=True)
class Space:
    """A Triton kernel's configs, the model op it stands for (`call`, on the model's tensors), inputs of the
    model's shapes for launching it alone (`inputs`), and the block it runs in (`block`)."""
    name: str
    kernel: Any
    configs: Callable[[], list]
    key: tuple[str, ...]
    reset_to_zero: tuple[str, ...]
    call: Callable[..., KernelCall]
    inputs: Callable[[], tuple]
    block: str

    @property
    def kernel_name(self) -> str:
        """The kernel's name in CUPTI's records (Triton names it after the function)."""
        return self.kernel.__name__

    def autotune(self, configs: list, device: hb.Device, **options: Any) -> ht.Tuning:
        """pyhipbench.triton.autotune over `configs`, the kernel launched alone on inputs of the model's
        shapes; `options`: autotune's (cache, race, tie_hold_s, max_time_s, ...)."""
        call = self.call(*self.inputs())
        tuned = ht.autotune(configs, key=list(self.key), reset_to_zero=list(self.reset_to_zero) or None,
                            device=device, **options)(self.kernel)
        return tuned.tune(call.grid, *call.args, **call.constexprs)

    def triton_autotune(self, configs: list) -> triton.Config:
        """Triton's own autotuner over `configs` (its do_bench, reset_to_zero inside the timing, as Triton
        times it): the config it picks."""
        call = self.call(*self.inputs())
        tuned = triton.autotune(configs, key=list(self.key), reset_to_zero=list(self.reset_to_zero) or None)(
            self.kernel)
        tuned[call.grid](*call.args, **call.constexprs)
        torch.cuda.synchronize()
        return tuned.best_config

    def do_bench(self, config: triton.Config, rep_ms: float) -> tuple[float, float]:
        """triton.testing.do_bench of the kernel alone under `config` (its output zeroed first where the
        kernel adds into it, inside the timing, as Triton's autotuner does): (median, p80) ms."""
        call = self.call(*self.inputs())

        def launch() -> None:
            if self.reset_to_zero:
                call.out.zero_()
            call.launch(config)
        median_ms, p80_ms = triton.testing.do_bench(launch, rep=rep_ms, quantiles=(0.5, 0.8))
        return median_ms, p80_ms


SPACES = {
    "gemm": Space("gemm", matmul_kernel, gemm_configs, ("M", "N", "K"), (), gemm_call,
                  lambda: (_random(TOKENS, MODEL_DIM), _random(MODEL_DIM, HIDDEN_DIM, scale=MODEL_DIM ** -0.5)),
                  "mlp"),
    "split-k": Space("split-k", splitk_matmul_kernel, split_k_configs, ("M", "N", "K"), ("c_ptr",), split_k_call,
                     lambda: (_random(TOKENS, HIDDEN_DIM), _random(HIDDEN_DIM, MODEL_DIM, scale=HIDDEN_DIM ** -0.5)),
                     "mlp"),
    "bias-gelu": Space("bias-gelu", bias_gelu_kernel, bias_gelu_configs, ("n_elements",), (), bias_gelu_call,
                       lambda: (_random(TOKENS, HIDDEN_DIM), _random(HIDDEN_DIM)), "mlp"),
    "attention": Space("attention", attention_forward, attention_configs, ("N_CTX",), (), attention_call,
                       lambda: attention_tensors()[:3], "attention"),
}


class Candidate:
    """A space's kernel in its place in a block, launched under `config` (set between readings). `run` is
    left out of torch.compile's graph: Inductor compiles the ops around it, and a new config needs no
    recompile."""

    def __init__(self, space: Space) -> None:
        self.space, self.config = space, space.configs()[0]
        self.run = torch.compiler.disable(self._launch)

    def _launch(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.space.call(*inputs).launch(self.config)


class MLPBlock(torch.nn.Module):
    """y = x + (gelu(x @ W1 + b1) @ W2 + b2), fp16; the op named by the candidate's space is its kernel."""

    def __init__(self, candidate: Candidate) -> None:
        super().__init__()
        self.candidate, self.place = candidate, candidate.space.name
        self.register_buffer("w1", _random(MODEL_DIM, HIDDEN_DIM, scale=MODEL_DIM ** -0.5))
        self.register_buffer("b1", _random(HIDDEN_DIM, scale=0.1))
        self.register_buffer("w2", _random(HIDDEN_DIM, MODEL_DIM, scale=HIDDEN_DIM ** -0.5))
        self.register_buffer("b2", _random(MODEL_DIM, scale=0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.candidate.run(x, self.w1) if self.place == "gemm" else x @ self.w1
        g = self.candidate.run(h, self.b1) if self.place == "bias-gelu" else \
            torch.nn.functional.gelu(h + self.b1)
        y = self.candidate.run(g, self.w2).to(torch.float16) + self.b2 if self.place == "split-k" else \
            torch.addmm(self.b2, g, self.w2)
        return x + y


class AttentionBlock(torch.nn.Module):
    """y = x + attention(heads of x @ Wqkv) @ Wo, fp16, the attention by the candidate's kernel."""

    def __init__(self, candidate: Candidate) -> None:
        super().__init__()
        self.candidate = candidate
        self.register_buffer("wqkv", _random(ATTENTION_DIM, 3 * ATTENTION_DIM, scale=ATTENTION_DIM ** -0.5))
        self.register_buffer("wo", _random(ATTENTION_DIM, ATTENTION_DIM, scale=ATTENTION_DIM ** -0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        heads = ATTENTION_DIM // HEAD_DIM
        qkv = (x @ self.wqkv).view(Z, N_CTX, 3, heads, HEAD_DIM).permute(2, 0, 3, 1, 4)
        out = self.candidate.run(qkv[0].contiguous(), qkv[1].contiguous(), qkv[2].contiguous())
        return x + out.transpose(1, 2).reshape(Z, N_CTX, ATTENTION_DIM) @ self.wo


def model(space: Space) -> tuple[torch.nn.Module, Candidate, torch.Tensor]:
    """The block `space`'s kernel runs in, its candidate, and an input."""
    candidate = Candidate(space)
    if space.block == "mlp":
        return MLPBlock(candidate), candidate, _random(TOKENS, MODEL_DIM)
    return AttentionBlock(candidate), candidate, _random(Z, N_CTX, ATTENTION_DIM)
