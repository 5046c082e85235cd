//===- NotSupported.h - What an entry point the stand-in lacks says ---------===//
//
// The generated stubs (standin/tools/stubs.py) of every function the installed
// CUDA libraries export and the stand-in does not model: each says so once on
// standard error, then returns the library's "not supported" code, so that a
// program from elsewhere loads, runs and learns what is missing instead of
// dying at the dynamic linker or believing a silent success.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_NOTSUPPORTED_H
#define DEEPUM_STANDIN_NOTSUPPORTED_H

#include <atomic>
#include <cstdio>

namespace deepum::standin {

inline void notSupported(std::atomic<bool> &Said, const char *Name, const char *Answer) {
  if (!Said.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr, "CUDA stand-in: %s is not modelled; it returns %s\n", Name, Answer);
}

} // namespace deepum::standin

#endif
