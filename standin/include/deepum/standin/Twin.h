//===- deepum/standin/Twin.h - Host twins of CUDA kernels ------------------===//
//
// Included by a CUDA program (host code) to give a kernel a host twin: on the
// stand-in runtime the twin runs on the CPU in the kernel's place, so the
// program computes real numbers; on NVIDIA's runtime registration is a no-op
// and the real kernel runs. Nothing is linked: the stand-in's entry points are
// looked up at run time.
//
//   __global__ void saxpy(int n, float a, const float *x, float *y);
//   void saxpyTwin(deepum::standin::Launch &L, int n, float a, const float *x, float *y) {
//     if (!L.access(x, n * sizeof(float), deepum::standin::Access::Read) ||
//         !L.access(y, n * sizeof(float), deepum::standin::Access::ReadWrite))
//       return;
//     for (int i = 0; i < n; ++i) y[i] += a * x[i];
//   }
//   static const bool SaxpyTwin = deepum::standin::registerTwin(saxpy, saxpyTwin);
//
// A twin computes the whole grid at once (grid() and block() say its shape).
// access() declares what the kernel touches: the model faults exactly those
// pages, and a range outside live CUDA memory fails the launch as the device
// would (cudaErrorIllegalAddress, sticky).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_TWIN_H
#define DEEPUM_STANDIN_TWIN_H

#include "deepum/standin/StandIn.h"

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace deepum::standin {

enum class Access { Read = DEEPUM_STANDIN_READ, Write = DEEPUM_STANDIN_WRITE,
                    ReadWrite = DEEPUM_STANDIN_READ_WRITE };

struct Dim3 {
  uint32_t x, y, z;
};

namespace detail {
template <typename F> F lookup(const char *Name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, Name));
}
} // namespace detail

/// One launch, as its twin sees it.
class Launch {
public:
  explicit Launch(deepum_standin_launch *L) : L(L) {}
  const char *name() const { return L->name; }
  Dim3 grid() const { return {L->grid[0], L->grid[1], L->grid[2]}; }
  Dim3 block() const { return {L->block[0], L->block[1], L->block[2]}; }
  /// Threads in the whole launch.
  uint64_t threads() const {
    return uint64_t{L->grid[0]} * L->grid[1] * L->grid[2] * L->block[0] * L->block[1] * L->block[2];
  }
  /// Declares that the kernel touches [P, P+Bytes); false: not live CUDA
  /// memory, the launch has failed and the range must not be touched.
  bool access(const void *P, size_t Bytes, Access A) {
    static const auto Fn = detail::lookup<deepum_standin_access_fn>("deepum_standin_access");
    return Fn && Fn(L, P, Bytes, static_cast<int>(A)) != 0;
  }
  /// Floating-point work the kernel does (its cost in the model).
  void flops(double N) {
    using F = void (*)(deepum_standin_launch *, double);
    static const auto Fn = detail::lookup<F>("deepum_standin_add_flops");
    if (Fn)
      Fn(L, N);
  }

private:
  deepum_standin_launch *L;
};

namespace detail {
template <typename... Args> struct Thunk {
  using Host = void (*)(Launch &, Args...);
  struct Holder {
    Host H;
  };
  static void run(deepum_standin_launch *L, void **ArgPtrs, void *User) {
    Launch Ln(L);
    call(static_cast<Holder *>(User)->H, Ln, ArgPtrs, std::index_sequence_for<Args...>{});
  }
  template <size_t... I>
  static void call(Host H, Launch &Ln, void **ArgPtrs, std::index_sequence<I...>) {
    (void)ArgPtrs;
    H(Ln, *static_cast<std::remove_cv_t<Args> *>(ArgPtrs[I])...);
  }
};
} // namespace detail

/// Registers `Host` as the twin of `Kernel` (the __global__ function). Returns
/// true on the stand-in, false on any other CUDA runtime.
template <typename... Args>
bool registerTwin(void (*Kernel)(Args...), void (*Host)(Launch &, Args...)) {
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "kernel parameters are copied byte-wise");
  const auto Register =
      detail::lookup<deepum_standin_register_twin_fn>("deepum_standin_register_twin");
  if (!Register)
    return false;
  using T = detail::Thunk<Args...>;
  auto *Holder = new typename T::Holder{Host}; // lives as long as the program
  const std::array<uint32_t, sizeof...(Args)> Sizes{static_cast<uint32_t>(sizeof(Args))...};
  return Register(reinterpret_cast<const void *>(Kernel), nullptr, &T::run, Holder,
                  Sizes.data(), static_cast<uint32_t>(Sizes.size())) == 0;
}

/// The model's counters; false on any other CUDA runtime.
inline bool stats(deepum_standin_stats &Out) {
  static const auto Fn = detail::lookup<deepum_standin_stats_fn>("deepum_standin_get_stats");
  return Fn && Fn(&Out, sizeof(Out)) == 0;
}

} // namespace deepum::standin

#endif // DEEPUM_STANDIN_TWIN_H
