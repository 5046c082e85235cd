//===- FakeCApiBackend.cpp - libdeepum's C ABI over the fake backend --------===//
//
// Linked instead of executor/capi/CudaCApiBackend.cpp into the C ABI built
// for tests (libdeepum_fake_capi.so): the entry points run unchanged, with
// fake managed addresses and no GPU.
//
//===----------------------------------------------------------------------===//
#include "CApiBackend.h"

#include "deepum/executor/FakeBackend.h"

deepum::executor::Backend &deepum::executor::capiBackend() {
  static Backend *B = [] {
    FakeBackendOptions O;
    O.Record = false;
    return new FakeBackend(O);
  }();
  return *B;
}
