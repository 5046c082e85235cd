// A small CUDA program run on the stand-in: saxpy, then a two-layer MLP
// trained with SGD (MSE loss), every kernel with a host twin so the numbers
// are real. Modes (argv[1]):
//   numbers   results equal a CPU reference; loss falls
//   fit       everything fits: the first step faults, later steps do not
//   prefetch  everything prefetched before the first step: no faults at all
//   small     GPU memory (DEEPUM_STANDIN_GPU_MEMORY) below the working set:
//             every step faults and evicts; prefetching each kernel's
//             operands on its stream just before it cuts the demand faults
//   marked    three steps, each between cudaProfilerStart/Stop (iteration marks)
//   train STEPS PARAMS
//             the end-to-end run (deepum-profile, deepum-plan, libdeepum): STEPS
//             steps from the fixed seed, each between cudaProfilerStart/Stop; the
//             tensors come from libdeepum's deepum_malloc when DEEPUM_TRAIN_LIBDEEPUM
//             names the library (dlopen; deepum_step marks each step), else from
//             cudaMallocManaged. Prints the model's faults and time per step and
//             libdeepum's stats; writes w1 then w2 (raw floats) to PARAMS.
//             DEEPUM_TRAIN_GRADS_IN_FIRST_STEP=1: the gradients are allocated
//             in the first step, each just after a scratch buffer of its size
//             that the step frees (as PyTorch allocates gradients and
//             optimizer state amid activations); the numbers do not change.
// Prints one line per measure; exits 1 on a failed check.
#include "deepum/deepum.h"
#include "deepum/standin/Twin.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <sys/types.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace su = deepum::standin;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t E_ = (call);                                                                       \
    if (E_ != cudaSuccess) {                                                                       \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorName(E_));                                   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

static int Failures = 0;
static void expect(bool Ok, const char *What) {
  std::printf("%s %s\n", Ok ? "ok" : "FAIL", What);
  Failures += !Ok;
}

// --- Kernels and their twins ------------------------------------------------

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}
static void saxpyTwin(su::Launch &L, int n, float a, const float *x, float *y) {
  if (!L.access(x, n * sizeof(float), su::Access::Read) ||
      !L.access(y, n * sizeof(float), su::Access::ReadWrite))
    return;
  for (int i = 0; i < n; ++i)
    y[i] = a * x[i] + y[i];
  L.flops(2.0 * n);
}

// C[m x n] = op(A) op(B), op(A) is m x k; ta/tb: the operand is stored transposed.
__global__ void matmul(const float *A, const float *B, float *C, int m, int k, int n, int ta,
                       int tb) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m || c >= n)
    return;
  float s = 0;
  for (int i = 0; i < k; ++i)
    s += (ta ? A[i * m + r] : A[r * k + i]) * (tb ? B[c * k + i] : B[i * n + c]);
  C[r * n + c] = s;
}
static void matmulRef(const float *A, const float *B, float *C, int m, int k, int n, int ta,
                      int tb) {
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      float s = 0;
      for (int i = 0; i < k; ++i)
        s += (ta ? A[i * m + r] : A[r * k + i]) * (tb ? B[c * k + i] : B[i * n + c]);
      C[r * n + c] = s;
    }
}
static void matmulTwin(su::Launch &L, const float *A, const float *B, float *C, int m, int k,
                       int n, int ta, int tb) {
  if (!L.access(A, size_t(m) * k * 4, su::Access::Read) ||
      !L.access(B, size_t(k) * n * 4, su::Access::Read) ||
      !L.access(C, size_t(m) * n * 4, su::Access::Write))
    return;
  matmulRef(A, B, C, m, k, n, ta, tb);
  L.flops(2.0 * m * k * n);
}

__global__ void reluForward(float *h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && h[i] < 0)
    h[i] = 0;
}
static void reluRef(float *h, int n) {
  for (int i = 0; i < n; ++i)
    if (h[i] < 0)
      h[i] = 0;
}
static void reluTwin(su::Launch &L, float *h, int n) {
  if (L.access(h, n * 4, su::Access::ReadWrite))
    reluRef(h, n);
}

// dh *= (h > 0)
__global__ void reluBackward(float *dh, const float *h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && h[i] <= 0)
    dh[i] = 0;
}
static void reluBackRef(float *dh, const float *h, int n) {
  for (int i = 0; i < n; ++i)
    if (h[i] <= 0)
      dh[i] = 0;
}
static void reluBackTwin(su::Launch &L, float *dh, const float *h, int n) {
  if (L.access(dh, n * 4, su::Access::ReadWrite) && L.access(h, n * 4, su::Access::Read))
    reluBackRef(dh, h, n);
}

// dy = 2 (y - t) / n; loss[0] = mean (y - t)^2 (one thread: small n)
__global__ void mseGrad(const float *y, const float *t, float *dy, float *loss, int n) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  float s = 0;
  for (int i = 0; i < n; ++i) {
    float d = y[i] - t[i];
    s += d * d;
    dy[i] = 2 * d / n;
  }
  loss[0] = s / n;
}
static void mseRef(const float *y, const float *t, float *dy, float *loss, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) {
    float d = y[i] - t[i];
    s += d * d;
    dy[i] = 2 * d / n;
  }
  loss[0] = s / n;
}
static void mseTwin(su::Launch &L, const float *y, const float *t, float *dy, float *loss, int n) {
  if (L.access(y, n * 4, su::Access::Read) && L.access(t, n * 4, su::Access::Read) &&
      L.access(dy, n * 4, su::Access::Write) && L.access(loss, 4, su::Access::Write))
    mseRef(y, t, dy, loss, n);
}

__global__ void sgd(float *w, const float *g, float lr, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    w[i] -= lr * g[i];
}
static void sgdRef(float *w, const float *g, float lr, int n) {
  for (int i = 0; i < n; ++i)
    w[i] -= lr * g[i];
}
static void sgdTwin(su::Launch &L, float *w, const float *g, float lr, int n) {
  if (L.access(w, n * 4, su::Access::ReadWrite) && L.access(g, n * 4, su::Access::Read))
    sgdRef(w, g, lr, n);
}

// No twin: the stand-in finds its parameters in the fat binary and touches
// the managed allocation its pointer argument points into.
__global__ void untwinned(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] += 1;
}

static const bool Twins = su::registerTwin(saxpy, saxpyTwin) &&
                          su::registerTwin(matmul, matmulTwin) &&
                          su::registerTwin(reluForward, reluTwin) &&
                          su::registerTwin(reluBackward, reluBackTwin) &&
                          su::registerTwin(mseGrad, mseTwin) && su::registerTwin(sgd, sgdTwin);

// --- The MLP ----------------------------------------------------------------

constexpr int B = 128, D = 512, H = 1024, C = 64; // ~7 MiB of tensors
constexpr float Lr = 0.05f;

struct Net {
  float *x, *t, *w1, *w2, *h, *y, *dy, *dw2, *dh, *dw1, *loss;
};

static dim3 grid2(int m, int n) { return dim3((n + 15) / 16, (m + 15) / 16); }
static dim3 grid1(int n) { return dim3((n + 255) / 256); }

struct Range {
  const void *p;
  size_t bytes;
};

/// One training step on `s`; with `prefetch`, each kernel's operands are
/// prefetched to the GPU on the same stream just before it.
static void step(Net &N, cudaStream_t s, bool prefetch) {
  auto pre = [&](std::initializer_list<Range> rs) {
    if (!prefetch)
      return;
    cudaMemLocation dev{};
    dev.type = cudaMemLocationTypeDevice;
    dev.id = 0;
    for (const Range &r : rs)
      CHECK(cudaMemPrefetchAsync(r.p, r.bytes, dev, 0, s));
  };
  const size_t F = sizeof(float);
  pre({{N.x, B * D * F}, {N.w1, D * H * F}, {N.h, B * H * F}});
  matmul<<<grid2(B, H), dim3(16, 16), 0, s>>>(N.x, N.w1, N.h, B, D, H, 0, 0);
  pre({{N.h, B * H * F}});
  reluForward<<<grid1(B * H), 256, 0, s>>>(N.h, B * H);
  pre({{N.h, B * H * F}, {N.w2, H * C * F}, {N.y, B * C * F}});
  matmul<<<grid2(B, C), dim3(16, 16), 0, s>>>(N.h, N.w2, N.y, B, H, C, 0, 0);
  pre({{N.y, B * C * F}, {N.t, B * C * F}, {N.dy, B * C * F}, {N.loss, F}});
  mseGrad<<<1, 1, 0, s>>>(N.y, N.t, N.dy, N.loss, B * C);
  pre({{N.h, B * H * F}, {N.dy, B * C * F}, {N.dw2, H * C * F}});
  matmul<<<grid2(H, C), dim3(16, 16), 0, s>>>(N.h, N.dy, N.dw2, H, B, C, 1, 0);
  pre({{N.dy, B * C * F}, {N.w2, H * C * F}, {N.dh, B * H * F}});
  matmul<<<grid2(B, H), dim3(16, 16), 0, s>>>(N.dy, N.w2, N.dh, B, C, H, 0, 1);
  pre({{N.dh, B * H * F}, {N.h, B * H * F}});
  reluBackward<<<grid1(B * H), 256, 0, s>>>(N.dh, N.h, B * H);
  pre({{N.x, B * D * F}, {N.dh, B * H * F}, {N.dw1, D * H * F}});
  matmul<<<grid2(D, H), dim3(16, 16), 0, s>>>(N.x, N.dh, N.dw1, D, B, H, 1, 0);
  pre({{N.w1, D * H * F}, {N.dw1, D * H * F}});
  sgd<<<grid1(D * H), 256, 0, s>>>(N.w1, N.dw1, Lr, D * H);
  pre({{N.w2, H * C * F}, {N.dw2, H * C * F}});
  sgd<<<grid1(H * C), 256, 0, s>>>(N.w2, N.dw2, Lr, H * C);
  CHECK(cudaGetLastError());
}

/// The same step on the CPU.
static void stepRef(std::vector<float> *V) {
  float *x = V[0].data(), *t = V[1].data(), *w1 = V[2].data(), *w2 = V[3].data(),
        *h = V[4].data(), *y = V[5].data(), *dy = V[6].data(), *dw2 = V[7].data(),
        *dh = V[8].data(), *dw1 = V[9].data(), *loss = V[10].data();
  matmulRef(x, w1, h, B, D, H, 0, 0);
  reluRef(h, B * H);
  matmulRef(h, w2, y, B, H, C, 0, 0);
  mseRef(y, t, dy, loss, B * C);
  matmulRef(h, dy, dw2, H, B, C, 1, 0);
  matmulRef(dy, w2, dh, B, C, H, 0, 1);
  reluBackRef(dh, h, B * H);
  matmulRef(x, dh, dw1, D, B, H, 1, 0);
  sgdRef(w1, dw1, Lr, D * H);
  sgdRef(w2, dw2, Lr, H * C);
}

static deepum_standin_stats stats() {
  deepum_standin_stats S{};
  if (!su::stats(S)) {
    std::printf("not on the stand-in: no model counters\n");
    std::exit(Failures ? 1 : 0);
  }
  return S;
}

// libdeepum's C ABI (executor/capi/include/deepum/deepum.h), looked up at run
// time so that the program needs libdeepum only when asked for it.
struct DeepumAbi {
  decltype(&deepum_malloc) malloc = nullptr;
  decltype(&deepum_free) free = nullptr;
  decltype(&deepum_step) step = nullptr;
  decltype(&deepum_get_stats) stats = nullptr;
};
// The end-to-end run's network: DeepLayers hidden layers of width H
// (D -> H -> ... -> H -> C), batch DB, ReLU, MSE loss, SGD; about 29 MiB of tensors,
// so that half of it still holds every kernel's operands many times over.
constexpr int DeepLayers = 4, DB = 16; // DB: its batch
struct DeepNet {
  float **W, **dW; // W[l]: width(l) x width(l+1), l = 0..DeepLayers
  float **a, **da; // a[l]: layer l's output, DB x width(l+1); a[DeepLayers] = y
  float *x, *t, *loss;
};

static void deepStep(DeepNet &N, cudaStream_t s) {
  const int NL = DeepLayers;
  auto width = [&](int l) { return l == 0 ? D : l == NL + 1 ? C : H; };
  auto act = [&](int l) { return l == 0 ? N.x : N.a[l - 1]; };
  for (int l = 0; l <= NL; ++l) {
    const int k = width(l), n = width(l + 1);
    matmul<<<grid2(DB, n), dim3(16, 16), 0, s>>>(act(l), N.W[l], N.a[l], DB, k, n, 0, 0);
    if (l < NL)
      reluForward<<<grid1(DB * n), 256, 0, s>>>(N.a[l], DB * n);
  }
  mseGrad<<<1, 1, 0, s>>>(N.a[NL], N.t, N.da[NL], N.loss, DB * C);
  for (int l = NL; l >= 0; --l) {
    const int k = width(l), n = width(l + 1);
    // dW[l] = act(l)^T da[l]; da[l-1] = da[l] W[l]^T, masked by the ReLU.
    matmul<<<grid2(k, n), dim3(16, 16), 0, s>>>(act(l), N.da[l], N.dW[l], k, DB, n, 1, 0);
    if (l > 0) {
      matmul<<<grid2(DB, k), dim3(16, 16), 0, s>>>(N.da[l], N.W[l], N.da[l - 1], DB, n, k, 0, 1);
      reluBackward<<<grid1(DB * k), 256, 0, s>>>(N.da[l - 1], N.a[l - 1], DB * k);
    }
  }
  for (int l = 0; l <= NL; ++l)
    sgd<<<grid1(width(l) * width(l + 1)), 256, 0, s>>>(N.W[l], N.dW[l], Lr,
                                                      width(l) * width(l + 1));
  CHECK(cudaGetLastError());
}

static int train(int argc, char **argv) {
  const int Steps = argc > 2 ? std::atoi(argv[2]) : 0;
  const char *Out = argc > 3 ? argv[3] : nullptr;
  if (Steps < 1 || !Out) {
    std::printf("usage: train STEPS PARAMS\n");
    return 2;
  }
  DeepumAbi Abi;
  if (const char *Lib = std::getenv("DEEPUM_TRAIN_LIBDEEPUM"); Lib && *Lib) {
    void *H = dlopen(Lib, RTLD_NOW | RTLD_LOCAL);
    if (!H) {
      std::printf("FAIL dlopen %s: %s\n", Lib, dlerror());
      return 1;
    }
    Abi.malloc = reinterpret_cast<decltype(Abi.malloc)>(dlsym(H, "deepum_malloc"));
    Abi.free = reinterpret_cast<decltype(Abi.free)>(dlsym(H, "deepum_free"));
    Abi.step = reinterpret_cast<decltype(Abi.step)>(dlsym(H, "deepum_step"));
    Abi.stats = reinterpret_cast<decltype(Abi.stats)>(dlsym(H, "deepum_get_stats"));
    if (!Abi.malloc || !Abi.free || !Abi.step || !Abi.stats) {
      std::printf("FAIL libdeepum's C ABI not found in %s\n", Lib);
      return 1;
    }
  }
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Every tensor of the deep MLP, in allocation order; the weights first.
  std::vector<size_t> Sizes;
  const int NL = DeepLayers;
  auto width = [&](int l) { return l == 0 ? D : l == NL + 1 ? C : H; }; // width of layer l's input
  for (int l = 0; l <= NL; ++l)
    Sizes.push_back(size_t(width(l)) * width(l + 1)); // W[l]
  for (int l = 0; l <= NL; ++l)
    Sizes.push_back(size_t(width(l)) * width(l + 1)); // dW[l]
  for (int l = 1; l <= NL + 1; ++l)
    Sizes.push_back(size_t(DB) * width(l)); // a[l-1]: layer l-1's output (a[NL] = y)
  for (int l = 1; l <= NL + 1; ++l)
    Sizes.push_back(size_t(DB) * width(l)); // da[l-1]
  Sizes.push_back(size_t(DB) * D);          // x
  Sizes.push_back(size_t(DB) * C);          // t
  Sizes.push_back(1);                      // loss
  std::vector<float *> T(Sizes.size());
  auto allocate = [&](size_t Bytes) -> float * {
    void *P = nullptr;
    if (Abi.malloc) {
      P = Abi.malloc(ssize_t(Bytes), 0, s);
      if (!P) {
        std::printf("FAIL deepum_malloc(%zu) returned NULL\n", Bytes);
        std::exit(1);
      }
    } else {
      CHECK(cudaMallocManaged(&P, Bytes));
    }
    return static_cast<float *>(P);
  };
  const char *Lazy = std::getenv("DEEPUM_TRAIN_GRADS_IN_FIRST_STEP");
  const bool GradsInFirstStep = Lazy && std::strcmp(Lazy, "1") == 0;
  // One allocation call more at the first step's start than a profiled run
  // made (an autotuner's workspace, say): the replay's calls depart from the
  // profiled ones there.
  const char *Extra = std::getenv("DEEPUM_TRAIN_EXTRA_CALL");
  const bool ExtraCall = Extra && std::strcmp(Extra, "1") == 0;
  auto isGrad = [&](size_t i) { return i > size_t(NL) && i <= size_t(2 * NL + 1); };
  srand(7);
  for (size_t i = 0; i < Sizes.size(); ++i) {
    if (GradsInFirstStep && isGrad(i))
      continue; // allocated in the first step
    T[i] = allocate(Sizes[i] * sizeof(float));
    const bool Weight = i <= size_t(NL), Data = i + 3 >= Sizes.size() && i + 1 < Sizes.size();
    for (size_t j = 0; j < Sizes[i]; ++j)
      T[i][j] = Weight || Data ? (float(rand() % 2001) / 1000.0f - 1.0f) * (Weight ? 0.03f : 1.0f)
                               : 0;
  }
  DeepNet N;
  N.W = T.data();
  N.dW = T.data() + NL + 1;
  N.a = T.data() + 2 * (NL + 1);
  N.da = T.data() + 3 * (NL + 1);
  N.x = T[T.size() - 3];
  N.t = T[T.size() - 2];
  N.loss = T[T.size() - 1];
  deepum_standin_stats Prev{};
  uint64_t PrevLaunches = 0, PrevMatched = 0;
  const bool OnStandIn = su::stats(Prev);
  for (int it = 0; it < Steps; ++it) {
    CHECK(cudaProfilerStart());
    if (ExtraCall && it == 0) {
      const size_t Bytes = (size_t(3) << 20) + 4096;
      float *Workspace = allocate(Bytes);
      if (Abi.free)
        Abi.free(Workspace, ssize_t(Bytes), 0, s);
      else
        CHECK(cudaFree(Workspace));
    }
    if (GradsInFirstStep && it == 0)
      for (size_t i = 0; i < Sizes.size(); ++i)
        if (isGrad(i)) {
          const size_t Bytes = Sizes[i] * sizeof(float);
          float *Scratch = allocate(Bytes);
          T[i] = allocate(Bytes);
          std::memset(T[i], 0, Bytes);
          if (Abi.free)
            Abi.free(Scratch, ssize_t(Bytes), 0, s);
          else
            CHECK(cudaFree(Scratch));
        }
    deepStep(N, s);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaProfilerStop());
    if (Abi.step)
      Abi.step();
    // The step ends where a training loop's does: its own stream is done
    // (loss.item()); libdeepum's prefetches and evictions run on. The
    // stand-in counts them when they are issued, so the counters are whole.
    if (OnStandIn) {
      // The loss is not read here: a host touch of its page would send the
      // page back to the host, and a copy (loss.item()) would wait behind
      // libdeepum's evictions on the device-to-host engine; neither is in the
      // profile deepum-sim replays. It is read once, at the end.
      deepum_standin_stats S{};
      su::stats(S);
      std::printf("step %d faults %llu evictions %llu model_time_ns %llu host_faults %llu\n", it,
                  (unsigned long long)(S.faults - Prev.faults),
                  (unsigned long long)(S.evictions - Prev.evictions),
                  (unsigned long long)(S.model_time_ns - Prev.model_time_ns),
                  (unsigned long long)(S.host_faults - Prev.host_faults));
      Prev = S;
    }
    if (Abi.stats) {
      deepum_stats_t St{};
      if (Abi.stats(0, &St, sizeof St) == 0) {
        std::printf("step %d deepum launches %llu matched %llu\n", it,
                    (unsigned long long)(St.launches - PrevLaunches),
                    (unsigned long long)(St.launches_matched - PrevMatched));
        PrevLaunches = St.launches;
        PrevMatched = St.launches_matched;
      }
    }
  }
  // Everything issued, libdeepum's transfers included, is done before the
  // host reads the parameters.
  CHECK(cudaDeviceSynchronize());
  std::printf("loss %.6f after %d steps\n", N.loss[0], Steps);
  if (Abi.stats) {
    deepum_stats_t St{};
    if (Abi.stats(0, &St, sizeof St) != 0) {
      std::printf("FAIL deepum_get_stats\n");
      return 1;
    }
    std::printf("deepum launches %llu matched %llu inserted %llu missing %llu resyncs %llu "
                "iterations %llu placements %llu misses %llu prefetch_bytes %llu evict_bytes "
                "%llu discard_bytes %llu budget_evictions %llu backend_errors %llu plan_active "
                "%u launch_tracking %u\n",
                (unsigned long long)St.launches, (unsigned long long)St.launches_matched,
                (unsigned long long)St.launches_inserted, (unsigned long long)St.positions_missing,
                (unsigned long long)St.resyncs, (unsigned long long)St.iterations,
                (unsigned long long)St.arena_placements, (unsigned long long)St.placement_misses,
                (unsigned long long)St.prefetch_bytes, (unsigned long long)St.evict_bytes,
                (unsigned long long)St.discard_bytes, (unsigned long long)St.budget_evictions,
                (unsigned long long)St.backend_errors, St.plan_active, St.launch_tracking);
  }
  std::FILE *F = std::fopen(Out, "wb");
  bool Written = F != nullptr;
  // The host reads the parameters, as a training loop's checkpoint does
  // (pages still on the GPU come back as host faults), and hands write(2) its
  // own copy: on the stand-in a system call given a GPU-resident managed
  // page fails (EFAULT) where the driver would bring the page back.
  std::vector<float> Host;
  for (int l = 0; Written && l <= NL; ++l) {
    Host.assign(N.W[l], N.W[l] + Sizes[l]);
    Written = std::fwrite(Host.data(), sizeof(float), Sizes[l], F) == Sizes[l];
  }
  if (!F || std::fclose(F) != 0 || !Written) {
    std::printf("FAIL writing %s\n", Out);
    return 1;
  }
  for (size_t i = 0; i < T.size(); ++i) {
    if (Abi.free)
      Abi.free(T[i], ssize_t(Sizes[i] * sizeof(float)), 0, s);
    else
      CHECK(cudaFree(T[i]));
  }
  CHECK(cudaStreamDestroy(s));
  return 0;
}

// Built as a library (tests/standin/CMakeLists.txt), the program's entry is
// named DEEPUM_TRAIN_STEP_MAIN so that a test can run it in its own process.
#ifndef DEEPUM_TRAIN_STEP_MAIN
#define DEEPUM_TRAIN_STEP_MAIN main
#endif
int DEEPUM_TRAIN_STEP_MAIN(int argc, char **argv) {
  const char *Mode = argc > 1 ? argv[1] : "numbers";
  if (!Twins) {
    std::printf("no host twins: not running on the stand-in\n");
    return 0;
  }
  if (!std::strcmp(Mode, "train"))
    return train(argc, argv);
  // saxpy
  {
    const int n = 1 << 20;
    float *x, *y;
    CHECK(cudaMallocManaged(&x, n * sizeof(float)));
    CHECK(cudaMallocManaged(&y, n * sizeof(float)));
    for (int i = 0; i < n; ++i) {
      x[i] = float(i % 1000);
      y[i] = 1.0f;
    }
    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    CHECK(cudaDeviceSynchronize());
    bool Ok = true;
    for (int i = 0; i < n; ++i)
      Ok &= y[i] == 2.0f * float(i % 1000) + 1.0f;
    expect(Ok, "saxpy y = 2x + y");
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
  }

  const int Sizes[] = {B * D, B * C, D * H, H * C, B * H, B * C, B * C, H * C, B * H, D * H, 1};
  Net N;
  float **Ptrs[] = {&N.x, &N.t, &N.w1, &N.w2, &N.h, &N.y, &N.dy, &N.dw2, &N.dh, &N.dw1, &N.loss};
  std::vector<float> Ref[11];
  uint64_t Footprint = 0;
  srand(7);
  for (int i = 0; i < 11; ++i) {
    CHECK(cudaMallocManaged(reinterpret_cast<void **>(Ptrs[i]), Sizes[i] * sizeof(float)));
    Ref[i].resize(Sizes[i]);
    for (int j = 0; j < Sizes[i]; ++j)
      Ref[i][j] = i < 4 ? (float(rand() % 2001) / 1000.0f - 1.0f) * (i >= 2 ? 0.05f : 1.0f) : 0;
    std::memcpy(*Ptrs[i], Ref[i].data(), Sizes[i] * sizeof(float));
    Footprint += (Sizes[i] * sizeof(float) + (64 << 10) - 1) / (64 << 10) * (64 << 10);
  }
  std::printf("footprint %llu bytes\n", (unsigned long long)Footprint);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  if (!std::strcmp(Mode, "marked")) {
    // Three steps, each between cudaProfilerStart and cudaProfilerStop: the
    // iteration marks a profiler records by.
    for (int it = 0; it < 3; ++it) {
      CHECK(cudaProfilerStart());
      step(N, s, false);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaProfilerStop());
    }
    return Failures ? 1 : 0;
  }
  if (!std::strcmp(Mode, "numbers")) {
    float First = 0, Last = 0;
    bool Same = true;
    for (int it = 0; it < 3; ++it) {
      step(N, s, false);
      CHECK(cudaStreamSynchronize(s));
      stepRef(Ref);
      Same &= std::fabs(N.loss[0] - Ref[10][0]) <= 1e-6f * std::fabs(Ref[10][0]);
      for (int j = 0; j < D * H; j += 997)
        Same &= N.w1[j] == Ref[2][j];
      (it == 0 ? First : Last) = N.loss[0];
      std::printf("step %d loss %.6f (cpu %.6f)\n", it, N.loss[0], Ref[10][0]);
    }
    expect(Same, "losses and weights equal the CPU reference");
    expect(Last < First, "loss falls");
    return Failures ? 1 : 0;
  }

  if (!std::strcmp(Mode, "fit") || !std::strcmp(Mode, "prefetch")) {
    const bool Pre = !std::strcmp(Mode, "prefetch");
    if (Pre) {
      cudaMemLocation dev{};
      dev.type = cudaMemLocationTypeDevice;
      for (int i = 0; i < 11; ++i)
        CHECK(cudaMemPrefetchAsync(*Ptrs[i], Sizes[i] * sizeof(float), dev, 0, s));
    }
    deepum_standin_stats S0 = stats();
    step(N, s, false);
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S1 = stats();
    step(N, s, false);
    step(N, s, false);
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S2 = stats();
    std::printf("first step faults %llu, next two steps faults %llu, evictions %llu\n",
                (unsigned long long)(S1.faults - S0.faults),
                (unsigned long long)(S2.faults - S1.faults),
                (unsigned long long)(S2.evictions - S0.evictions));
    if (Pre)
      expect(S2.faults == S0.faults, "no faults after prefetching everything");
    else
      expect(S1.faults > S0.faults, "the first step faults (cold)");
    expect(S2.faults == S1.faults, "steps with everything resident do not fault");
    expect(S2.evictions == S0.evictions, "nothing is evicted when everything fits");
    // A kernel without a twin faults on what its pointer argument points into.
    float *u;
    const int un = 1 << 18; // 1 MiB: 16 pages of 64 KiB
    CHECK(cudaMallocManaged(&u, un * sizeof(float)));
    untwinned<<<grid1(un), 256, 0, s>>>(u, un);
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S3 = stats();
    std::printf("kernel without a twin: %llu faults\n", (unsigned long long)(S3.faults - S2.faults));
    expect(S3.faults - S2.faults == 16, "a kernel without a twin faults on its pointer argument's allocation");
    size_t Free = 0, Total = 0;
    CHECK(cudaMemGetInfo(&Free, &Total));
    expect(Total - Free == S3.resident_bytes, "cudaMemGetInfo: used = resident bytes");
    return Failures ? 1 : 0;
  }

  if (!std::strcmp(Mode, "small")) {
    deepum_standin_stats S0 = stats();
    expect(S0.capacity_bytes < Footprint, "capacity below the working set");
    step(N, s, false); // cold
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S1 = stats();
    for (int it = 0; it < 2; ++it)
      step(N, s, false);
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S2 = stats();
    for (int it = 0; it < 2; ++it)
      step(N, s, true);
    CHECK(cudaStreamSynchronize(s));
    deepum_standin_stats S3 = stats();
    const double Plain = double(S2.faults - S1.faults) / 2, Pre = double(S3.faults - S2.faults) / 2;
    std::printf("capacity %llu of %llu bytes: faults per step %.1f demand-paged, %.1f with "
                "prefetch; evictions per step %.1f, %.1f; model time per step %.1f us, %.1f us\n",
                (unsigned long long)S0.capacity_bytes, (unsigned long long)Footprint, Plain, Pre,
                double(S2.evictions - S1.evictions) / 2, double(S3.evictions - S2.evictions) / 2,
                double(S2.model_time_ns - S1.model_time_ns) / 2e3,
                double(S3.model_time_ns - S2.model_time_ns) / 2e3);
    expect(Plain > 0, "steady steps demand-fault when the working set does not fit");
    expect(S2.evictions > S1.evictions, "and evict");
    expect(Pre < Plain, "prefetching each kernel's operands cuts the demand faults");
    expect(S3.resident_bytes <= S3.capacity_bytes, "residency stays within capacity");
    // The numbers are still right.
    for (int it = 0; it < 5; ++it)
      stepRef(Ref);
    bool Same = std::fabs(N.loss[0] - Ref[10][0]) <= 1e-6f * std::fabs(Ref[10][0]);
    expect(Same, "the loss equals the CPU reference after 5 steps");
    return Failures ? 1 : 0;
  }
  std::printf("unknown mode %s\n", Mode);
  return 2;
}
