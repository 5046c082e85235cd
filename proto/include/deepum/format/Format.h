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

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>

namespace deepum::format {

/// Format versions this build reads and writes.
inline constexpr uint32_t kProfileFormatVersion = deepum::v1::PROFILE_FORMAT_CURRENT;
inline constexpr uint32_t kPlanFormatVersion = deepum::v1::PLAN_FORMAT_CURRENT;

/// 2 MiB: the UVM driver's VA-block and eviction-chunk size.
inline constexpr uint64_t kUmBlockBytes = uint64_t{2} << 20;
/// 64 KiB: the driver's migration granularity (big pages); 32 per UM block.
inline constexpr uint64_t kUmPageBytes = uint64_t{64} << 10;

/// Caps on what a reader takes in, so that a hostile or mistaken input ends in
/// one error line rather than in exhausting memory. A shipped profile holds
/// 70-900 bytes per kernel (gpt2-medium: 11.9 MB for 13,440 kernels), so a
/// profile of a million kernels is well under 1 GiB; binary protobuf cannot
/// hold more than 2 GiB in one message anyway.
///
/// A regular file, compressed or not, larger than this is refused before it
/// is read: "FILE: larger than 1 GiB; refusing to read it".
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;
/// Standard input, pipes and devices (no size known beforehand) are read in
/// chunks and refused once they pass this:
/// "FILE: more than 1 GiB from a pipe or device; refusing to read it".
inline constexpr uint64_t kMaxStreamBytes = uint64_t{1} << 30;
/// gzip data is refused as soon as inflating it passes this, before the
/// buffer grows past it: "FILE: decompresses to more than 1 GiB; refusing to read it".
inline constexpr uint64_t kMaxDecompressedBytes = uint64_t{1} << 30;

/// The kernels of a profile run for at most this much in all (2^50 ns, 13
/// days: a few iterations of any training run are far below it). Simulated
/// time sums durations over iterations in uint64_t ns; this keeps it far from
/// 2^64. validateProfile: "kernel K (NAME) runs N ns: the kernels' durations
/// add up to more than 2^50 ns (13 days), corrupt timestamps".
inline constexpr uint64_t kMaxProfileKernelNs = uint64_t{1} << 50;

/// What a reader may spend on the message it parses: at most this many times
/// the bytes it parses (after gzip), plus kReadMemorySlackBytes. A file whose
/// estimated cost (estimateReadCost) is above that is refused before protobuf
/// builds anything: "FILE: holds at least 13024289 allocations, which would
/// take at least 1.55 GiB once read, more than 8 times its 190.73 MiB plus
/// 64 MiB; refusing it" (the walk stops once past the bound, hence "at least").
/// Shipped profiles estimate at 4.2-5.4 times their bytes
/// (docs/hostile-input.md, "Memory"). Reading (message, then its checks)
/// takes at most twice the estimate: 16 times the bytes plus 128 MiB.
inline constexpr uint64_t kReadMemoryFactor = 8;
inline constexpr uint64_t kReadMemorySlackBytes = uint64_t{64} << 20;
/// kReadMemoryFactor * Bytes + kReadMemorySlackBytes.
uint64_t readMemoryBound(uint64_t Bytes);

/// What parsing a binary message allocates, estimated from its wire format
/// alone (proto/lib/ReadCost.cpp says how).
struct ReadCost {
  uint64_t Bytes = 0;
  struct Tally {
    uint64_t Elements = 0;
    uint64_t Bytes = 0;
  };
  /// Per known field: elements and bytes; the costliest names the refusal.
  std::map<const google::protobuf::FieldDescriptor *, Tally> Fields;
};
/// Walks `Bytes` as a message of `Type`, stopping at the first malformed byte
/// (what protobuf would build up to there is counted) or once the cost passes
/// `StopAbove`.
ReadCost estimateReadCost(llvm::StringRef Bytes, const google::protobuf::Descriptor &Type,
                          uint64_t StopAbove = UINT64_MAX);

/// The caps readFileBytes applies; tests lower them.
struct ReadLimits {
  uint64_t FileBytes = kMaxFileBytes;
  uint64_t StreamBytes = kMaxStreamBytes;
  uint64_t DecompressedBytes = kMaxDecompressedBytes;
};

enum class Encoding { Binary, Text, Json };

/// Encoding implied by a file name: ".json" -> Json, ".txtpb"/".textproto"/".pbtxt"
/// -> Text, anything else -> Binary. A trailing ".gz" is ignored.
Encoding encodingForPath(llvm::StringRef Path);

/// Reads `Path` ("-" = standard input), decompressing gzip. The result is
/// the raw bytes of the encoded message. gzip data must be one member, as
/// deepum writes it and libdeepum's plan reader reads it: a second member
/// (legal in RFC 1952, e.g. `cat a.gz b.gz`) is refused with its own message,
/// and any other byte after the member is "trailing garbage".
llvm::Expected<std::string> readFileBytes(llvm::StringRef Path,
                                          const ReadLimits &Limits = ReadLimits());

/// Reads and validates a profile.
llvm::Expected<deepum::v1::Profile> readProfile(llvm::StringRef Path);
/// Reads and validates a profile into `P`, which may live on a protobuf arena:
/// a large profile is millions of small messages, and on an arena they cost
/// neither a malloc each to read nor a free each to drop.
llvm::Error readProfileInto(llvm::StringRef Path, deepum::v1::Profile &P);
/// Reads and validates a plan.
llvm::Expected<deepum::v1::Plan> readPlan(llvm::StringRef Path);

/// Parses already-read bytes; `Name` is used in error messages.
llvm::Expected<deepum::v1::Profile> parseProfile(llvm::StringRef Bytes, llvm::StringRef Name,
                                                 Encoding Enc = Encoding::Binary);
llvm::Expected<deepum::v1::Plan> parsePlan(llvm::StringRef Bytes, llvm::StringRef Name,
                                           Encoding Enc = Encoding::Binary);

/// Writes a message whole, as writeFileAtomically does (a regular file is
/// replaced by renaming a temporary file into place, so a failed run never
/// leaves a half-written file). Encoding follows the file name; ".gz"
/// compresses. "-" writes to standard output. `Inputs` are the files the run
/// read: writing over one of them is refused.
llvm::Error writeProfile(const deepum::v1::Profile &P, llvm::StringRef Path,
                         llvm::ArrayRef<llvm::StringRef> Inputs = {});
llvm::Error writePlan(const deepum::v1::Plan &P, llvm::StringRef Path,
                      llvm::ArrayRef<llvm::StringRef> Inputs = {});

/// Writes `Text` to `Path` whole; "-" = standard output.
///  - A regular file, or a new one, is written to a temporary file beside it
///    and renamed into place: a failed run leaves the old file as it was.
///  - A symbolic link is followed (all the way, a dangling one too) and its
///    target written that way, so the link survives.
///  - A character device, FIFO or socket (/dev/null, a named pipe) is opened
///    and written in place, never replaced.
/// Writing over one of `Inputs` is refused before anything is written (see
/// checkNotAnInput).
llvm::Error writeFileAtomically(llvm::StringRef Path, llvm::StringRef Text,
                                llvm::ArrayRef<llvm::StringRef> Inputs = {});
/// The same, for output too large to hold: `Write` streams it to the
/// temporary file (or standard output), so it is never in memory whole.
llvm::Error writeFileAtomically(llvm::StringRef Path,
                                llvm::function_ref<void(llvm::raw_ostream &)> Write,
                                llvm::ArrayRef<llvm::StringRef> Inputs = {});

/// Fails when `Output` is the same file (device and inode: another spelling,
/// a hard or symbolic link count too) as one of `Inputs` that is a regular
/// file: "OUT: is the input file IN; refusing to overwrite it". "-" is never
/// the same as anything.
llvm::Error checkNotAnInput(llvm::StringRef Output, llvm::ArrayRef<llvm::StringRef> Inputs);

/// `Text` as it may appear in a one-line error message: control characters
/// are written as escapes ("\n", "\t", "\x1b"), as are bytes that are not
/// UTF-8 and the C1 controls, so a name taken from a file or the command line
/// cannot break the line or drive the terminal. Other text, backslashes
/// included, is unchanged: escaping twice is escaping once.
std::string escapeForMessage(llvm::StringRef Text);

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
