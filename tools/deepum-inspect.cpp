//===- deepum-inspect.cpp - Summarise a deepum profile or plan --------------===//
#include "deepum/tools/Inspect.h"

#include "deepum/tools/Cli.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

static cl::OptionCategory Category("deepum-inspect options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<profile or plan>"), cl::Required,
                                  cl::cat(Category));
static cl::opt<bool> Json("json", cl::desc("Print the summary as JSON (keys in the README)"),
                          cl::cat(Category));
static cl::opt<std::string> Perfetto("perfetto", cl::desc("Write a Perfetto/Chrome-trace timeline"),
                                     cl::value_desc("OUT.json"), cl::cat(Category));
static cl::opt<std::string> Dump("dump", cl::desc("Print the whole file as 'json' or 'text'"),
                                 cl::value_desc("json|text"), cl::cat(Category));
static cl::opt<std::string> Convert("convert",
                                    cl::desc("Rewrite the file (encoding from the name: .pb, "
                                             ".json, .txtpb; .gz compresses)"),
                                    cl::value_desc("OUT"), cl::cat(Category));

static cl::opt<bool> DropMigrations(
    "drop-migrations",
    cl::desc("With --convert, a profile: leave out the raw migration and UM-event records (the "
             "planner and simulator do not read them)"),
    cl::cat(Category));

static cl::opt<bool> AccessSourcesOpt(
    "access-sources",
    cl::desc("A profile: print its kernels' access-set bytes by source (named by launch "
             "arguments, recorded faults, both, indirect) per kernel class, as a table"),
    cl::cat(Category));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  deepum::tools::parseCommandLine(argc, argv, "summarise a deepum profile or plan\n");
  deepum::tools::InspectOptions Opts{Input,   Json,           Perfetto,        Dump,
                                     Convert, DropMigrations, AccessSourcesOpt};
  ExitOnError ExitOnErr("deepum-inspect: ");
  ExitOnErr(deepum::tools::runInspect(Opts, outs()));
  return 0;
}
