//===- Inspect.cpp - Summaries, timelines and conversions of deepum files ---===//
#include "deepum/tools/Inspect.h"

#include "deepum/base/Error.h"
#include "deepum/format/AccessSources.h"
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"
#include "deepum/format/Summary.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace deepum::tools {

/// Option values come from the command line: escaped like every name in an error.
static Error usageError(const Twine &Msg) {
  return base::makeError(format::escapeForMessage(Msg.str()));
}

Error runInspect(const InspectOptions &Opts, raw_ostream &OS) {
  if (!Opts.Dump.empty() && Opts.Dump != "json" && Opts.Dump != "text")
    return usageError("--dump must be 'json' or 'text', not '" + Opts.Dump + "'");
  if (Opts.AccessSources && (Opts.Json || !Opts.Dump.empty()))
    return usageError("--access-sources prints a table of its own: not with --json or --dump");
  if (Opts.DropMigrations && Opts.ConvertOut.empty())
    return usageError("--drop-migrations needs --convert OUT");
  // Refused before anything is read or written; the writers check again.
  const StringRef Inputs[] = {Opts.Input};
  for (const std::string &Out : {Opts.PerfettoOut, Opts.ConvertOut})
    if (!Out.empty())
      if (Error E = format::checkNotAnInput(Out, Inputs))
        return E;
  auto Bytes = format::readFileBytes(Opts.Input);
  if (!Bytes)
    return Bytes.takeError();
  auto Kind = format::detectFileKind(Opts.Input, *Bytes);
  if (!Kind)
    return Kind.takeError();
  format::Encoding Enc = format::encodingForPath(Opts.Input);

  if (*Kind == format::FileKind::Profile) {
    auto P = format::parseProfile(*Bytes, Opts.Input, Enc);
    if (!P)
      return P.takeError();
    if (!Opts.PerfettoOut.empty()) {
      format::TraceWriter W;
      format::addProfileTimeline(W, *P);
      if (Error E = W.write(Opts.PerfettoOut, Inputs))
        return E;
    }
    if (!Opts.ConvertOut.empty()) {
      // --drop-migrations: the records are set aside while the profile is
      // written (not copied: a GPU profile holds millions) and put back, so
      // the summary below stays the input's.
      google::protobuf::RepeatedPtrField<v1::Migration> Migrations;
      google::protobuf::RepeatedPtrField<v1::UmEvent> Events;
      if (Opts.DropMigrations) {
        Migrations.Swap(P->mutable_migrations());
        Events.Swap(P->mutable_um_events());
      }
      Error E = format::writeProfile(*P, Opts.ConvertOut, Inputs);
      if (Opts.DropMigrations) {
        Migrations.Swap(P->mutable_migrations());
        Events.Swap(P->mutable_um_events());
      }
      if (E)
        return E;
    }
    if (!Opts.Dump.empty()) {
      OS << (Opts.Dump == "json" ? format::toJson(*P) : format::toText(*P)) << "\n";
      return Error::success();
    }
    if (Opts.AccessSources) {
      const format::AccessSourceReport R = format::accessSources(*P);
      OS << formatv("{0}: {1} kernel launches, arguments read for {2}, without a layout for {3}; "
                    "bytes summed over launches\n\n",
                    Opts.Input, R.Kernels, R.KernelsScanned, R.KernelsNoLayout)
         << format::accessSourceTable(R);
      return Error::success();
    }
    format::ProfileSummary S = format::summarize(*P);
    if (Opts.Json)
      OS << formatv("{0:2}", format::toJson(S)) << "\n";
    else
      format::print(OS, S);
    return Error::success();
  }

  if (!Opts.PerfettoOut.empty())
    return usageError(Opts.Input + ": --perfetto needs a profile; this is a plan");
  if (Opts.AccessSources)
    return usageError(Opts.Input + ": --access-sources needs a profile; this is a plan");
  auto P = format::parsePlan(*Bytes, Opts.Input, Enc);
  if (!P)
    return P.takeError();
  if (Opts.DropMigrations)
    return usageError(Opts.Input + ": --drop-migrations needs a profile; this is a plan");
  if (!Opts.ConvertOut.empty())
    if (Error E = format::writePlan(*P, Opts.ConvertOut, Inputs))
      return E;
  if (!Opts.Dump.empty()) {
    OS << (Opts.Dump == "json" ? format::toJson(*P) : format::toText(*P)) << "\n";
    return Error::success();
  }
  format::PlanSummary S = format::summarize(*P);
  if (Opts.Json)
    OS << formatv("{0:2}", format::toJson(S)) << "\n";
  else
    format::print(OS, S);
  return Error::success();
}

} // namespace deepum::tools
