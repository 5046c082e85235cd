//===- deepum/base/Error.h - The errors every library makes ----------------===//
//
// Libraries return llvm::Error; each message is one line, lower-case, and
// names the file it is about first ("FILE: what is wrong").
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_BASE_ERROR_H
#define DEEPUM_BASE_ERROR_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace deepum::base {

/// An error with message `Msg`.
inline llvm::Error makeError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg.str());
}

/// "FILE: MSG".
inline llvm::Error fileError(llvm::StringRef File, const llvm::Twine &Msg) {
  return makeError(File + ": " + Msg);
}

} // namespace deepum::base

#endif // DEEPUM_BASE_ERROR_H
