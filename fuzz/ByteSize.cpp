//===- ByteSize.cpp - parseByteSize on hostile text --------------------------===//
//
// What --gpu-memory, DEEPUM_GPU_MEMORY and the stand-in's device memory read:
// "16GiB", "1.5 GB", "4096". Any text must give a size or nullopt, never a
// crash, a sanitizer report (signed overflow in the arithmetic included) or a
// hang. An accepted size keeps the header's promises: below 2^63 bytes, the
// same read whatever the case of the text and the blanks around it, read back
// exactly from its decimal digits, and printable by formatBytes.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/base/ByteSize.h"

#include <cctype>
#include <string>
#include <string_view>

using namespace deepum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  const char *Target = "fuzz_byte_size";
  const std::string Text(reinterpret_cast<const char *>(Data), Size);
  const std::optional<uint64_t> Bytes = base::parseByteSize(Text);

  std::string Upper = Text;
  for (char &C : Upper)
    C = static_cast<char>(std::toupper(static_cast<unsigned char>(C)));
  if (base::parseByteSize(Upper) != Bytes)
    fuzz::fuzzFail(Target, "the case of the text changes what it reads as");
  if (base::parseByteSize(" " + Text + " ") != Bytes)
    fuzz::fuzzFail(Target, "blanks around the text change what it reads as");
  if (!Bytes)
    return 0;

  if (*Bytes >= uint64_t{1} << 63)
    fuzz::fuzzFail(Target, "a size of 2^63 bytes or more was accepted");
  if (base::parseByteSize(std::to_string(*Bytes)) != Bytes)
    fuzz::fuzzFail(Target, "an accepted size does not read back from its digits");
  if (base::formatBytes(*Bytes).empty())
    fuzz::fuzzFail(Target, "formatBytes printed nothing");
  return 0;
}
