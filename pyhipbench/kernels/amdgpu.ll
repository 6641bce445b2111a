; The demo's kernels for AMD GPUs, hand-written LLVM IR with no processor
; named: `pyhipbench demo` compiles it for the device present (with the
; instruction-cache flush) through pyhipbench.codegen.
target triple = "amdgcn-amd-amdhsa"

declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workitem.id.x()

; copy(src, dst, n): dst[i] = src[i] for i < n, float32, grid-stride loop.
; Block and grid sizes come from the dispatch packet (workgroup_size_x at
; byte 4, grid_size_x, in work-items, at byte 12).
define amdgpu_kernel void @copy(ptr addrspace(1) noalias readonly %src, ptr addrspace(1) noalias %dst, i64 %n) {
entry:
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %block.ptr = getelementptr i8, ptr addrspace(4) %packet, i64 4
  %block16 = load i16, ptr addrspace(4) %block.ptr, align 4
  %block = zext i16 %block16 to i64
  %grid.ptr = getelementptr i8, ptr addrspace(4) %packet, i64 12
  %grid32 = load i32, ptr addrspace(4) %grid.ptr, align 4
  %stride = zext i32 %grid32 to i64
  %group32 = call i32 @llvm.amdgcn.workgroup.id.x()
  %group = zext i32 %group32 to i64
  %lane32 = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = zext i32 %lane32 to i64
  %base = mul i64 %group, %block
  %first = add i64 %base, %lane
  br label %loop

loop:
  %i = phi i64 [ %first, %entry ], [ %next, %body ]
  %done = icmp sge i64 %i, %n
  br i1 %done, label %exit, label %body

body:
  %from = getelementptr float, ptr addrspace(1) %src, i64 %i
  %value = load float, ptr addrspace(1) %from, align 4
  %to = getelementptr float, ptr addrspace(1) %dst, i64 %i
  store float %value, ptr addrspace(1) %to, align 4
  %next = add i64 %i, %stride
  br label %loop

exit:
  ret void
}

; empty(): its time is the launch and event overhead.
define amdgpu_kernel void @empty() {
  ret void
}

; spin(flag, target, timeout_ns, timed_out): the batched timer's spin kernel
; (csrc/timers/batched_timer.hpp), launched as one work-item. Waits until the
; word *flag (pinned host memory mapped to the device, written by the host
; after it has queued a batch) reaches `target`, re-reading it with
; system-scope atomic loads; if `timeout_ns` pass first, writes `target` to
; *timed_out and returns, so a host that cannot finish queuing is an error,
; not a hang. Time is the constant 100 MHz real-time counter
; (llvm.readsteadycounter: s_memrealtime, or s_sendmsg_rtn_b64 on gfx11+).
declare i64 @llvm.readsteadycounter()

define amdgpu_kernel void @spin(ptr addrspace(1) %flag, i32 %target, i64 %timeout_ns, ptr addrspace(1) %timed_out) {
entry:
  %start = call i64 @llvm.readsteadycounter()
  br label %wait

wait:
  %value = load atomic volatile i32, ptr addrspace(1) %flag monotonic, align 4
  %released = icmp uge i32 %value, %target
  br i1 %released, label %exit, label %check

check:
  %now = call i64 @llvm.readsteadycounter()
  %ticks = sub i64 %now, %start
  %elapsed_ns = mul i64 %ticks, 10
  %waiting = icmp ult i64 %elapsed_ns, %timeout_ns
  br i1 %waiting, label %wait, label %give_up

give_up:
  store atomic volatile i32 %target, ptr addrspace(1) %timed_out monotonic, align 4
  br label %exit

exit:
  ret void
}

; clean(buffer, n, sink): the clean-cold cache state's clean step. Reads n
; float32 of `buffer` (n a multiple of 4), 16 bytes per load, grid-stride like
; copy, and writes their sum to *sink only if it is NaN, which the zero-filled
; buffer never gives: run over more than the last-level cache before a timed
; launch, it leaves the caches holding only clean lines of `buffer`.
define amdgpu_kernel void @clean(ptr addrspace(1) noalias readonly %buffer, i64 %n, ptr addrspace(1) noalias %sink) {
entry:
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %block.ptr = getelementptr i8, ptr addrspace(4) %packet, i64 4
  %block16 = load i16, ptr addrspace(4) %block.ptr, align 4
  %block = zext i16 %block16 to i64
  %grid.ptr = getelementptr i8, ptr addrspace(4) %packet, i64 12
  %grid32 = load i32, ptr addrspace(4) %grid.ptr, align 4
  %stride = zext i32 %grid32 to i64
  %group32 = call i32 @llvm.amdgcn.workgroup.id.x()
  %group = zext i32 %group32 to i64
  %lane32 = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = zext i32 %lane32 to i64
  %base = mul i64 %group, %block
  %first = add i64 %base, %lane
  %vectors = lshr i64 %n, 2
  br label %loop

loop:
  %i = phi i64 [ %first, %entry ], [ %next, %body ]
  %sum = phi float [ 0.0, %entry ], [ %added, %body ]
  %done = icmp sge i64 %i, %vectors
  br i1 %done, label %exit, label %body

body:
  %from = getelementptr <4 x float>, ptr addrspace(1) %buffer, i64 %i
  %value = load <4 x float>, ptr addrspace(1) %from, align 16
  %v0 = extractelement <4 x float> %value, i64 0
  %v1 = extractelement <4 x float> %value, i64 1
  %v2 = extractelement <4 x float> %value, i64 2
  %v3 = extractelement <4 x float> %value, i64 3
  %s0 = fadd float %sum, %v0
  %s1 = fadd float %s0, %v1
  %s2 = fadd float %s1, %v2
  %added = fadd float %s2, %v3
  %next = add i64 %i, %stride
  br label %loop

exit:
  %nan = fcmp uno float %sum, %sum
  br i1 %nan, label %write, label %end

write:
  store float %sum, ptr addrspace(1) %sink, align 4
  br label %end

end:
  ret void
}
