//===- Format.cpp - Read and write profiles and plans -----------------------===//
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <zlib.h>

#include <cstring>

using namespace llvm;

namespace deepum::format {
namespace {

Error fileError(StringRef Name, const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Name + ": " + Msg);
}

bool isGzip(StringRef Bytes) {
  return Bytes.size() >= 2 && static_cast<unsigned char>(Bytes[0]) == 0x1f &&
         static_cast<unsigned char>(Bytes[1]) == 0x8b;
}

Expected<std::string> gunzip(StringRef Bytes, StringRef Name) {
  z_stream Z;
  std::memset(&Z, 0, sizeof(Z));
  // 15 window bits + 32: accept a gzip or zlib header.
  if (inflateInit2(&Z, 15 + 32) != Z_OK)
    return fileError(Name, "cannot initialise decompression");
  Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(Bytes.data()));
  Z.avail_in = static_cast<uInt>(Bytes.size());
  std::string Out;
  char Chunk[1 << 16];
  int Rc = Z_OK;
  while (Rc != Z_STREAM_END) {
    Z.next_out = reinterpret_cast<Bytef *>(Chunk);
    Z.avail_out = sizeof(Chunk);
    Rc = inflate(&Z, Z_NO_FLUSH);
    if (Rc != Z_OK && Rc != Z_STREAM_END) {
      inflateEnd(&Z);
      if (Rc == Z_BUF_ERROR)
        return fileError(Name, "truncated gzip data");
      return fileError(Name, Twine("corrupt gzip data (") + (Z.msg ? Z.msg : "zlib error") + ")");
    }
    Out.append(Chunk, sizeof(Chunk) - Z.avail_out);
    if (Out.size() > kMaxFileBytes) {
      inflateEnd(&Z);
      return fileError(Name, "decompresses to more than 4 GiB; refusing to read it");
    }
    if (Rc != Z_STREAM_END && Z.avail_in == 0 && Z.avail_out != 0) {
      inflateEnd(&Z);
      return fileError(Name, "truncated gzip data");
    }
  }
  inflateEnd(&Z);
  return Out;
}

template <typename Msg>
Expected<Msg> parseMessage(StringRef Bytes, StringRef Name, Encoding Enc, StringRef What) {
  Msg M;
  if (Bytes.empty())
    return fileError(Name, Twine("empty file, not a ") + What);
  switch (Enc) {
  case Encoding::Binary: {
    if (Bytes.size() > static_cast<size_t>(INT32_MAX))
      return fileError(Name, "larger than 2 GiB, the protobuf limit for one message");
    google::protobuf::io::CodedInputStream In(reinterpret_cast<const uint8_t *>(Bytes.data()),
                                              static_cast<int>(Bytes.size()));
    In.SetTotalBytesLimit(INT32_MAX);
    if (!M.ParseFromCodedStream(&In) || !In.ConsumedEntireMessage())
      return fileError(Name, Twine("not a deepum ") + What +
                                 " (protobuf parse failed: truncated, corrupt or another format)");
    // Reading garbage as protobuf often "succeeds" with only unknown fields.
    std::vector<const google::protobuf::FieldDescriptor *> Known;
    M.GetReflection()->ListFields(M, &Known);
    if (Known.empty())
      return fileError(Name, Twine("not a deepum ") + What + " (no known fields)");
    break;
  }
  case Encoding::Text:
    if (!google::protobuf::TextFormat::ParseFromString(std::string(Bytes), &M))
      return fileError(Name, Twine("not a deepum ") + What + " in protobuf text format");
    break;
  case Encoding::Json: {
    auto St = google::protobuf::util::JsonStringToMessage(std::string(Bytes), &M);
    if (!St.ok())
      return fileError(Name, Twine("not a deepum ") + What + " in JSON: " + St.message().ToString());
    break;
  }
  }
  return M;
}

template <typename Msg>
Error writeMessage(const Msg &M, StringRef Path, StringRef What) {
  std::string Bytes;
  switch (encodingForPath(Path)) {
  case Encoding::Binary:
    if (!M.SerializeToString(&Bytes))
      return fileError(Path, Twine("cannot serialise the ") + What);
    break;
  case Encoding::Text:
    Bytes = toText(M);
    break;
  case Encoding::Json:
    Bytes = toJson(M);
    break;
  }
  if (Path.endswith(".gz")) {
    z_stream Z;
    std::memset(&Z, 0, sizeof(Z));
    // 15 window bits + 16: write a gzip header; level 9 keeps shipped fixtures small.
    if (deflateInit2(&Z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return fileError(Path, "cannot initialise compression");
    std::string Out(deflateBound(&Z, Bytes.size()), '\0');
    Z.next_in = reinterpret_cast<Bytef *>(Bytes.data());
    Z.avail_in = static_cast<uInt>(Bytes.size());
    Z.next_out = reinterpret_cast<Bytef *>(Out.data());
    Z.avail_out = static_cast<uInt>(Out.size());
    int Rc = deflate(&Z, Z_FINISH);
    Out.resize(Z.total_out);
    deflateEnd(&Z);
    if (Rc != Z_STREAM_END)
      return fileError(Path, "compression failed");
    Bytes = std::move(Out);
  }
  return writeFileAtomically(Path, Bytes);
}

} // namespace

Encoding encodingForPath(StringRef Path) {
  StringRef P = Path;
  if (P.endswith(".gz"))
    P = P.drop_back(3);
  if (P.endswith(".json"))
    return Encoding::Json;
  if (P.endswith(".txtpb") || P.endswith(".textproto") || P.endswith(".pbtxt"))
    return Encoding::Text;
  return Encoding::Binary;
}

Expected<std::string> readFileBytes(StringRef Path) {
  if (Path != "-") {
    sys::fs::file_status St;
    if (std::error_code EC = sys::fs::status(Path, St))
      return fileError(Path, EC.message());
    if (sys::fs::is_directory(St))
      return fileError(Path, "is a directory");
    if (St.getSize() > kMaxFileBytes)
      return fileError(Path, "larger than 4 GiB; refusing to read it");
  }
  auto Buf = MemoryBuffer::getFileOrSTDIN(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return fileError(Path, Buf.getError().message());
  StringRef Bytes = (*Buf)->getBuffer();
  if (isGzip(Bytes))
    return gunzip(Bytes, Path);
  return Bytes.str();
}

Expected<deepum::v1::Profile> parseProfile(StringRef Bytes, StringRef Name, Encoding Enc) {
  auto P = parseMessage<deepum::v1::Profile>(Bytes, Name, Enc, "profile");
  if (!P)
    return P.takeError();
  if (Error E = validateProfile(*P))
    return fileError(Name, toString(std::move(E)));
  return P;
}

Expected<deepum::v1::Plan> parsePlan(StringRef Bytes, StringRef Name, Encoding Enc) {
  auto P = parseMessage<deepum::v1::Plan>(Bytes, Name, Enc, "plan");
  if (!P)
    return P.takeError();
  if (Error E = validatePlan(*P))
    return fileError(Name, toString(std::move(E)));
  return P;
}

Expected<deepum::v1::Profile> readProfile(StringRef Path) {
  auto Bytes = readFileBytes(Path);
  if (!Bytes)
    return Bytes.takeError();
  return parseProfile(*Bytes, Path, encodingForPath(Path));
}

Expected<deepum::v1::Plan> readPlan(StringRef Path) {
  auto Bytes = readFileBytes(Path);
  if (!Bytes)
    return Bytes.takeError();
  return parsePlan(*Bytes, Path, encodingForPath(Path));
}

Error writeProfile(const deepum::v1::Profile &P, StringRef Path) {
  return writeMessage(P, Path, "profile");
}

Error writePlan(const deepum::v1::Plan &P, StringRef Path) { return writeMessage(P, Path, "plan"); }

std::string toJson(const google::protobuf::Message &M) {
  std::string Out;
  google::protobuf::util::JsonPrintOptions Opts;
  Opts.add_whitespace = true;
  Opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(M, &Out, Opts);
  return Out;
}

std::string toText(const google::protobuf::Message &M) {
  std::string Out;
  google::protobuf::TextFormat::PrintToString(M, &Out);
  return Out;
}

Expected<FileKind> detectFileKind(StringRef Path, StringRef Bytes) {
  StringRef Name = sys::path::filename(Path);
  if (Name.contains(".plan."))
    return FileKind::Plan;
  if (Name.contains(".profile."))
    return FileKind::Profile;
  // Both messages start with format_version; a profile has a device (field 3,
  // a message) or kernels, a plan has metadata (field 2, a message).
  Encoding Enc = encodingForPath(Path);
  if (Enc != Encoding::Binary) {
    if (Bytes.contains("metadata") || Bytes.contains("position_ids"))
      return FileKind::Plan;
    return FileKind::Profile;
  }
  deepum::v1::Profile Prof;
  bool ProfOk = Prof.ParseFromArray(Bytes.data(), static_cast<int>(Bytes.size())) &&
                Prof.GetReflection()->GetUnknownFields(Prof).empty() && Prof.kernels_size() > 0;
  if (ProfOk)
    return FileKind::Profile;
  deepum::v1::Plan Plan;
  if (Plan.ParseFromArray(Bytes.data(), static_cast<int>(Bytes.size())) &&
      Plan.GetReflection()->GetUnknownFields(Plan).empty() && Plan.has_metadata())
    return FileKind::Plan;
  return fileError(Path, "neither a deepum profile nor a deepum plan (name it *.profile.pb or "
                         "*.plan.pb to say which)");
}

Error writeFileAtomically(StringRef Path, StringRef Text) {
  if (Path == "-") {
    outs() << Text;
    outs().flush();
    return Error::success();
  }
  SmallString<256> Tmp;
  int FD = -1;
  StringRef Dir = sys::path::parent_path(Path);
  SmallString<256> Model(Dir.empty() ? "." : Dir);
  sys::path::append(Model, sys::path::filename(Path) + ".tmp-%%%%%%");
  if (std::error_code EC = sys::fs::createUniqueFile(Model, FD, Tmp))
    return fileError(Path, "cannot create a temporary file beside it: " + EC.message());
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Text;
    OS.close();
    if (OS.has_error()) {
      std::string Msg = OS.error().message();
      OS.clear_error();
      (void)sys::fs::remove(Tmp);
      return fileError(Path, "write failed: " + Msg);
    }
  }
  if (std::error_code EC = sys::fs::rename(Tmp, Path)) {
    (void)sys::fs::remove(Tmp);
    return fileError(Path, "cannot rename the temporary file into place: " + EC.message());
  }
  return Error::success();
}

} // namespace deepum::format
