//===- deepum/format/Format.h - Read, write and validate profiles and plans -===//
//
// Profiles and plans are protobuf messages (proto/deepum/v1). Files are binary
// protobuf, optionally gzip-compressed (detected by content, written when the
// path ends in ".gz"); protobuf text format (".txtpb", ".textproto") and JSON
// (".json") are accepted too, for hand-written fixtures and debugging.
//
// Every reader validates what it read. Errors name the file and the problem
// in one lower-case line, e.g. "run.profile.pb: kernel 12 ends before it starts".
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_FORMAT_H
#define DEEPUM_FORMAT_FORMAT_H

#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace deepum::format {

/// Format versions this build reads and writes.
inline constexpr uint32_t kProfileFormatVersion = deepum::v1::PROFILE_FORMAT_CURRENT;
inline constexpr uint32_t kPlanFormatVersion = deepum::v1::PLAN_FORMAT_CURRENT;

/// 2 MiB: the UVM driver's VA-block and eviction-chunk size.
inline constexpr uint64_t kUmBlockBytes = uint64_t{2} << 20;
/// 64 KiB: the driver's migration granularity (big pages); 32 per UM block.
inline constexpr uint64_t kUmPageBytes = uint64_t{64} << 10;

/// Files larger than this are refused before reading (after decompression too):
/// a profile of a million kernels is far below it.
inline constexpr uint64_t kMaxFileBytes = uint64_t{4} << 30;

enum class Encoding { Binary, Text, Json };

/// Encoding implied by a file name: ".json" -> Json, ".txtpb"/".textproto"/".pbtxt"
/// -> Text, anything else -> Binary. A trailing ".gz" is ignored.
Encoding encodingForPath(llvm::StringRef Path);

/// Reads `Path` ("-" = standard input), decompressing gzip. The result is
/// the raw bytes of the encoded message.
llvm::Expected<std::string> readFileBytes(llvm::StringRef Path);

/// Reads and validates a profile.
llvm::Expected<deepum::v1::Profile> readProfile(llvm::StringRef Path);
/// Reads and validates a plan.
llvm::Expected<deepum::v1::Plan> readPlan(llvm::StringRef Path);

/// Parses already-read bytes; `Name` is used in error messages.
llvm::Expected<deepum::v1::Profile> parseProfile(llvm::StringRef Bytes, llvm::StringRef Name,
                                                 Encoding Enc = Encoding::Binary);
llvm::Expected<deepum::v1::Plan> parsePlan(llvm::StringRef Bytes, llvm::StringRef Name,
                                           Encoding Enc = Encoding::Binary);

/// Writes a message whole: to a temporary file renamed into place, so a failed
/// run never leaves a half-written file. Encoding follows the file name;
/// ".gz" compresses. "-" writes to standard output.
llvm::Error writeProfile(const deepum::v1::Profile &P, llvm::StringRef Path);
llvm::Error writePlan(const deepum::v1::Plan &P, llvm::StringRef Path);

/// Semantic checks; the error text names the offending record (no file name).
llvm::Error validateProfile(const deepum::v1::Profile &P);
llvm::Error validatePlan(const deepum::v1::Plan &P);

/// Protobuf's own printers.
std::string toJson(const google::protobuf::Message &M);
std::string toText(const google::protobuf::Message &M);

/// What a file holds, judged from its name and, failing that, its content.
enum class FileKind { Profile, Plan };
llvm::Expected<FileKind> detectFileKind(llvm::StringRef Path, llvm::StringRef Bytes);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_FORMAT_H
