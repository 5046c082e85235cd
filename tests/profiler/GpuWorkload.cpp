//===- GpuWorkload.cpp - A small managed-memory "training loop" -------------===//
//
// The program the gpu-labelled profiler test runs under deepum-profile. Driver
// API and a PTX kernel (no nvcc in the build): each iteration, a kernel
// read-modify-writes one word in every 64 KiB page of a managed buffer, then
// deepum_step() is called through the profiler's hooks. Linked against
// libcuda, so it starts only where a driver is installed.
//
//   profiler_gpu_workload ITERATIONS MIB [resident|profiler-api|nvtx]
//
// Iterations are marked with deepum_step() (through the profiler's hooks), or
// with cuProfilerStart/Stop around each one (profiler-api), or as NVTX ranges
// named "train_step" (nvtx).
//
// With "resident", the host leaves the buffer alone and each iteration runs
// the kernel twice: naturally only the very first launch faults; under
// --mode access-set every launch faults on every page.
//
//===----------------------------------------------------------------------===//
#include "deepum/profiler/Hooks.h"

#include <cuda.h>
#include <cudaProfiler.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <string>

// Thread i touches byte offset i * 64 KiB: one fault per 64 KiB page.
static const char *kPtx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry touch(.param .u64 buf, .param .u64 pages)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [buf];
  ld.param.u64 %rd2, [pages];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  cvt.u64.u32 %rd3, %r4;
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd4, %rd3, 16;
  add.s64 %rd5, %rd1, %rd4;
  cvta.to.global.u64 %rd6, %rd5;
  ld.global.u32 %r5, [%rd6];
  add.s32 %r5, %r5, 1;
  st.global.u32 [%rd6], %r5;
DONE:
  ret;
}
)";

#define CHECK(X)                                                                                   \
  do {                                                                                             \
    CUresult R_ = (X);                                                                             \
    if (R_ != CUDA_SUCCESS) {                                                                      \
      std::fprintf(stderr, "gpu workload: %s failed: %d\n", #X, static_cast<int>(R_));             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  int Iterations = argc > 1 ? std::atoi(argv[1]) : 3;
  unsigned long long MiB = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  std::string Mode = argc > 3 ? argv[3] : "";
  bool Resident = Mode == "resident";
  CHECK(cuInit(0));
  CUdevice Dev;
  CHECK(cuDeviceGet(&Dev, 0));
  CUcontext Ctx;
  CHECK(cuDevicePrimaryCtxRetain(&Ctx, Dev));
  CHECK(cuCtxSetCurrent(Ctx));
  CUmodule Mod;
  CHECK(cuModuleLoadData(&Mod, kPtx));
  CUfunction Touch;
  CHECK(cuModuleGetFunction(&Touch, Mod, "touch"));
  size_t Bytes = static_cast<size_t>(MiB) << 20;
  CUdeviceptr Buf;
  CHECK(cuMemAllocManaged(&Buf, Bytes, CU_MEM_ATTACH_GLOBAL));
  unsigned long long Pages = Bytes >> 16;
  const deepum_profiler_hooks *Hooks = deepum_profiler_find_hooks(); // after cuInit: loaded
  if (!Hooks)
    std::fprintf(stderr, "gpu workload: not under deepum-profile\n");
  for (int It = 0; It < Iterations; ++It) {
    if (Mode == "profiler-api")
      CHECK(cuProfilerStart());
    if (Mode == "nvtx")
      nvtxRangePushA("train_step");
    // Between iterations the host touches the buffer, so the GPU faults again.
    auto *Host = reinterpret_cast<volatile unsigned *>(Buf);
    if (!Resident)
      for (unsigned long long P = 0; P < Pages; ++P)
        Host[P << 14] = Host[P << 14] + 1;
    void *Args[] = {&Buf, &Pages};
    unsigned Blocks = static_cast<unsigned>((Pages + 127) / 128);
    for (int L = 0; L < (Resident ? 2 : 1); ++L)
      CHECK(cuLaunchKernel(Touch, Blocks, 1, 1, 128, 1, 1, 0, nullptr, Args, nullptr));
    CHECK(cuCtxSynchronize());
    if (Mode == "profiler-api")
      CHECK(cuProfilerStop());
    else if (Mode == "nvtx")
      nvtxRangePop();
    else if (Hooks)
      Hooks->step();
  }
  CHECK(cuMemFree(Buf));
  return 0;
}
