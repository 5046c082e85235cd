//===- ProfilerHooksProgram.cpp - libdeepum's C ABI feeding the profiler ----===//
//
// Runs the C ABI (built over the fake backend: no GPU) in one of several
// situations, each its own process because the hook lookup is cached per
// process, and checks what the fake profiler injection library recorded:
//
//   profiled LIB    DEEPUM_PROFILER_LIBRARY=LIB, loaded before the first call
//   late LIB        set, but loaded only after a first allocation (as at cuInit)
//   given-up LIB    loaded only after the lookups were given up on: never reported
//   absent LIB      loaded, but DEEPUM_PROFILER_LIBRARY unset: not profiling
//   missing         DEEPUM_PROFILER_LIBRARY names no loaded library
//   real LIB        the shipped libdeepum.so (CUDA backend): steps are reported
//                   with or without a GPU, allocations where one exists
//
// Exit status 0 when every check passed; each failure is printed.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "FakeProfilerInjection.h"

#include "ProgramCheck.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using deepum::test::Failures;

constexpr uint64_t kMiB = uint64_t{1} << 20;
void *const kStream = reinterpret_cast<void *>(uintptr_t{0x5000});

fake_profiler_events_fn Read = nullptr;

/// What the driver does with CUDA_INJECTION64_PATH at cuInit.
bool load(const char *Lib) {
  void *H = dlopen(Lib, RTLD_NOW | RTLD_LOCAL);
  if (!H) {
    std::fprintf(stderr, "cannot load %s: %s\n", Lib, dlerror());
    return false;
  }
  Read = reinterpret_cast<fake_profiler_events_fn>(dlsym(H, "fake_profiler_events"));
  return Read != nullptr;
}

std::vector<fake_profiler_event> events() {
  std::vector<fake_profiler_event> E(64);
  E.resize(Read ? Read(E.data(), E.size()) : 0);
  return E;
}

bool is(const fake_profiler_event &E, fake_profiler_event_kind K, const void *Ptr = nullptr,
        uint64_t Bytes = 0, const void *Stream = nullptr, uint64_t Call = 0) {
  return E.kind == K && E.ptr == reinterpret_cast<uint64_t>(Ptr) && E.bytes == Bytes &&
         E.stream == reinterpret_cast<uint64_t>(Stream) && E.call == Call;
}

/// Allocations that must work whatever the profiler's state.
void allocatorStillWorks(int Rounds) {
  for (int I = 0; I < Rounds; ++I) {
    void *P = deepum_malloc(4096, 0, nullptr);
    CHECK(P != nullptr);
    deepum_free(P, 4096, 0, nullptr);
  }
  deepum_step();
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s profiled|late|given-up|absent LIB | missing\n", argv[0]);
    return 2;
  }
  std::string Mode = argv[1];
  const char *Lib = argc > 2 ? argv[2] : "";
  setenv("DEEPUM_LOG", "off", 1);
  unsetenv("DEEPUM_PLAN");

  if (Mode == "profiled") {
    setenv("DEEPUM_PROFILER_LIBRARY", Lib, 1);
    if (!load(Lib))
      return 3;
    void *P = deepum_malloc(1000, 0, kStream);
    CHECK(deepum_malloc(0, 0, kStream) == nullptr); // not an allocation: not reported nor counted
    void *Q = deepum_malloc(static_cast<ssize_t>(3 * kMiB), 0, nullptr);
    CHECK(P && Q && P != Q);
    deepum_free(P, 1000, 0, kStream);
    deepum_step();
    deepum_free(Q, static_cast<ssize_t>(3 * kMiB), 0, nullptr);
    deepum_free(nullptr, 0, 0, nullptr); // nothing to report
    std::vector<fake_profiler_event> E = events();
    CHECK(E.size() == 5);
    if (E.size() == 5) {
      // Requested bytes, the stream, the allocator's call count (the 0-byte
      // request is no call).
      CHECK(is(E[0], FAKE_PROFILER_ALLOC, P, 1000, kStream, 1));
      CHECK(is(E[1], FAKE_PROFILER_ALLOC, Q, 3 * kMiB, nullptr, 2));
      CHECK(is(E[2], FAKE_PROFILER_FREE, P));
      CHECK(is(E[3], FAKE_PROFILER_STEP));
      CHECK(is(E[4], FAKE_PROFILER_FREE, Q));
    }
  } else if (Mode == "late") {
    setenv("DEEPUM_PROFILER_LIBRARY", Lib, 1);
    void *Early = deepum_malloc(4096, 0, nullptr); // before cuInit: no profiler yet
    CHECK(Early != nullptr);
    if (!load(Lib))
      return 3;
    CHECK(events().empty());
    void *P = deepum_malloc(8192, 0, kStream);
    deepum_free(P, 8192, 0, kStream);
    deepum_free(Early, 4096, 0, nullptr);
    std::vector<fake_profiler_event> E = events();
    CHECK(E.size() == 3);
    if (E.size() == 3) {
      // Call 2: the count includes the call made before the profiler was found.
      CHECK(is(E[0], FAKE_PROFILER_ALLOC, P, 8192, kStream, 2));
      CHECK(is(E[1], FAKE_PROFILER_FREE, P));
      CHECK(is(E[2], FAKE_PROFILER_FREE, Early)); // reported, the profiler maps it or not
    }
  } else if (Mode == "given-up") {
    setenv("DEEPUM_PROFILER_LIBRARY", Lib, 1);
    allocatorStillWorks(100); // far more calls than lookups are tried
    if (!load(Lib))
      return 3;
    allocatorStillWorks(10);
    CHECK(events().empty());
  } else if (Mode == "absent") {
    unsetenv("DEEPUM_PROFILER_LIBRARY");
    if (!load(Lib)) // loaded, but this process is not being profiled
      return 3;
    allocatorStillWorks(100);
    CHECK(events().empty());
  } else if (Mode == "missing") {
    setenv("DEEPUM_PROFILER_LIBRARY", "/nonexistent/libdeepum_profiler_injection.so", 1);
    allocatorStillWorks(100);
    deepum_stats_t S{};
    CHECK(deepum_get_stats(0, &S, sizeof S) == 0 && S.allocations >= 100);
  } else if (Mode == "real") {
    setenv("DEEPUM_PROFILER_LIBRARY", Lib, 1);
    if (!load(Lib))
      return 3;
    deepum_step();
    void *P = deepum_malloc(static_cast<ssize_t>(kMiB), 0, nullptr); // nullptr without a GPU
    deepum_free(P, static_cast<ssize_t>(kMiB), 0, nullptr);
    deepum_step();
    std::vector<fake_profiler_event> E = events();
    std::vector<fake_profiler_event> Want = {{FAKE_PROFILER_STEP, 0, 0, 0, 0}};
    if (P) {
      Want.push_back({FAKE_PROFILER_ALLOC, reinterpret_cast<uint64_t>(P), kMiB, 0, 1});
      Want.push_back({FAKE_PROFILER_FREE, reinterpret_cast<uint64_t>(P), 0, 0, 0});
    }
    Want.push_back({FAKE_PROFILER_STEP, 0, 0, 0, 0});
    CHECK(E.size() == Want.size());
    for (size_t I = 0; I < E.size() && I < Want.size(); ++I)
      CHECK(is(E[I], Want[I].kind, reinterpret_cast<const void *>(Want[I].ptr), Want[I].bytes,
               nullptr, Want[I].call));
    std::printf("real libdeepum: %s\n", P ? "allocated on a GPU" : "no GPU: steps only");
  } else {
    return 2;
  }
  if (Failures == 0)
    std::printf("%s: ok\n", Mode.c_str());
  return Failures ? 1 : 0;
}
