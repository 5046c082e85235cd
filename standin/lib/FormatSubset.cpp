//===- FormatSubset.cpp - The format-library functions the model needs -----===//
//
// The stand-in lives in other programs' processes, among them deepum's own
// profiler injection library, which registers deepum/v1/profile.proto with the
// process's one libprotobuf. A second registration of the same file aborts
// the process ("File already exists in database"), and libprotobuf.a cannot be
// linked into a shared object here (executor/CMakeLists.txt). So the stand-in
// must carry no generated protobuf code: these definitions satisfy what the
// simulator's engine and device models reference in the format library
// (Format.cpp, Perfetto.cpp), so that the linker takes neither object, nor the
// generated descriptors they use, from the archive. A later change that needs
// more of those objects fails to link (duplicate definitions), never silently.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"

#include "llvm/Support/MemoryBuffer.h"

namespace deepum::format {

/// Device-model override files (loadDeviceModel's second argument; the
/// stand-in passes none today): plain JSON, capped as the format library caps files.
llvm::Expected<std::string> readFileBytes(llvm::StringRef Path, const ReadLimits &Limits) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return llvm::createStringError(Buf.getError(), "%s: %s", Path.str().c_str(),
                                   Buf.getError().message().c_str());
  if ((*Buf)->getBufferSize() > Limits.FileBytes)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: too large; refusing to read it", Path.str().c_str());
  return (*Buf)->getBuffer().str();
}

// The stand-in never gives its engine a timeline.
void TraceWriter::span(int, int, llvm::StringRef, llvm::StringRef, uint64_t, uint64_t,
                       llvm::json::Object) {}
void TraceWriter::instant(int, int, llvm::StringRef, llvm::StringRef, uint64_t,
                          llvm::json::Object) {}
void TraceWriter::counter(int, llvm::StringRef, llvm::StringRef, uint64_t, double) {}

} // namespace deepum::format
