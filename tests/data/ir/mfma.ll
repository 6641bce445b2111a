; Verifies everywhere; selects only on processors with MFMA (gfx90a, gfx942, gfx950):
; LLVM aborts on gfx1100 (issue 6, class 1).
target triple = "amdgcn-amd-amdhsa"

declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half>, <4 x half>, <16 x float>, i32, i32, i32)

define amdgpu_kernel void @mfma_tile(ptr addrspace(1) %out, <4 x half> %a, <4 x half> %b) {
  %r = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half> %a, <4 x half> %b, <16 x float> zeroinitializer, i32 0, i32 0, i32 0)
  store <16 x float> %r, ptr addrspace(1) %out
  ret void
}
