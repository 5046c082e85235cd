//===- Entry.h - What every runtime entry point of the stand-in shares ------===//
//
// The conventions of Runtime.cpp, for the entry points kept in files of their
// own (host memory, memory pools, host functions, occupancy): an error is
// recorded for cudaGetLastError as it is returned, and a call that does work
// takes the model's lock and answers a sticky or configuration error first.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_ENTRY_H
#define DEEPUM_STANDIN_ENTRY_H

#include "Model.h"

#include <cstdint>

namespace deepum::standin {

/// Returns `E`, kept as the thread's last error unless it is cudaSuccess.
cudaError_t ret(cudaError_t E);

/// CUDA_INJECTION64_PATH, loaded once at the first call that initialises CUDA.
void initializeInjection();

/// A capture sequence on `S` meets an operation it cannot capture: the
/// operation fails and the capture is invalidated.
cudaError_t refuseInCapture(CUstream_st &S);

/// An anonymous mapping of at least `Bytes`, aligned to and a whole number of
/// 2 MiB UM blocks (`Mapped` its length); null when the system refuses it.
void *mapBytes(uint64_t Bytes, uint64_t &Mapped);

/// A new node at the end of a captured graph.
CUgraphNode_st &addNode(CUgraph_st &G, cudaGraphNodeType T);

} // namespace deepum::standin

/// Entry of every call that does work: the model's lock, and a sticky error
/// or a configuration error returned before anything else.
#define ENTER()                                                                                    \
  deepum::standin::initializeInjection();                                                          \
  deepum::standin::Model &M = deepum::standin::Model::get();                                       \
  deepum::standin::ModelLock Lock(M);                                                            \
  if (M.Sticky != cudaSuccess)                                                                     \
    return deepum::standin::ret(M.Sticky);                                                         \
  if (!M.ConfigError.empty())                                                                      \
  return deepum::standin::ret(cudaErrorInitializationError)

#endif // DEEPUM_STANDIN_ENTRY_H
