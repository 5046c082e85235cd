// Links deepum::executor from an installed tree and uses the C++ API. Without a
// GPU, allocations fail cleanly (nullptr) and nothing aborts.
#include <deepum/deepum.hpp>

#include <cstdio>

int main() {
  if (!deepum::start())
    return 2;
  void *P = deepum::allocate(1 << 20);
  deepum::deallocate(P, 1 << 20);
  { deepum::IterationScope Iteration; }
  auto S = deepum::stats(0);
  std::printf("consumer: allocation %s, stats %s\n", P ? "served" : "refused (no GPU)",
              S ? "available" : "unavailable");
  return S ? 0 : 3;
}
