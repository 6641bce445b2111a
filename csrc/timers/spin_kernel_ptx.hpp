// The batched timer's spin kernel for NVIDIA GPUs, as PTX the CUDA driver
// JIT-compiles for the device at hand (cuModuleLoadData), so an embedder needs
// no file and no toolkit.
//
// pyhipbench_spin(flag, target, timeout_ns, timed_out), one thread: waits
// until the host-mapped word *flag reaches `target` (the host writes it after
// queuing a batch), re-reading it with volatile loads; if `timeout_ns` of
// %globaltimer pass first, writes `target` to *timed_out and returns, so a
// host that cannot finish queuing (a full launch queue) makes an error, not a
// hang. PTX ISA 7.0 / sm_52: loads on every GPU and driver CUDA 13 supports.
#pragma once

namespace pyhipbench {

inline constexpr const char* kSpinKernelName = "pyhipbench_spin";

inline constexpr const char* kSpinKernelPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .entry pyhipbench_spin(
    .param .u64 pyhipbench_spin_param_flag,
    .param .u32 pyhipbench_spin_param_target,
    .param .u64 pyhipbench_spin_param_timeout_ns,
    .param .u64 pyhipbench_spin_param_timed_out
)
{
    .reg .pred  %p<3>;
    .reg .b32   %r<3>;
    .reg .b64   %rd<7>;

    ld.param.u64    %rd1, [pyhipbench_spin_param_flag];
    ld.param.u32    %r1, [pyhipbench_spin_param_target];
    ld.param.u64    %rd2, [pyhipbench_spin_param_timeout_ns];
    ld.param.u64    %rd3, [pyhipbench_spin_param_timed_out];
    mov.u64         %rd4, %globaltimer;
WAIT:
    ld.volatile.global.u32  %r2, [%rd1];
    setp.ge.u32     %p1, %r2, %r1;
    @%p1 bra        DONE;
    mov.u64         %rd5, %globaltimer;
    sub.u64         %rd6, %rd5, %rd4;
    setp.lt.u64     %p2, %rd6, %rd2;
    @%p2 bra        WAIT;
    st.volatile.global.u32  [%rd3], %r1;
DONE:
    ret;
}
)PTX";

}  // namespace pyhipbench
