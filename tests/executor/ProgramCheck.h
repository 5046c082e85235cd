//===- ProgramCheck.h - CHECK for the test programs that run without gtest -===//
//
// The executor's child-process test programs (they load the C ABI, exit, fork)
// count failed checks and exit 1 when any failed.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TESTS_EXECUTOR_PROGRAMCHECK_H
#define DEEPUM_TESTS_EXECUTOR_PROGRAMCHECK_H

#include <cstdio>

namespace deepum::test {
/// Checks failed so far in this process.
inline int Failures = 0;
} // namespace deepum::test

#define CHECK(Cond)                                                                                \
  do {                                                                                             \
    if (!(Cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #Cond);                \
      ++deepum::test::Failures;                                                                    \
    }                                                                                              \
  } while (0)

#endif // DEEPUM_TESTS_EXECUTOR_PROGRAMCHECK_H
