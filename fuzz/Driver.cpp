//===- Driver.cpp - A plain main for the fuzz targets without libFuzzer -----===//
//
// Builds without libFuzzer (GCC, or Clang with DEEPUM_FUZZ_ENGINE=driver)
// link each target with this file, so every compiler runs the targets over
// their corpora, and a little beyond:
//
//   fuzz_X [options] FILE_OR_DIR...
//
// runs every file given (a directory: its files, sorted), then, with -runs=N
// and/or -max_total_time=S, that many more inputs (or for that long) made by
// mutating the corpus: bit flips, interesting bytes and varints (protobuf
// lengths and tags), byte inserts, deletes, copies and splices of two
// inputs. The mutator is seeded by -seed=N (default 1), so a run repeats
// exactly. It has no coverage feedback: it explores near the seeds only.
//
// The options are libFuzzer's spelling, so scripts pass the same flags to
// both: -timeout=S (default 1) reports inputs slower than that, and
// -rss_limit_mb=M reports when the peak resident size passes M; -artifact_prefix=P
// says where crash-*, slow-* inputs are written. Unknown -options are ignored.
// A crash (abort, segfault) writes the input to <prefix>crash-<hash> first.
// The last lines are libFuzzer's -print_final_stats lines.
//
//===----------------------------------------------------------------------===//
#include "deepum/base/Hash.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *Argc, char ***Argv);

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

struct Options {
  uint64_t Runs = 0;
  double MaxTotalTime = 0;
  uint64_t Seed = 1;
  double Timeout = 1;
  uint64_t RssLimitMb = 2048;
  size_t MaxLen = 64 << 10;
  std::string ArtifactPrefix;
  std::vector<std::string> Inputs;
};

// The input being run, for the crash handler (which may only use
// async-signal-safe calls: the name is prepared before each run).
const Bytes *Current = nullptr;
char CrashPath[4096];

std::string artifactName(const Options &O, const char *Kind, const Bytes &B) {
  char Hash[17];
  std::snprintf(Hash, sizeof Hash, "%016llx",
                static_cast<unsigned long long>(deepum::base::fnv1aBytes(B.data(), B.size())));
  return O.ArtifactPrefix + Kind + "-" + Hash;
}

void writeFile(const std::string &Path, const Bytes &B) {
  std::ofstream Out(Path, std::ios::binary);
  Out.write(reinterpret_cast<const char *>(B.data()), static_cast<std::streamsize>(B.size()));
}

extern "C" void onCrash(int Sig) {
  if (Current) {
    int Fd = ::open(CrashPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (Fd >= 0) {
      size_t Done = 0;
      while (Done < Current->size()) {
        ssize_t N = ::write(Fd, Current->data() + Done, Current->size() - Done);
        if (N <= 0)
          break;
        Done += static_cast<size_t>(N);
      }
      ::close(Fd);
      static const char Msg[] = "driver: crashing input written to ";
      (void)!::write(2, Msg, sizeof Msg - 1);
      (void)!::write(2, CrashPath, std::strlen(CrashPath));
      (void)!::write(2, "\n", 1);
    }
  }
  std::signal(Sig, SIG_DFL);
  std::raise(Sig);
}

bool parseFlag(const std::string &Arg, const char *Name, std::string &Value) {
  std::string Prefix = std::string("-") + Name + "=";
  if (Arg.rfind(Prefix, 0) != 0)
    return false;
  Value = Arg.substr(Prefix.size());
  return true;
}

Options parseOptions(int Argc, char **Argv) {
  Options O;
  for (int I = 1; I < Argc; ++I) {
    std::string Arg = Argv[I], V;
    if (parseFlag(Arg, "runs", V))
      O.Runs = std::strtoull(V.c_str(), nullptr, 10);
    else if (parseFlag(Arg, "max_total_time", V))
      O.MaxTotalTime = std::strtod(V.c_str(), nullptr);
    else if (parseFlag(Arg, "seed", V))
      O.Seed = std::strtoull(V.c_str(), nullptr, 10);
    else if (parseFlag(Arg, "timeout", V))
      O.Timeout = std::strtod(V.c_str(), nullptr);
    else if (parseFlag(Arg, "rss_limit_mb", V))
      O.RssLimitMb = std::strtoull(V.c_str(), nullptr, 10);
    else if (parseFlag(Arg, "max_len", V))
      O.MaxLen = std::strtoull(V.c_str(), nullptr, 10);
    else if (parseFlag(Arg, "artifact_prefix", V))
      O.ArtifactPrefix = V;
    else if (Arg.size() > 1 && Arg[0] == '-')
      std::fprintf(stderr, "driver: ignoring %s\n", Arg.c_str());
    else
      O.Inputs.push_back(Arg);
  }
  return O;
}

std::vector<std::string> inputFiles(const std::vector<std::string> &Args) {
  std::vector<std::string> Files;
  for (const std::string &A : Args) {
    std::error_code EC;
    if (fs::is_directory(A, EC)) {
      std::vector<std::string> InDir;
      for (const fs::directory_entry &E : fs::directory_iterator(A, EC))
        if (E.is_regular_file(EC))
          InDir.push_back(E.path().string());
      std::sort(InDir.begin(), InDir.end());
      Files.insert(Files.end(), InDir.begin(), InDir.end());
    } else {
      Files.push_back(A);
    }
  }
  return Files;
}

bool readFile(const std::string &Path, Bytes &Out) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return false;
  Out.assign(std::istreambuf_iterator<char>(In), std::istreambuf_iterator<char>());
  return true;
}

/// xorshift64*: small, fast, and the same sequence on every platform.
struct Rng {
  uint64_t S;
  explicit Rng(uint64_t Seed) : S(Seed * 0x9e3779b97f4a7c15ULL + 1) {}
  uint64_t next() {
    S ^= S >> 12;
    S ^= S << 25;
    S ^= S >> 27;
    return S * 0x2545f4914f6cdd1dULL;
  }
  /// Uniform in [0, N); N > 0.
  size_t below(size_t N) { return static_cast<size_t>(next() % N); }
};

/// Bytes that often matter to a protobuf reader: tag and length boundaries,
/// wire-type bits, signs.
constexpr uint8_t InterestingBytes[] = {0x00, 0x01, 0x02, 0x07, 0x08, 0x0a, 0x10, 0x12,
                                        0x1a, 0x7f, 0x80, 0xff, 0xfe, 0x0f, 0x3f, 0x40};

void appendVarint(Bytes &Out, uint64_t V) {
  while (V >= 0x80) {
    Out.push_back(static_cast<uint8_t>(V | 0x80));
    V >>= 7;
  }
  Out.push_back(static_cast<uint8_t>(V));
}

/// One random edit of `B`; `Other` is another corpus input for splices.
void mutateOnce(Bytes &B, const Bytes &Other, Rng &R, size_t MaxLen) {
  switch (R.below(B.empty() ? 2 : 9)) {
  case 0: { // insert random or interesting bytes
    size_t N = 1 + R.below(4);
    size_t At = R.below(B.size() + 1);
    Bytes Ins;
    for (size_t I = 0; I < N; ++I)
      Ins.push_back(R.below(2) ? InterestingBytes[R.below(sizeof InterestingBytes)]
                               : static_cast<uint8_t>(R.next()));
    B.insert(B.begin() + static_cast<ptrdiff_t>(At), Ins.begin(), Ins.end());
    break;
  }
  case 1: { // insert a varint: a length or tag at a boundary, or huge
    static constexpr uint64_t Values[] = {0,          1,           0x7f,       0x80,
                                          0x3fff,     0x4000,      0xffffffff, 0x100000000ULL,
                                          1ULL << 31, ~uint64_t{0}, 1ULL << 62, 1ULL << 21};
    Bytes Ins;
    appendVarint(Ins, Values[R.below(std::size(Values))]);
    size_t At = R.below(B.size() + 1);
    B.insert(B.begin() + static_cast<ptrdiff_t>(At), Ins.begin(), Ins.end());
    break;
  }
  case 2: // flip one bit
    B[R.below(B.size())] ^= static_cast<uint8_t>(1u << R.below(8));
    break;
  case 3: // set one byte to an interesting value
    B[R.below(B.size())] = InterestingBytes[R.below(sizeof InterestingBytes)];
    break;
  case 4: // set one byte at random
    B[R.below(B.size())] = static_cast<uint8_t>(R.next());
    break;
  case 5: { // delete a range
    size_t At = R.below(B.size());
    size_t N = 1 + R.below(std::min<size_t>(B.size() - At, 16));
    B.erase(B.begin() + static_cast<ptrdiff_t>(At), B.begin() + static_cast<ptrdiff_t>(At + N));
    break;
  }
  case 6: { // copy a range of itself elsewhere (repeated fields, nested messages)
    size_t From = R.below(B.size());
    size_t N = 1 + R.below(std::min<size_t>(B.size() - From, 64));
    Bytes Piece(B.begin() + static_cast<ptrdiff_t>(From),
                B.begin() + static_cast<ptrdiff_t>(From + N));
    size_t At = R.below(B.size() + 1);
    B.insert(B.begin() + static_cast<ptrdiff_t>(At), Piece.begin(), Piece.end());
    break;
  }
  case 7: { // splice: a prefix of this, a suffix of another input
    if (Other.empty())
      break;
    size_t Cut = R.below(B.size() + 1);
    size_t OtherCut = R.below(Other.size());
    B.resize(Cut);
    B.insert(B.end(), Other.begin() + static_cast<ptrdiff_t>(OtherCut), Other.end());
    break;
  }
  case 8: // truncate
    B.resize(R.below(B.size()));
    break;
  }
  if (B.size() > MaxLen)
    B.resize(MaxLen);
}

uint64_t peakRssMb() {
  rusage U{};
  getrusage(RUSAGE_SELF, &U);
  return static_cast<uint64_t>(U.ru_maxrss) / 1024;
}

struct Stats {
  uint64_t Runs = 0;
  uint64_t Slow = 0;
  double SlowestSeconds = 0;
  bool RssReported = false;
};

void runOne(const Options &O, const Bytes &B, const std::string &Name, Stats &S) {
  std::snprintf(CrashPath, sizeof CrashPath, "%s", artifactName(O, "crash", B).c_str());
  Current = &B;
  auto Start = Clock::now();
  // A copy in its own allocation, so that reads past the end are past the end.
  std::unique_ptr<uint8_t[]> Copy(new uint8_t[B.size() ? B.size() : 1]);
  if (!B.empty())
    std::memcpy(Copy.get(), B.data(), B.size());
  LLVMFuzzerTestOneInput(Copy.get(), B.size());
  double Seconds = std::chrono::duration<double>(Clock::now() - Start).count();
  Current = nullptr;
  ++S.Runs;
  S.SlowestSeconds = std::max(S.SlowestSeconds, Seconds);
  if (Seconds > O.Timeout) {
    ++S.Slow;
    std::string Path = artifactName(O, "slow", B);
    writeFile(Path, B);
    std::fprintf(stderr, "driver: slow input (%.2f s > %.2f s): %s, written to %s\n", Seconds,
                 O.Timeout, Name.c_str(), Path.c_str());
  }
  if (!S.RssReported && O.RssLimitMb && peakRssMb() > O.RssLimitMb) {
    S.RssReported = true;
    std::fprintf(stderr, "driver: peak RSS %llu MiB passed -rss_limit_mb=%llu after %s\n",
                 static_cast<unsigned long long>(peakRssMb()),
                 static_cast<unsigned long long>(O.RssLimitMb), Name.c_str());
  }
}

} // namespace

int main(int Argc, char **Argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&Argc, &Argv);
  Options O = parseOptions(Argc, Argv);
  for (int Sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    std::signal(Sig, onCrash);

  std::vector<Bytes> Corpus;
  Stats S;
  auto Start = Clock::now();
  for (const std::string &Path : inputFiles(O.Inputs)) {
    Bytes B;
    if (!readFile(Path, B)) {
      std::fprintf(stderr, "driver: cannot read %s: %s\n", Path.c_str(), std::strerror(errno));
      return 1;
    }
    runOne(O, B, Path, S);
    Corpus.push_back(std::move(B));
  }
  uint64_t FromCorpus = S.Runs;
  std::fprintf(stderr, "driver: %llu corpus inputs run\n",
               static_cast<unsigned long long>(FromCorpus));

  if ((O.Runs || O.MaxTotalTime > 0)) {
    if (Corpus.empty())
      Corpus.emplace_back();
    Rng R(O.Seed);
    auto MutateStart = Clock::now();
    for (uint64_t I = 0; !O.Runs || I < O.Runs; ++I) {
      if (O.MaxTotalTime > 0 && (I & 15) == 0 &&
          std::chrono::duration<double>(Clock::now() - MutateStart).count() > O.MaxTotalTime)
        break;
      Bytes B = Corpus[R.below(Corpus.size())];
      const Bytes &Other = Corpus[R.below(Corpus.size())];
      for (size_t N = 1 + R.below(8); N > 0; --N)
        mutateOnce(B, Other, R, O.MaxLen);
      runOne(O, B, "mutant " + std::to_string(I), S);
    }
  }

  double Seconds = std::chrono::duration<double>(Clock::now() - Start).count();
  std::fprintf(stderr, "driver: %llu inputs (%llu from the corpus), %llu slower than %.2f s, "
                       "slowest %.3f s\n",
               static_cast<unsigned long long>(S.Runs), static_cast<unsigned long long>(FromCorpus),
               static_cast<unsigned long long>(S.Slow), O.Timeout, S.SlowestSeconds);
  std::fprintf(stderr, "stat::number_of_executed_units: %llu\n",
               static_cast<unsigned long long>(S.Runs));
  std::fprintf(stderr, "stat::average_exec_per_sec:     %llu\n",
               static_cast<unsigned long long>(Seconds > 0 ? static_cast<double>(S.Runs) / Seconds
                                                           : 0));
  std::fprintf(stderr, "stat::peak_rss_mb:              %llu\n",
               static_cast<unsigned long long>(peakRssMb()));
  return 0;
}
