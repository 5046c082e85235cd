//===- CApiBackend.h - The backend behind libdeepum's C ABI -----------------===//
//
// CApi.cpp runs over whichever backend the library it is linked into supplies:
// libdeepum.so links CudaCApiBackend.cpp; the C ABI's tests link a fake one,
// so the entry points themselves run without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_CAPI_CAPIBACKEND_H
#define DEEPUM_EXECUTOR_CAPI_CAPIBACKEND_H

#include "deepum/executor/Backend.h"

namespace deepum::executor {

/// The process-wide backend, created at the first call and never destroyed.
/// May throw (the caller degrades to "no deepum").
Backend &capiBackend();

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_CAPI_CAPIBACKEND_H
