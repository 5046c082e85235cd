// What the stand-in's API-family programs (tests/standin/Api*.cu) share: checks
// that print one line per mismatch, starting FAIL, and an exit status that
// says whether any failed. Each program asserts what docs/standin.md ("What
// is modelled") says of its family.
#ifndef DEEPUM_TESTS_STANDIN_APITEST_H
#define DEEPUM_TESTS_STANDIN_APITEST_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace apitest {
inline int Failures = 0;

inline void fail(const char *File, int Line, const char *What) {
  std::printf("FAIL %s:%d: %s\n", File, Line, What);
  ++Failures;
}

/// The program's exit status: 0 when every check passed.
inline int finish(const char *Name) {
  if (Failures)
    std::printf("FAIL %s: %d check(s) failed\n", Name, Failures);
  else
    std::printf("%s: all checks passed\n", Name);
  return Failures ? 1 : 0;
}
} // namespace apitest

// A call the rest of the program depends on: stop at once when it fails.
#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t E_ = (call);                                                                       \
    if (E_ != cudaSuccess) {                                                                       \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(E_));        \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// A call that must return `want`; a failure must also be what
// cudaGetLastError returns next (once: the call after it returns success).
#define EXPECT_ERROR(call, want)                                                                   \
  do {                                                                                             \
    cudaError_t E_ = (call);                                                                       \
    if (E_ != (want)) {                                                                            \
      std::printf("FAIL %s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call,          \
                  cudaGetErrorName(E_), cudaGetErrorName(want));                                   \
      ++apitest::Failures;                                                                         \
    } else if ((want) != cudaSuccess) {                                                            \
      cudaError_t L_ = cudaGetLastError();                                                         \
      cudaError_t A_ = cudaGetLastError();                                                         \
      if (L_ != (want) || A_ != cudaSuccess) {                                                     \
        std::printf("FAIL %s:%d: %s: cudaGetLastError gave %s then %s\n", __FILE__, __LINE__,      \
                    #call, cudaGetErrorName(L_), cudaGetErrorName(A_));                            \
        ++apitest::Failures;                                                                       \
      }                                                                                            \
    }                                                                                              \
  } while (0)

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      apitest::fail(__FILE__, __LINE__, #cond);                                                    \
  } while (0)

// Two integers that must be equal, both printed when they are not.
#define EXPECT_EQ(a, b)                                                                            \
  do {                                                                                             \
    long long A_ = static_cast<long long>(a), B_ = static_cast<long long>(b);                      \
    if (A_ != B_) {                                                                                \
      std::printf("FAIL %s:%d: %s is %lld, expected %s = %lld\n", __FILE__, __LINE__, #a, A_, #b,  \
                  B_);                                                                             \
      ++apitest::Failures;                                                                         \
    }                                                                                              \
  } while (0)

#endif // DEEPUM_TESTS_STANDIN_APITEST_H
