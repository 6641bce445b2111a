; What Triton's Hopper matmul IR holds: wgmma, which only sm_90a can select;
; LLVM aborts on sm_90 (issue 6, class 1).
target triple = "nvptx64-nvidia-cuda"

declare void @llvm.nvvm.wgmma.fence.sync.aligned()
declare void @llvm.nvvm.wgmma.commit_group.sync.aligned()

define ptx_kernel void @matmul_kernel(ptr addrspace(1) %out) {
  call void @llvm.nvvm.wgmma.fence.sync.aligned()
  call void @llvm.nvvm.wgmma.commit_group.sync.aligned()
  store i32 0, ptr addrspace(1) %out
  ret void
}
