//===- CudaCApiBackend.cpp - libdeepum.so runs over CUDA --------------------===//
#include "CApiBackend.h"

#include "deepum/executor/cuda/CudaBackend.h"

deepum::executor::Backend &deepum::executor::capiBackend() {
  static Backend *B = cuda::createCudaBackend().release();
  return *B;
}
