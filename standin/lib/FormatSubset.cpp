//===- FormatSubset.cpp - The format-library functions the model needs -----===//
//
// The stand-in lives in other programs' processes, among them deepum's own
// profiler injection library, which registers deepum/v1/profile.proto with the
// process's one libprotobuf. A second registration of the same file aborts
// the process ("File already exists in database"), and libprotobuf.a cannot be
// linked into a shared object here (executor/CMakeLists.txt). So the stand-in
// must carry no generated protobuf code: these definitions satisfy what the
// simulator's engine references in the format library (Perfetto.cpp), so
// that the linker takes neither that object nor the generated descriptors it
// uses from the archive. (Device files are read by the base library, which
// has no protobuf.) A later change that needs more of the format library's
// objects fails to link (duplicate definitions), never silently.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Perfetto.h"

namespace deepum::format {

// The stand-in never gives its engine a timeline.
void TraceWriter::span(int, int, llvm::StringRef, llvm::StringRef, uint64_t, uint64_t,
                       llvm::json::Object) {}
void TraceWriter::instant(int, int, llvm::StringRef, llvm::StringRef, uint64_t,
                          llvm::json::Object) {}
void TraceWriter::counter(int, llvm::StringRef, llvm::StringRef, uint64_t, double) {}

} // namespace deepum::format
