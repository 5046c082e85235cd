//===- deepum-calibrate.cu - Measure a GPU's Unified Memory parameters ----===//
//
// Measures, with managed memory well inside the card's free memory, the
// parameters of deepum's UM model (base/include/deepum/base/DeviceModel.h) and
// writes them as a device file in the one device-model format, which
// `--device NAME --device-file FILE` lays over a built-in model in deepum-plan
// and deepum-sim:
//
//   link_bytes_per_second   cudaMemPrefetchAsync host->device, the slope of
//                           time over bytes on the large sizes (the plateau)
//   transfer_call_us        host time of one transfer call and of each range
//   transfer_range_us       after the first: least squares over 1..64 ranges
//   fault_batch_latency_us  a kernel first touching host-resident memory in
//   fault_block_service_us  three strided patterns, less the same kernel on
//                           resident memory and the bytes at the link rate
//
// Device-to-host, both directions at once and the write-back of dirty data
// are measured and reported beside the link rate, not written (the model has
// one rate per direction). docs/tools.md describes the method.
//
// Built by nvcc (CMake: tools/calibrate.cmake) without LLVM: options are
// parsed here, with the other tools' error style. Kernels have host twins
// (standin/include/deepum/standin/Twin.h) so that the program also runs on
// the CUDA stand-in, where registration is otherwise a no-op.
//
//===----------------------------------------------------------------------===//

#include "deepum/standin/Twin.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

// The project's version, given by CMake as a bare number (0.1.0).
#define DEEPUM_STRINGIFY(X) #X
#define DEEPUM_TEXT(X) DEEPUM_STRINGIFY(X)
#ifdef DEEPUM_VERSION
#define DEEPUM_VERSION_TEXT DEEPUM_TEXT(DEEPUM_VERSION)
#else
#define DEEPUM_VERSION_TEXT "unknown"
#endif

namespace {

constexpr const char *kTool = "deepum-calibrate";
constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
// The UM model's units (docs/simulator.md): 4 KiB fault entries, 64 KiB big
// pages, 2 MiB VA blocks; nvidia-uvm fetches 256 entries per fault batch
// (UVM_PERF_FAULT_BATCH_COUNT_DEFAULT).
constexpr uint64_t kEntryBytes = 4 * KiB, kPageBytes = 64 * KiB, kBlockBytes = 2 * MiB;
constexpr uint64_t kFaultBatchEntries = 256;
// Transfer sizes: 64 KiB .. 1 GiB in powers of 4.
constexpr uint64_t kSmallestTransfer = 64 * KiB, kLargestTransfer = 1 * GiB;
// Calls per timed run of the per-call measurement, so that one run is long
// enough for the clocks (cudaEvent resolution is about 0.5 us).
constexpr int kCallsPerRun = 16;
const int kRangeCounts[] = {1, 4, 16, 64};

struct Options {
  std::string Out;
  std::string Report;
  std::string Name;
  uint64_t MaxBytes = kLargestTransfer;
  int Repeats = 5;
  bool StreamClock = false; // --call-clock=stream
  bool Quiet = false;
};

// Exit statuses as every deepum tool's (docs/tools.md): 1 bad input or a
// failed measurement, 2 usage.
constexpr int kBadInput = 1, kUsageError = 2;

[[noreturn]] void exitWith(int Status, const char *Fmt, va_list Ap) {
  std::fprintf(stderr, "%s: ", kTool);
  std::vfprintf(stderr, Fmt, Ap);
  std::fputc('\n', stderr);
  std::exit(Status);
}

[[noreturn]] void fail(const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  exitWith(kBadInput, Fmt, Ap);
}

[[noreturn]] void usage(const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  exitWith(kUsageError, Fmt, Ap);
}

/// Progress lines as the other tools print them (tools/include/deepum/tools/
/// Progress.h): on a terminal, or with DEEPUM_PROGRESS=always; never with
/// --quiet or DEEPUM_PROGRESS=never.
bool ShowProgress = false;

void progress(const char *Fmt, ...) {
  if (!ShowProgress)
    return;
  std::fprintf(stderr, "%s: ", kTool);
  va_list Ap;
  va_start(Ap, Fmt);
  std::vfprintf(stderr, Fmt, Ap);
  va_end(Ap);
  std::fputc('\n', stderr);
}

void check(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    fail("%s: %s (%s)", What, cudaGetErrorString(E), cudaGetErrorName(E));
}

/// "64MiB", "1GiB", "65536": bytes; false when malformed.
bool parseBytes(const std::string &S, uint64_t &Out) {
  char *End = nullptr;
  errno = 0;
  const unsigned long long N = std::strtoull(S.c_str(), &End, 10);
  if (End == S.c_str() || errno != 0 || S[0] == '-')
    return false;
  const std::string Unit = End;
  uint64_t Scale = 0;
  if (Unit.empty() || Unit == "B")
    Scale = 1;
  else if (Unit == "KiB")
    Scale = KiB;
  else if (Unit == "MiB")
    Scale = MiB;
  else if (Unit == "GiB")
    Scale = GiB;
  else
    return false;
  if (N > UINT64_MAX / Scale)
    return false;
  Out = N * Scale;
  return true;
}

const char *kUsage =
    "USAGE: deepum-calibrate --out FILE [options]\n"
    "\n"
    "Measures this GPU's Unified Memory parameters and writes them as a device\n"
    "file for deepum-plan and deepum-sim (--device NAME --device-file FILE).\n"
    "\n"
    "OPTIONS:\n"
    "  --out=<FILE>          Device file to write (device-models.json's format)\n"
    "  --report=<FILE>       Markdown table of every measurement\n"
    "  --name=<NAME>         Model name in the file (default: the GPU's name,\n"
    "                        lower-cased, spaces as '-'); name a built-in model\n"
    "                        to lay the measured fields over it\n"
    "  --max-bytes=<SIZE>    Largest transfer, e.g. 256MiB (default 1GiB; at\n"
    "                        least 64KiB); twice it must fit in half the free memory\n"
    "  --repeats=<N>         Repeats per measurement; the median is used (default 5)\n"
    "  --call-clock=<CLOCK>  host: per-call cost by std::chrono around the calls\n"
    "                        (default); stream: by cudaEvents around them on an\n"
    "                        idle stream\n"
    "  --quiet               No progress lines (otherwise on a terminal, or with\n"
    "                        DEEPUM_PROGRESS=always)\n"
    "  --version             Print the version\n";

Options parseArgs(int Argc, char **Argv) {
  Options O;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (A == "--help" || A == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (A == "--version") {
      std::printf("deepum %s\n", DEEPUM_VERSION_TEXT);
      std::exit(0);
    }
    if (A == "--quiet") {
      O.Quiet = true;
      continue;
    }
    if (A.rfind("--", 0) != 0)
      usage("unexpected argument '%s' (see --help)", A.c_str());
    std::string Key = A, Value;
    const size_t Eq = A.find('=');
    if (Eq != std::string::npos) {
      Key = A.substr(0, Eq);
      Value = A.substr(Eq + 1);
    } else {
      if (I + 1 >= Argc)
        usage("option '%s' needs a value (see --help)", A.c_str());
      Value = Argv[++I];
    }
    if (Key == "--out") {
      O.Out = Value;
    } else if (Key == "--report") {
      O.Report = Value;
    } else if (Key == "--name") {
      if (Value.empty())
        fail("--name must not be empty");
      O.Name = Value;
    } else if (Key == "--max-bytes") {
      if (!parseBytes(Value, O.MaxBytes))
        fail("--max-bytes: '%s' is not a size (e.g. 65536, 64MiB, 1GiB)", Value.c_str());
      if (O.MaxBytes < kSmallestTransfer)
        fail("--max-bytes: %s is under the smallest transfer, 64KiB", Value.c_str());
    } else if (Key == "--repeats") {
      char *End = nullptr;
      const long N = std::strtol(Value.c_str(), &End, 10);
      if (Value.empty() || *End != '\0' || N < 1 || N > 1000)
        fail("--repeats: '%s' is not a whole number from 1 to 1000", Value.c_str());
      O.Repeats = static_cast<int>(N);
    } else if (Key == "--call-clock") {
      if (Value != "host" && Value != "stream")
        fail("--call-clock: '%s' is neither host nor stream", Value.c_str());
      O.StreamClock = Value == "stream";
    } else {
      usage("unknown option '%s' (see --help)", Key.c_str());
    }
  }
  if (O.Out.empty())
    usage("--out FILE is required (see --help)");
  const char *Env = std::getenv("DEEPUM_PROGRESS");
  const std::string Mode = Env ? Env : "";
  ShowProgress = !O.Quiet && Mode != "never" && (Mode == "always" || isatty(STDERR_FILENO));
  return O;
}

// --- Kernels and their host twins -------------------------------------------

/// Reads one byte every `Stride` bytes, `N` of them; a sum that is never
/// zero-checked by the compiler goes to `Sink` (device memory).
__global__ void touchStrided(const unsigned char *Base, uint64_t Stride, uint64_t N,
                             unsigned *Sink) {
  const uint64_t I = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (I < N && Base[I * Stride] == 0xA5)
    atomicAdd(Sink, 1u);
}

void touchStridedTwin(deepum::standin::Launch &L, const unsigned char *Base, uint64_t Stride,
                      uint64_t N, unsigned *Sink) {
  for (uint64_t I = 0; I < N; ++I)
    if (!L.access(Base + I * Stride, 1, deepum::standin::Access::Read))
      return;
  if (!L.access(Sink, sizeof(unsigned), deepum::standin::Access::ReadWrite))
    return;
  for (uint64_t I = 0; I < N; ++I)
    if (Base[I * Stride] == 0xA5)
      ++*Sink;
}

/// Writes every word: makes the pages dirty on the GPU.
__global__ void fillWords(unsigned *P, uint64_t Words, unsigned Value) {
  for (uint64_t I = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; I < Words;
       I += uint64_t{gridDim.x} * blockDim.x)
    P[I] = Value;
}

void fillWordsTwin(deepum::standin::Launch &L, unsigned *P, uint64_t Words, unsigned Value) {
  if (!L.access(P, Words * sizeof(unsigned), deepum::standin::Access::Write))
    return;
  std::fill(P, P + Words, Value);
}

// --- Statistics ----------------------------------------------------------------

struct Sample {
  std::string What; // measurement, e.g. "prefetch host->device"
  std::string Size; // its size or ranges, as the report shows it
  std::string Unit; // of the values
  double Median = 0, Min = 0, Max = 0;
  int Repeats = 0;
};

Sample summarise(std::string What, std::string Size, std::string Unit, std::vector<double> V) {
  Sample S{std::move(What), std::move(Size), std::move(Unit)};
  std::sort(V.begin(), V.end());
  S.Repeats = static_cast<int>(V.size());
  S.Min = V.front();
  S.Max = V.back();
  const size_t H = V.size() / 2;
  S.Median = V.size() % 2 ? V[H] : (V[H - 1] + V[H]) / 2;
  return S;
}

/// Least squares y = A + B x; false when the x do not differ.
bool fitLine(const std::vector<double> &X, const std::vector<double> &Y, double &A, double &B) {
  const double N = static_cast<double>(X.size());
  double Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
  for (size_t I = 0; I < X.size(); ++I) {
    Sx += X[I];
    Sy += Y[I];
    Sxx += X[I] * X[I];
    Sxy += X[I] * Y[I];
  }
  const double D = N * Sxx - Sx * Sx;
  if (X.size() < 2 || std::fabs(D) < 1e-12 * std::max(1.0, N * Sxx))
    return false;
  B = (N * Sxy - Sx * Sy) / D;
  A = (Sy - B * Sx) / N;
  return true;
}

/// Least squares y = L u + S v without intercept; false when singular.
bool fitTwo(const std::vector<double> &U, const std::vector<double> &V,
            const std::vector<double> &Y, double &L, double &S) {
  double Uu = 0, Uv = 0, Vv = 0, Uy = 0, Vy = 0;
  for (size_t I = 0; I < U.size(); ++I) {
    Uu += U[I] * U[I];
    Uv += U[I] * V[I];
    Vv += V[I] * V[I];
    Uy += U[I] * Y[I];
    Vy += V[I] * Y[I];
  }
  const double D = Uu * Vv - Uv * Uv;
  if (std::fabs(D) < 1e-12 * std::max(1.0, Uu * Vv))
    return false;
  L = (Uy * Vv - Vy * Uv) / D;
  S = (Vy * Uu - Uy * Uv) / D;
  return true;
}

std::string sizeName(uint64_t Bytes) {
  char B[32];
  if (Bytes >= GiB && Bytes % GiB == 0)
    std::snprintf(B, sizeof(B), "%llu GiB", static_cast<unsigned long long>(Bytes / GiB));
  else if (Bytes >= MiB && Bytes % MiB == 0)
    std::snprintf(B, sizeof(B), "%llu MiB", static_cast<unsigned long long>(Bytes / MiB));
  else
    std::snprintf(B, sizeof(B), "%llu KiB", static_cast<unsigned long long>(Bytes / KiB));
  return B;
}

/// Bytes per second from bytes over microseconds; 0 when no time was seen.
double rate(double Bytes, double Us) { return Us > 0 ? Bytes / Us * 1e6 : 0; }

std::string fmt(const char *F, ...) {
  char B[512];
  va_list Ap;
  va_start(Ap, F);
  std::vsnprintf(B, sizeof(B), F, Ap);
  va_end(Ap);
  return B;
}

std::string rateText(double BytesPerSecond) {
  return BytesPerSecond > 0 ? fmt("%.4g B/s", BytesPerSecond)
                            : std::string("not observed (no copy time in the events)");
}

std::string rangesText(int N) { return std::to_string(N) + (N == 1 ? " range" : " ranges"); }

// --- The measurements ------------------------------------------------------------

class Calibration {
public:
  explicit Calibration(const Options &O) : Opt(O) {}
  void run();

private:
  // Helpers.
  float elapsedUs(cudaEvent_t A, cudaEvent_t B) {
    float Ms = 0;
    check(cudaEventElapsedTime(&Ms, A, B), "cudaEventElapsedTime");
    return Ms * 1e3f;
  }
  void toHost(void *P, uint64_t Bytes) {
    check(cudaMemPrefetchAsync(P, Bytes, HostLoc, 0, Stream), "cudaMemPrefetchAsync to the host");
  }
  void toDevice(void *P, uint64_t Bytes) {
    check(cudaMemPrefetchAsync(P, Bytes, DeviceLoc, 0, Stream),
          "cudaMemPrefetchAsync to the device");
  }
  void sync() { check(cudaStreamSynchronize(Stream), "cudaStreamSynchronize"); }
  /// The GPU writes Value into every word of [P, P+Bytes), in stream order.
  void fill(void *P, uint64_t Bytes, unsigned Value) {
    fillWords<<<1024, 256, 0, Stream>>>(static_cast<unsigned *>(P), Bytes / sizeof(unsigned),
                                        Value);
    check(cudaGetLastError(), "fillWords launch");
  }
  /// [P, P+Bytes) on the GPU and dirty there: prefetched, written, waited for.
  void writtenOnGpu(void *P, uint64_t Bytes, unsigned Value) {
    toDevice(P, Bytes);
    fill(P, Bytes, Value);
    sync();
  }
  /// Managed memory whose pages have contents and are host-resident: written
  /// by the GPU, then prefetched to the host. (Pages never written anywhere
  /// may be populated without a copy, so they would time no transfer.)
  void *managed(uint64_t Bytes) {
    void *P = nullptr;
    check(cudaMallocManaged(&P, Bytes), "cudaMallocManaged");
    fill(P, Bytes, 0x5A5A5A5Au);
    toHost(P, Bytes);
    sync();
    return P;
  }
  /// A kernel reading one byte per 2 MiB block of [P, P+Bytes): in stream
  /// order after a prefetch, it ends once the prefetched pages are there.
  void probe(void *P, uint64_t Bytes) {
    const uint64_t N = (Bytes + kBlockBytes - 1) / kBlockBytes;
    touchStrided<<<static_cast<unsigned>((N + 255) / 256), 256, 0, Stream>>>(
        static_cast<const unsigned char *>(P), kBlockBytes, N, Sink);
    check(cudaGetLastError(), "touchStrided launch");
  }

  void setup();
  void measureLink();
  void measureBothDirections();
  void measureWriteBack();
  void measureExplicitCopies();
  void measureDiscards();
  void measureCopyPath();
  void measureCalls();
  void measureFaults();
  void writeDeviceFile();
  void writeReport();

  const Options &Opt;
  cudaDeviceProp Prop{};
  int Driver = 0;
  std::string Date;
  std::string ModelName;
  cudaStream_t Stream = nullptr, Second = nullptr;
  unsigned *Sink = nullptr; // device memory the touch kernel writes
  cudaEvent_t E0 = nullptr, E1 = nullptr, E2 = nullptr;
  cudaMemLocation DeviceLoc{}, HostLoc{};
  std::vector<uint64_t> Sizes;
  std::vector<Sample> Samples;

  // Results (negative: not measured).
  double LinkHtoD = -1, LinkDtoH = -1, BothWays = -1, WriteBack = -1;
  // cudaMemcpyAsync between device and pinned host memory, each way, and from
  // GPU-resident managed pages to pinned memory (0: no time events could see).
  double CopyDtoH = -1, CopyHtoD = -1, ManagedToPinned = -1;
  // Per 2 MiB block of GPU-written data: discarding it, prefetching it back
  // to the GPU once discarded (a populate), a kernel's first write to it once
  // discarded beyond the same kernel's time on resident memory (-1: not
  // measured; 0: no time events could see).
  double DiscardBlockUs = -1, PopulateBlockUs = -1, DiscardedWriteBlockUs = -1;
  // The same first write, with the blocks' populate issued just before the
  // kernel on another stream (a late populate; report only).
  double InFlightWriteBlockUs = -1;
  // The copy path, per 2 MiB block of GPU-written managed memory (report
  // only): copied out to a pinned slot then discarded; populated then copied
  // back in from its slot; both at once on two streams (-1: not measured).
  double CopyOutBlockUs = -1, CopyInBlockUs = -1, CopyBothBlockUs = -1;
  // A copy back into resident managed blocks alone, and beside the populate
  // of as many other discarded blocks on a second stream: whether a populate
  // holds the host-to-device copy engine against a copy
  // (populates_hold_copy_engine).
  double CopyAloneBlockUs = -1, PopulateAloneBlockUs = -1, PopulateBesideCopyBlockUs = -1;
  /// How much of the populate held the copy, 0..1: both at once near the
  /// larger of the two alone, 0 (they overlap); near their sum, 1 (the
  /// populate holds the engine the copy needs). -1: not measured, or the
  /// populate takes no time to speak of here.
  double populateHeldCopy() const {
    if (PopulateBesideCopyBlockUs < 0)
      return -1;
    const double Sum = CopyAloneBlockUs + PopulateAloneBlockUs,
                 Max = std::max(CopyAloneBlockUs, PopulateAloneBlockUs);
    if (PopulateAloneBlockUs <= 0.05 * CopyAloneBlockUs || Sum <= Max)
      return -1;
    return std::clamp((PopulateBesideCopyBlockUs - Max) / (Sum - Max), 0.0, 1.0);
  }
  // A copy back into discarded blocks with no populate before it: what the
  // copy path's copy-in would cost without its populate (report only).
  double CopyIntoDiscardedBlockUs = -1;
  double CallUs = -1, RangeUs = -1, HostCallUs = -1, HostRangeUs = -1, StreamCallUs = -1,
         StreamRangeUs = -1;
  double BatchUs = -1, BlockUs = -1;
  std::string FaultNote;
  std::vector<std::string> Unsupported; // calls the driver refused as not supported
};

void Calibration::setup() {
  int Devices = 0;
  check(cudaGetDeviceCount(&Devices), "cudaGetDeviceCount");
  if (Devices < 1)
    fail("no CUDA device");
  check(cudaGetDeviceProperties(&Prop, 0), "cudaGetDeviceProperties");
  check(cudaDriverGetVersion(&Driver), "cudaDriverGetVersion");
  int Concurrent = 0;
  check(cudaDeviceGetAttribute(&Concurrent, cudaDevAttrConcurrentManagedAccess, 0),
        "cudaDeviceGetAttribute");
  if (!Concurrent)
    fail("%s lacks concurrentManagedAccess: managed memory cannot be prefetched to it", Prop.name);

  ModelName = Opt.Name;
  if (ModelName.empty())
    for (char C : std::string(Prop.name))
      ModelName += C == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(C)));

  for (uint64_t S = kSmallestTransfer; S <= std::min(Opt.MaxBytes, kLargestTransfer); S *= 4)
    Sizes.push_back(S);
  // At most two transfers of the largest size are allocated at once (both
  // directions), or a 16 MiB fault region per repeat.
  const uint64_t Need = std::max<uint64_t>(2 * Sizes.back(), Opt.Repeats * 16 * MiB);
  size_t Free = 0, Total = 0;
  check(cudaMemGetInfo(&Free, &Total), "cudaMemGetInfo");
  if (Need > Free / 2)
    fail("the measurements need %llu MiB of managed memory, more than half of the %llu MiB "
         "free on %s; lower --max-bytes or --repeats",
         static_cast<unsigned long long>(Need / MiB), static_cast<unsigned long long>(Free / MiB),
         Prop.name);
  progress(
      "%s, CUDA driver %d.%d, %llu MiB free of %llu MiB; transfers up to %s, %d repeats", Prop.name,
      Driver / 1000, Driver % 1000 / 10, static_cast<unsigned long long>(Free / MiB),
      static_cast<unsigned long long>(Total / MiB), sizeName(Sizes.back()).c_str(), Opt.Repeats);

  char Buf[32];
  const std::time_t Now = std::time(nullptr);
  std::strftime(Buf, sizeof(Buf), "%Y-%m-%d", std::gmtime(&Now));
  Date = Buf;

  DeviceLoc.type = cudaMemLocationTypeDevice;
  DeviceLoc.id = 0;
  HostLoc.type = cudaMemLocationTypeHost;
  HostLoc.id = 0;
  check(cudaStreamCreateWithFlags(&Stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&Second, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&E0), "cudaEventCreate");
  check(cudaEventCreate(&E1), "cudaEventCreate");
  check(cudaEventCreate(&E2), "cudaEventCreate");
  check(cudaMalloc(&Sink, sizeof(unsigned)), "cudaMalloc");
  deepum::standin::registerTwin(touchStrided, touchStridedTwin);
  deepum::standin::registerTwin(fillWords, fillWordsTwin);
}

/// Prefetch time over bytes, per direction: the slope over the sizes of at
/// least a sixteenth of the largest is the plateau rate (the fixed cost per
/// call is the intercept); with one such size, bytes over its time.
void Calibration::measureLink() {
  std::vector<double> X, YUp, YDown;
  for (uint64_t S : Sizes) {
    void *P = managed(S);
    std::vector<double> Up, Down;
    for (int R = 0; R < Opt.Repeats; ++R) {
      toHost(P, S);
      sync();
      check(cudaEventRecord(E0, Stream), "cudaEventRecord");
      toDevice(P, S);
      probe(P, S);
      check(cudaEventRecord(E1, Stream), "cudaEventRecord");
      toHost(P, S);
      check(cudaEventRecord(E2, Stream), "cudaEventRecord");
      sync();
      Up.push_back(elapsedUs(E0, E1));
      Down.push_back(elapsedUs(E1, E2));
    }
    check(cudaFree(P), "cudaFree");
    Samples.push_back(summarise("prefetch host->device (+ probe kernel)", sizeName(S), "us", Up));
    const double UpUs = Samples.back().Median;
    Samples.push_back(summarise("prefetch device->host", sizeName(S), "us", Down));
    const double DownUs = Samples.back().Median;
    progress("prefetch %s: host->device %.1f us (%.2f GB/s), device->host %.1f us (%.2f GB/s)",
             sizeName(S).c_str(), UpUs, S / UpUs * 1e-3, DownUs, S / DownUs * 1e-3);
    if (S * 16 >= Sizes.back()) {
      X.push_back(static_cast<double>(S));
      YUp.push_back(UpUs);
      YDown.push_back(DownUs);
    }
  }
  auto Rate = [&](const std::vector<double> &Y) {
    if (X.size() == 1)
      return rate(X.back(), Y.back());
    double A = 0, B = 0;
    return fitLine(X, Y, A, B) && B > 0 ? 1e6 / B : 0.0;
  };
  LinkHtoD = Rate(YUp);
  if (LinkHtoD <= 0)
    fail("host->device prefetches took no measurable time: no link rate");
  LinkDtoH = Rate(YDown);
}

/// Both directions at once on two streams, at the largest size: whether the
/// directions have copy engines of their own (a hint only).
void Calibration::measureBothDirections() {
  const uint64_t S = Sizes.back();
  void *Up = managed(S), *Down = managed(S);
  std::vector<double> T;
  for (int R = 0; R < Opt.Repeats; ++R) {
    toHost(Up, S);
    toDevice(Down, S);
    sync();
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(Second, E0, 0), "cudaStreamWaitEvent");
    toDevice(Up, S);
    probe(Up, S);
    check(cudaMemPrefetchAsync(Down, S, HostLoc, 0, Second), "cudaMemPrefetchAsync to the host");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    check(cudaEventRecord(E2, Second), "cudaEventRecord");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    T.push_back(std::max(elapsedUs(E0, E1), elapsedUs(E0, E2)));
  }
  check(cudaFree(Up), "cudaFree");
  check(cudaFree(Down), "cudaFree");
  Samples.push_back(summarise("prefetch both directions (two streams, + probe kernel)",
                              "2 x " + sizeName(S), "us", T));
  // Where device->host copies took no time events could see, the pair would
  // time only its host->device half: no figure.
  BothWays = LinkDtoH > 0 ? rate(2.0 * S, Samples.back().Median) : 0;
  progress("both directions at once, 2 x %s: %.2f GB/s in all", sizeName(S).c_str(),
           BothWays * 1e-9);
}

/// Pages a kernel wrote, prefetched to the host: the write-back rate of
/// dirty data, as an eviction copies it (within free memory: no
/// oversubscription is needed).
void Calibration::measureWriteBack() {
  const uint64_t S = Sizes.back();
  unsigned *P = static_cast<unsigned *>(managed(S));
  const uint64_t Words = S / sizeof(unsigned);
  std::vector<double> T;
  for (int R = 0; R < Opt.Repeats; ++R) {
    writtenOnGpu(P, S, static_cast<unsigned>(R));
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    toHost(P, S);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    sync();
    T.push_back(elapsedUs(E0, E1));
  }
  if (P[Words - 1] != static_cast<unsigned>(Opt.Repeats - 1))
    fail("the fill kernel's data did not come back to the host");
  check(cudaFree(P), "cudaFree");
  Samples.push_back(summarise("write-back of GPU-written pages", sizeName(S), "us", T));
  WriteBack = LinkDtoH > 0 ? rate(S, Samples.back().Median) : 0; // as BothWays
  progress("write-back of dirty pages, %s: %.2f GB/s", sizeName(S).c_str(), WriteBack * 1e-9);
}

/// Explicit copies, outside UVM's migration path, at the largest size:
/// cudaMemcpyAsync from device memory to pinned host memory and back, and
/// from GPU-resident managed pages (dirty, as a write-back finds them) to
/// pinned memory. Whether an eviction by copy would beat the device->host
/// prefetch rate (report only).
void Calibration::measureExplicitCopies() {
  const uint64_t S = Sizes.back();
  void *Dev = nullptr, *Pinned = nullptr;
  check(cudaMalloc(&Dev, S), "cudaMalloc");
  check(cudaMallocHost(&Pinned, S), "cudaMallocHost");
  unsigned *P = static_cast<unsigned *>(managed(S));
  const uint64_t Words = S / sizeof(unsigned);
  std::vector<double> Down, Up, FromManaged;
  for (int R = 0; R < Opt.Repeats; ++R) {
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    check(cudaMemcpyAsync(Pinned, Dev, S, cudaMemcpyDeviceToHost, Stream), "cudaMemcpyAsync");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    check(cudaMemcpyAsync(Dev, Pinned, S, cudaMemcpyHostToDevice, Stream), "cudaMemcpyAsync");
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    Down.push_back(elapsedUs(E0, E1));
    Up.push_back(elapsedUs(E1, E2));
    writtenOnGpu(P, S, static_cast<unsigned>(R) + 7u);
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    check(cudaMemcpyAsync(Pinned, P, S, cudaMemcpyDeviceToHost, Stream), "cudaMemcpyAsync");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    sync();
    FromManaged.push_back(elapsedUs(E0, E1));
    if (static_cast<unsigned *>(Pinned)[Words - 1] != static_cast<unsigned>(R) + 7u)
      fail("the copy from managed memory did not bring the fill kernel's data to the host");
  }
  check(cudaFree(P), "cudaFree");
  check(cudaFree(Dev), "cudaFree");
  check(cudaFreeHost(Pinned), "cudaFreeHost");
  Samples.push_back(summarise("cudaMemcpyAsync device->pinned host", sizeName(S), "us", Down));
  CopyDtoH = rate(S, Samples.back().Median);
  Samples.push_back(summarise("cudaMemcpyAsync pinned host->device", sizeName(S), "us", Up));
  CopyHtoD = rate(S, Samples.back().Median);
  Samples.push_back(
      summarise("cudaMemcpyAsync GPU-written managed->pinned host", sizeName(S), "us", FromManaged));
  ManagedToPinned = rate(S, Samples.back().Median);
  progress("explicit copies, %s: device->pinned %.2f GB/s, pinned->device %.2f GB/s, "
           "GPU-written managed->pinned %.2f GB/s",
           sizeName(S).c_str(), CopyDtoH * 1e-9, CopyHtoD * 1e-9, ManagedToPinned * 1e-9);
}

/// Discarded data, as a plan leaves a dead block: 64 blocks the GPU wrote
/// are discarded (one batch of one range per block), then prefetched back to
/// the GPU (a populate: nothing to copy) or first written by a kernel. Per
/// block: the discard, the populate, and the kernel's first write beyond its
/// time on resident memory.
void Calibration::measureDiscards() {
  constexpr int Blocks = 64;
  const uint64_t S = Blocks * kBlockBytes;
  unsigned *P = static_cast<unsigned *>(managed(S));
  std::vector<void *> Ptrs(Blocks);
  std::vector<size_t> Lens(Blocks, kBlockBytes);
  for (int I = 0; I < Blocks; ++I)
    Ptrs[I] = reinterpret_cast<char *>(P) + I * kBlockBytes;
  auto discard = [&] {
    return cudaMemDiscardBatchAsync(Ptrs.data(), Lens.data(), Blocks, 0, Stream);
  };
  // cudaMemDiscardAndPrefetchBatchAsync: one call that drops the contents and
  // places the pages (no copy): to the GPU (new contents in place), or to the
  // host (an eviction with nothing to write back), then back to the GPU.
  auto discardAndPrefetch = [&](const cudaMemLocation &To) {
    cudaMemLocation Loc = To;
    size_t LocIdx = 0;
    return cudaMemDiscardAndPrefetchBatchAsync(Ptrs.data(), Lens.data(), Blocks, &Loc, &LocIdx,
                                               1, 0, Stream);
  };
  std::vector<double> Discard, Populate, AfterPopulate, Write, Resident, InFlight, InPlace, ToHost,
      Back;
  for (int R = 0; R < Opt.Repeats; ++R) {
    writtenOnGpu(P, S, static_cast<unsigned>(R));
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    cudaError_t E = discard();
    if (E == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      progress("cudaMemDiscardBatchAsync: not supported here; no discard figures");
      Unsupported.push_back("cudaMemDiscardBatchAsync (discarded data)");
      check(cudaFree(P), "cudaFree");
      return;
    }
    check(E, "cudaMemDiscardBatchAsync");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    toDevice(P, S);
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    Discard.push_back(elapsedUs(E0, E1) / Blocks);
    Populate.push_back(elapsedUs(E1, E2) / Blocks);
    // The populate done, a kernel writes the blocks: resident, or not quite?
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    fill(P, S, static_cast<unsigned>(R) + 9u);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    sync();
    AfterPopulate.push_back(elapsedUs(E0, E1) / Blocks);
    writtenOnGpu(P, S, static_cast<unsigned>(R) + 1u);
    check(discard(), "cudaMemDiscardBatchAsync");
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    fill(P, S, static_cast<unsigned>(R) + 2u);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    fill(P, S, static_cast<unsigned>(R) + 3u);
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    Write.push_back(elapsedUs(E0, E1) / Blocks);
    Resident.push_back(elapsedUs(E1, E2) / Blocks);
    // A plan's late populate: the populate is issued on another stream just
    // before the kernel that writes the blocks, which does not wait for it.
    // Whether its arrival ends the kernel's faults, or the kernel pays them
    // all, is what this time says (docs/results/gpu.md, finding 4).
    writtenOnGpu(P, S, static_cast<unsigned>(R) + 5u);
    check(discard(), "cudaMemDiscardBatchAsync");
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(Second, E0, 0), "cudaStreamWaitEvent");
    check(cudaMemPrefetchAsync(P, S, DeviceLoc, 0, Second),
          "cudaMemPrefetchAsync to the device on a second stream");
    fill(P, S, static_cast<unsigned>(R) + 6u);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    check(cudaStreamSynchronize(Second), "cudaStreamSynchronize");
    sync();
    InFlight.push_back(elapsedUs(E0, E1) / Blocks);
    writtenOnGpu(P, S, static_cast<unsigned>(R) + 4u);
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    E = discardAndPrefetch(DeviceLoc);
    if (E == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      continue;
    }
    check(E, "cudaMemDiscardAndPrefetchBatchAsync to the device");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    check(discardAndPrefetch(HostLoc), "cudaMemDiscardAndPrefetchBatchAsync to the host");
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    InPlace.push_back(elapsedUs(E0, E1) / Blocks);
    ToHost.push_back(elapsedUs(E1, E2) / Blocks);
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    toDevice(P, S);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    sync();
    Back.push_back(elapsedUs(E0, E1) / Blocks);
  }
  check(cudaFree(P), "cudaFree");
  const std::string Size = std::to_string(Blocks) + " x 2 MiB";
  Samples.push_back(summarise("discard of GPU-written blocks, per block", Size, "us", Discard));
  DiscardBlockUs = Samples.back().Median;
  Samples.push_back(
      summarise("prefetch to the GPU of discarded blocks (populate), per block", Size, "us",
                Populate));
  PopulateBlockUs = Samples.back().Median;
  Samples.push_back(
      summarise("kernel's first write to discarded blocks, per block", Size, "us", Write));
  Samples.push_back(summarise("same kernel on resident blocks, per block", Size, "us", Resident));
  Samples.push_back(summarise("same kernel on discarded blocks once populated, per block", Size,
                              "us", AfterPopulate));
  const double ResidentUs = Samples[Samples.size() - 2].Median;
  DiscardedWriteBlockUs = std::max(0.0, Samples[Samples.size() - 3].Median - ResidentUs);
  Samples.push_back(summarise("kernel's first write to discarded blocks, their populate issued "
                              "just before on another stream, per block",
                              Size, "us", InFlight));
  InFlightWriteBlockUs = std::max(0.0, Samples.back().Median - ResidentUs);
  if (!InPlace.empty()) {
    Samples.push_back(summarise("discard-and-prefetch to the GPU of GPU-written blocks, per block",
                                Size, "us", InPlace));
    Samples.push_back(summarise("discard-and-prefetch to the host of GPU-resident blocks, per "
                                "block",
                                Size, "us", ToHost));
    Samples.push_back(summarise("prefetch to the GPU of those blocks (a populate), per block",
                                Size, "us", Back));
  }
  progress("discarded data, per 2 MiB block: discard %.2f us, populate %.2f us, a kernel's first "
           "write %.2f us beyond resident (%.2f us with the populate in flight)",
           DiscardBlockUs, PopulateBlockUs, DiscardedWriteBlockUs, InFlightWriteBlockUs);
}

/// The copy path a plan would take out of the GPU and back (report only):
/// 64 blocks of GPU-written managed memory copied to pinned slots
/// (cudaMemcpyAsync, one per block) and discarded (one batch); then populated
/// (a prefetch of the discarded blocks) and copied back from their slots;
/// then 64 blocks out on one stream while 64 others come in on a second, to
/// see whether the directions overlap. The data that comes back must be the
/// data that went out. Per block.
void Calibration::measureCopyPath() {
  constexpr int Blocks = 64;
  const uint64_t S = Blocks * kBlockBytes;
  unsigned *Out = static_cast<unsigned *>(managed(S));
  unsigned *In = static_cast<unsigned *>(managed(S));
  void *Slots = nullptr, *InSlots = nullptr;
  check(cudaMallocHost(&Slots, S), "cudaMallocHost");
  check(cudaMallocHost(&InSlots, S), "cudaMallocHost");
  std::vector<void *> Ptrs(Blocks), InPtrs(Blocks);
  std::vector<size_t> Lens(Blocks, kBlockBytes);
  for (int I = 0; I < Blocks; ++I) {
    Ptrs[I] = reinterpret_cast<char *>(Out) + I * kBlockBytes;
    InPtrs[I] = reinterpret_cast<char *>(In) + I * kBlockBytes;
  }
  auto copyOut = [&](unsigned *P, void *Slot, cudaStream_t St) {
    for (int I = 0; I < Blocks; ++I)
      check(cudaMemcpyAsync(static_cast<char *>(Slot) + I * kBlockBytes,
                            reinterpret_cast<char *>(P) + I * kBlockBytes, kBlockBytes,
                            cudaMemcpyDeviceToHost, St),
            "cudaMemcpyAsync of a block to its pinned slot");
  };
  auto copyIn = [&](unsigned *P, void *Slot, cudaStream_t St) {
    for (int I = 0; I < Blocks; ++I)
      check(cudaMemcpyAsync(reinterpret_cast<char *>(P) + I * kBlockBytes,
                            static_cast<char *>(Slot) + I * kBlockBytes, kBlockBytes,
                            cudaMemcpyHostToDevice, St),
            "cudaMemcpyAsync of a block from its pinned slot");
  };
  // Work issued on Stream and on Second at once, from one start event to
  // both ends: microseconds.
  auto bothAtOnce = [&](auto OnStream, auto OnSecond) {
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(Second, E0, 0), "cudaStreamWaitEvent");
    OnStream();
    OnSecond();
    check(cudaEventRecord(E1, Second), "cudaEventRecord");
    check(cudaStreamWaitEvent(Stream, E1, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    return elapsedUs(E0, E2);
  };
  // The data is back on the host and holds `Want` at both ends, or the run fails.
  const uint64_t Words = S / sizeof(unsigned);
  auto expectHolds = [&](unsigned *P, unsigned Want, const char *Else) {
    toHost(P, S);
    sync();
    if (P[0] != Want || P[Words - 1] != Want)
      fail("%s", Else);
  };
  std::vector<double> OutUs, InUs, BothUs, CopyAloneUs, PopulateAloneUs, BesideUs, UnpopulatedUs;
  for (int R = 0; R < Opt.Repeats; ++R) {
    const unsigned Mark = static_cast<unsigned>(R) + 11u;
    writtenOnGpu(Out, S, Mark);
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    copyOut(Out, Slots, Stream);
    const cudaError_t E = cudaMemDiscardBatchAsync(Ptrs.data(), Lens.data(), Blocks, 0, Stream);
    if (E == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      progress("cudaMemDiscardBatchAsync: not supported here; no copy-path figures");
      Unsupported.push_back("cudaMemDiscardBatchAsync (the copy path)");
      break;
    }
    check(E, "cudaMemDiscardBatchAsync");
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    toDevice(Out, S); // the populate
    copyIn(Out, Slots, Stream);
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    OutUs.push_back(elapsedUs(E0, E1) / Blocks);
    InUs.push_back(elapsedUs(E1, E2) / Blocks);
    expectHolds(Out, Mark, "a block copied out and back in did not hold the data it held before");
    // Both directions at once: Out's blocks leave on Stream while In's
    // blocks (discarded, their data in InSlots) come back on Second.
    writtenOnGpu(Out, S, Mark + 1u);
    writtenOnGpu(In, S, Mark + 2u);
    copyOut(In, InSlots, Stream);
    check(cudaMemDiscardBatchAsync(InPtrs.data(), Lens.data(), Blocks, 0, Stream),
          "cudaMemDiscardBatchAsync");
    sync();
    BothUs.push_back(
        bothAtOnce(
            [&] {
              copyOut(Out, Slots, Stream);
              check(cudaMemDiscardBatchAsync(Ptrs.data(), Lens.data(), Blocks, 0, Stream),
                    "cudaMemDiscardBatchAsync");
            },
            [&] {
              check(cudaMemPrefetchAsync(In, S, DeviceLoc, 0, Second),
                    "cudaMemPrefetchAsync (populate)");
              copyIn(In, InSlots, Second);
            }) /
        Blocks);
    expectHolds(In, Mark + 2u,
                "a block copied back in beside another copy out did not hold its data");
    // A populate beside a copy: In's blocks resident (the copy writes them in
    // place), Out's GPU-written and discarded. The copy alone, the populate
    // alone, then both at once on two streams.
    writtenOnGpu(In, S, Mark + 3u);
    auto discardOut = [&] {
      writtenOnGpu(Out, S, Mark + 4u);
      check(cudaMemDiscardBatchAsync(Ptrs.data(), Lens.data(), Blocks, 0, Stream),
            "cudaMemDiscardBatchAsync");
      sync();
    };
    discardOut();
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    copyIn(In, InSlots, Stream);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    check(cudaMemPrefetchAsync(Out, S, DeviceLoc, 0, Stream), "cudaMemPrefetchAsync (populate)");
    check(cudaEventRecord(E2, Stream), "cudaEventRecord");
    sync();
    CopyAloneUs.push_back(elapsedUs(E0, E1) / Blocks);
    PopulateAloneUs.push_back(elapsedUs(E1, E2) / Blocks);
    writtenOnGpu(In, S, Mark + 3u);
    discardOut();
    BesideUs.push_back(bothAtOnce([&] { copyIn(In, InSlots, Stream); },
                                  [&] {
                                    check(cudaMemPrefetchAsync(Out, S, DeviceLoc, 0, Second),
                                          "cudaMemPrefetchAsync (populate)");
                                  }) /
                       Blocks);
    expectHolds(In, Mark + 2u,
                "a block copied back in beside a populate did not hold its slot's data");
    // A copy back into discarded blocks, no populate first.
    writtenOnGpu(In, S, Mark + 3u);
    check(cudaMemDiscardBatchAsync(InPtrs.data(), Lens.data(), Blocks, 0, Stream),
          "cudaMemDiscardBatchAsync");
    sync();
    check(cudaEventRecord(E0, Stream), "cudaEventRecord");
    copyIn(In, InSlots, Stream);
    check(cudaEventRecord(E1, Stream), "cudaEventRecord");
    sync();
    UnpopulatedUs.push_back(elapsedUs(E0, E1) / Blocks);
    expectHolds(In, Mark + 2u,
                "a block copied back into discarded pages did not hold its slot's data");
  }
  check(cudaFree(Out), "cudaFree");
  check(cudaFree(In), "cudaFree");
  check(cudaFreeHost(Slots), "cudaFreeHost");
  check(cudaFreeHost(InSlots), "cudaFreeHost");
  if (OutUs.empty() || BothUs.size() != OutUs.size())
    return;
  const std::string Size = std::to_string(Blocks) + " x 2 MiB";
  Samples.push_back(summarise("copy path out: cudaMemcpyAsync to a pinned slot, then discard, per "
                              "block",
                              Size, "us", OutUs));
  CopyOutBlockUs = Samples.back().Median;
  Samples.push_back(summarise("copy path in: populate, then cudaMemcpyAsync from the slot, per "
                              "block",
                              Size, "us", InUs));
  CopyInBlockUs = Samples.back().Median;
  Samples.push_back(summarise("copy path both ways at once (two streams), per block each way",
                              Size, "us", BothUs));
  CopyBothBlockUs = Samples.back().Median;
  progress("copy path, per 2 MiB block: out (copy + discard) %.2f us, in (populate + copy) %.2f "
           "us, both at once %.2f us",
           CopyOutBlockUs, CopyInBlockUs, CopyBothBlockUs);
  if (BesideUs.size() != OutUs.size())
    return;
  Samples.push_back(summarise("copy back into resident managed blocks alone, per block", Size,
                              "us", CopyAloneUs));
  CopyAloneBlockUs = Samples.back().Median;
  Samples.push_back(
      summarise("populate of discarded blocks alone, per block", Size, "us", PopulateAloneUs));
  PopulateAloneBlockUs = Samples.back().Median;
  Samples.push_back(summarise("copy back beside a populate of as many blocks (two streams), per "
                              "block",
                              Size, "us", BesideUs));
  PopulateBesideCopyBlockUs = Samples.back().Median;
  Samples.push_back(summarise("copy back into discarded blocks, no populate, per block", Size,
                              "us", UnpopulatedUs));
  CopyIntoDiscardedBlockUs = Samples.back().Median;
  progress("a populate beside a copy back, per 2 MiB block: copy alone %.2f us, populate alone "
           "%.2f us, both at once %.2f us",
           CopyAloneBlockUs, PopulateAloneBlockUs, PopulateBesideCopyBlockUs);
}

/// Per-call cost against ranges per call, on ranges already where the call
/// sends them (prefetches move nothing), so only the call is timed. The host
/// clock times the call's own cost (std::chrono around kCallsPerRun calls);
/// the stream clock times the gap the calls leave between two events on an
/// idle stream. Fit: us = transfer_call_us + (ranges - 1) x transfer_range_us
/// over the single prefetch and the batched prefetches and discards.
void Calibration::measureCalls() {
  // 64 ranges of 64 KiB, 128 KiB apart.
  const uint64_t RangeBytes = 64 * KiB, Spacing = 128 * KiB, Bytes = 64 * Spacing;
  char *Buf = static_cast<char *>(managed(Bytes));
  std::vector<void *> Ptrs(64);
  std::vector<size_t> Lens(64, RangeBytes);
  for (int I = 0; I < 64; ++I)
    Ptrs[I] = Buf + I * Spacing;
  size_t LocIdx = 0;
  cudaMemLocation Loc = DeviceLoc;

  std::vector<double> Xh, Yh, Ys;
  // A call the driver does not support (a batch call before CUDA 12.8) is
  // left out of the fit and said so; any other error ends the run.
  auto Time = [&](const std::string &What, int Ranges, bool Fit, auto &&Call) {
    std::vector<double> Host, Dev;
    for (int R = 0; R < Opt.Repeats; ++R) {
      sync();
      check(cudaEventRecord(E0, Stream), "cudaEventRecord");
      cudaError_t E = cudaSuccess;
      const auto T0 = std::chrono::steady_clock::now();
      for (int C = 0; C < kCallsPerRun && E == cudaSuccess; ++C)
        E = Call();
      const auto T1 = std::chrono::steady_clock::now();
      if (E == cudaErrorNotSupported) {
        (void)cudaGetLastError();
        progress("%s: not supported here, left out", What.c_str());
        Unsupported.push_back(What);
        return;
      }
      check(E, What.c_str());
      check(cudaEventRecord(E1, Stream), "cudaEventRecord");
      sync();
      Host.push_back(std::chrono::duration<double, std::micro>(T1 - T0).count() / kCallsPerRun);
      Dev.push_back(elapsedUs(E0, E1) / kCallsPerRun);
    }
    Samples.push_back(summarise(What + ", host clock", rangesText(Ranges), "us per call", Host));
    const double H = Samples.back().Median;
    Samples.push_back(summarise(What + ", stream clock", rangesText(Ranges), "us per call", Dev));
    const double D = Samples.back().Median;
    progress("%s, %d ranges: %.2f us per call (host clock), %.2f us (stream clock)", What.c_str(),
             Ranges, H, D);
    if (Fit) {
      Xh.push_back(Ranges - 1);
      Yh.push_back(H);
      Ys.push_back(D);
    }
  };

  toDevice(Buf, Bytes);
  sync();
  Time("cudaMemPrefetchAsync", 1, true,
       [&] { return cudaMemPrefetchAsync(Ptrs[0], RangeBytes, DeviceLoc, 0, Stream); });
  for (int N : kRangeCounts)
    Time("cudaMemPrefetchBatchAsync", N, true, [&] {
      return cudaMemPrefetchBatchAsync(Ptrs.data(), Lens.data(), N, &Loc, &LocIdx, 1, 0, Stream);
    });
  for (int N : kRangeCounts)
    Time("cudaMemDiscardBatchAsync", N, true,
         [&] { return cudaMemDiscardBatchAsync(Ptrs.data(), Lens.data(), N, 0, Stream); });
  // Advice has no batch call and no field of its own: reported only.
  for (int N : kRangeCounts)
    Time("cudaMemAdvise (one call per range)", N, false, [&] {
      cudaError_t E = cudaSuccess;
      for (int I = 0; I < N && E == cudaSuccess; ++I)
        E = cudaMemAdvise(Ptrs[I], RangeBytes, cudaMemAdviseSetAccessedBy, DeviceLoc);
      return E;
    });
  check(cudaFree(Buf), "cudaFree");

  double A = 0, B = 0;
  if (fitLine(Xh, Yh, A, B)) {
    HostCallUs = A;
    HostRangeUs = B;
  }
  if (fitLine(Xh, Ys, A, B)) {
    StreamCallUs = A;
    StreamRangeUs = B;
  }
  CallUs = Opt.StreamClock ? StreamCallUs : HostCallUs;
  RangeUs = Opt.StreamClock ? StreamRangeUs : HostRangeUs;
  progress("per call: %.2f us + %.3f us per range after the first (host clock); "
           "%.2f us + %.3f us (stream clock); writing the %s clock's",
           HostCallUs, HostRangeUs, StreamCallUs, StreamRangeUs,
           Opt.StreamClock ? "stream" : "host");
}

/// One strided first-touch pattern and what the UM model expects of it: the
/// GPU writes one fault entry per 4 KiB page touched, the driver takes
/// kFaultBatchEntries entries per batch (in address order here) and services
/// each batch's 2 MiB blocks one by one, then migrates the 64 KiB pages.
struct FaultPattern {
  const char *Name;
  uint64_t Stride, Touches;
  uint64_t Batches = 0, BlockVisits = 0, Bytes = 0;
  void count() {
    uint64_t Entries = Touches; // strides of at least 4 KiB: one entry each
    if (Stride < kEntryBytes)
      Entries = (Touches * Stride + kEntryBytes - 1) / kEntryBytes;
    Batches = (Entries + kFaultBatchEntries - 1) / kFaultBatchEntries;
    BlockVisits = 0;
    for (uint64_t B = 0; B < Batches; ++B) {
      const uint64_t First = B * kFaultBatchEntries;
      const uint64_t Last = std::min(Entries, First + kFaultBatchEntries) - 1;
      const uint64_t EntryStride = std::max(Stride, kEntryBytes);
      BlockVisits += (Last * EntryStride) / kBlockBytes - (First * EntryStride) / kBlockBytes + 1;
    }
    const uint64_t PageStride = std::max(Stride, kPageBytes);
    Bytes = ((Touches - 1) * Stride / PageStride + 1) * kPageBytes;
  }
};

/// Fault cost: each pattern's first-touch kernel time, less the same kernel
/// on resident memory and less its bytes at the host->device link rate,
/// fitted to Batches x fault_batch_latency_us + BlockVisits x
/// fault_block_service_us. The patterns are small enough that a batch never
/// holds more than 256 entries even when every touched 64 KiB page raises 16
/// (a dense access), so they batch alike whatever the GPU reports per page.
void Calibration::measureFaults() {
  FaultPattern Patterns[] = {
      {"4 KiB stride, 8 MiB", 4 * KiB, 2048}, // 8 batches, each in one block
      {"64 KiB stride, 1 MiB", 64 * KiB, 16}, // 1 batch, 1 block
      {"2 MiB stride, 16 MiB", 2 * MiB, 8},   // 1 batch, 8 blocks
  };
  std::vector<double> U, V, Y;
  for (FaultPattern &P : Patterns) {
    P.count();
    const uint64_t Bytes = (P.Touches - 1) * P.Stride + 1;
    const uint64_t Region = (Bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
    // A region per repeat, all made host-resident first: a block migrated
    // back soon after its eviction counts as thrashing, and the driver
    // throttles a block after three such events (uvm_perf_thrashing.c).
    std::vector<unsigned char *> Regions;
    for (int R = 0; R < Opt.Repeats; ++R)
      Regions.push_back(static_cast<unsigned char *>(managed(Region)));
    const unsigned Grid = static_cast<unsigned>((P.Touches + 255) / 256);
    auto Launch = [&](unsigned char *Base) {
      touchStrided<<<Grid, 256, 0, Stream>>>(Base, P.Stride, P.Touches, Sink);
      check(cudaGetLastError(), "touchStrided launch");
    };
    std::vector<double> Cold, Warm;
    for (int R = 0; R < Opt.Repeats; ++R) {
      check(cudaEventRecord(E0, Stream), "cudaEventRecord");
      Launch(Regions[R]);
      check(cudaEventRecord(E1, Stream), "cudaEventRecord");
      sync();
      Cold.push_back(elapsedUs(E0, E1));
    }
    unsigned char *Base = Regions[0];
    for (int R = 1; R < Opt.Repeats; ++R)
      check(cudaFree(Regions[R]), "cudaFree");
    toDevice(Base, Region);
    sync();
    for (int R = 0; R < Opt.Repeats; ++R) {
      check(cudaEventRecord(E0, Stream), "cudaEventRecord");
      Launch(Base);
      check(cudaEventRecord(E1, Stream), "cudaEventRecord");
      sync();
      Warm.push_back(elapsedUs(E0, E1));
    }
    check(cudaFree(Base), "cudaFree");
    Samples.push_back(summarise(std::string("first touch, host-resident: ") + P.Name,
                                std::to_string(P.Touches) + " touches", "us", Cold));
    const double C = Samples.back().Median;
    Samples.push_back(summarise(std::string("same kernel, resident: ") + P.Name,
                                std::to_string(P.Touches) + " touches", "us", Warm));
    const double W = Samples.back().Median;
    const double CopyUs = P.Bytes / LinkHtoD * 1e6;
    const double Service = C - W - CopyUs;
    progress("faults, %s: %.1f us first touch, %.1f us resident, %.1f us copying %s: "
             "%.1f us for %llu batches over %llu block visits",
             P.Name, C, W, CopyUs, sizeName(P.Bytes).c_str(), Service,
             static_cast<unsigned long long>(P.Batches),
             static_cast<unsigned long long>(P.BlockVisits));
    U.push_back(static_cast<double>(P.Batches));
    V.push_back(static_cast<double>(P.BlockVisits));
    Y.push_back(Service);
  }
  double L = 0, S = 0;
  if (!fitTwo(U, V, Y, L, S)) {
    FaultNote = "the patterns do not separate the two costs";
  } else if (L < 0 || S < 0) {
    FaultNote =
        fmt("the fit is negative (%.2f us per batch, %.2f us per block): not written", L, S);
  } else {
    BatchUs = L;
    BlockUs = S;
  }
  if (!FaultNote.empty())
    progress("faults: %s", FaultNote.c_str());
  else
    progress("faults: %.2f us per batch + %.2f us per 2 MiB block in a batch", BatchUs, BlockUs);
}

std::string jsonString(const std::string &S) {
  std::string O = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\') {
      O += '\\';
      O += C;
    } else if (static_cast<unsigned char>(C) < 0x20) {
      O += fmt("\\u%04x", C);
    } else {
      O += C;
    }
  }
  return O + "\"";
}

void writeWhole(const std::string &Path, const std::string &Text, const char *What) {
  const std::string Tmp = Path + ".tmp";
  {
    std::ofstream F(Tmp, std::ios::binary | std::ios::trunc);
    if (!F)
      fail("%s: cannot write the %s: %s", Tmp.c_str(), What, std::strerror(errno));
    F << Text;
    F.close();
    if (!F)
      fail("%s: cannot write the %s: %s", Tmp.c_str(), What, std::strerror(errno));
  }
  if (std::rename(Tmp.c_str(), Path.c_str()) != 0)
    fail("%s: cannot write the %s: %s", Path.c_str(), What, std::strerror(errno));
}

void Calibration::writeDeviceFile() {
  const std::string On =
      fmt("measured by deepum-calibrate on %s, CUDA driver %d.%d, %s: ", Prop.name, Driver / 1000,
          Driver % 1000 / 10, Date.c_str());
  std::vector<std::pair<std::string, std::string>> Fields, Sources;
  auto Add = [&](const char *Key, double Value, std::string Source) {
    Fields.emplace_back(Key, fmt("%.6g", Value));
    Sources.emplace_back(Key, On + Source);
  };
  Add("link_bytes_per_second", LinkHtoD,
      fmt("cudaMemPrefetchAsync host->device, slope of time over %s..%s (median of %d); "
          "device->host %s, dirty write-back %s, both directions at once (in all) %s",
          sizeName(Sizes.size() > 2 ? Sizes[Sizes.size() - 3] : Sizes.front()).c_str(),
          sizeName(Sizes.back()).c_str(), Opt.Repeats, rateText(LinkDtoH).c_str(),
          rateText(WriteBack).c_str(), rateText(BothWays).c_str()));
  if (LinkDtoH > 0)
    Add("device_to_host_bytes_per_second", LinkDtoH,
        fmt("cudaMemPrefetchAsync device->host of pages the GPU holds, slope of time over "
            "%s..%s (median of %d); dirty write-back %s",
            sizeName(Sizes.size() > 2 ? Sizes[Sizes.size() - 3] : Sizes.front()).c_str(),
            sizeName(Sizes.back()).c_str(), Opt.Repeats, rateText(WriteBack).c_str()));
  // The swapping systems' mechanism, and the fastest way out where UVM's
  // eviction is slower (the lower bounds take the fastest path).
  if (CopyDtoH > 0)
    Add("copy_device_to_host_bytes_per_second", CopyDtoH,
        fmt("cudaMemcpyAsync device->pinned host of %s, stream clock (median of %d)",
            sizeName(Sizes.back()).c_str(), Opt.Repeats));
  if (CopyHtoD > 0)
    Add("copy_host_to_device_bytes_per_second", CopyHtoD,
        fmt("cudaMemcpyAsync pinned host->device of %s, stream clock (median of %d)",
            sizeName(Sizes.back()).c_str(), Opt.Repeats));
  if (ManagedToPinned > 0)
    Add("copy_managed_to_host_bytes_per_second", ManagedToPinned,
        fmt("cudaMemcpyAsync of GPU-written managed memory->pinned host of %s, stream clock "
            "(median of %d)",
            sizeName(Sizes.back()).c_str(), Opt.Repeats));
  const char *Clock = Opt.StreamClock ? "stream clock (cudaEvents on an idle stream)"
                                      : "host clock (std::chrono around the call)";
  if (CallUs >= 0)
    Add("transfer_call_us", CallUs,
        fmt("least squares over cudaMemPrefetchAsync and cudaMemPrefetchBatchAsync / "
            "cudaMemDiscardBatchAsync of 1, 4, 16, 64 ranges, %s: %.3f us per call",
            Clock, CallUs));
  if (RangeUs >= 0)
    Add("transfer_range_us", RangeUs,
        fmt("slope of the same fit, %s: %.4f us per range after the first", Clock, RangeUs));
  if (PopulateBlockUs >= 0) {
    Add("populate_block_us", PopulateBlockUs,
        fmt("cudaMemPrefetchAsync to the GPU of 64 GPU-written 2 MiB blocks just discarded "
            "(cudaMemDiscardBatchAsync, %.3f us per block), stream clock: %.3f us per block",
            DiscardBlockUs, PopulateBlockUs));
    Add("discarded_fault_block_us", DiscardedWriteBlockUs,
        fmt("a kernel's first write to 64 GPU-written 2 MiB blocks just discarded, beyond the "
            "same kernel on resident blocks: %.3f us per block",
            DiscardedWriteBlockUs));
  }
  if (const double Held = populateHeldCopy(); Held >= 0) {
    Fields.emplace_back("populates_hold_copy_engine", Held >= 0.5 ? "true" : "false");
    Sources.emplace_back(
        "populates_hold_copy_engine",
        On + fmt("a copy back of 64 resident 2 MiB blocks from pinned slots beside the populate "
                 "of 64 discarded ones on a second stream: copy alone %.3f us, populate alone "
                 "%.3f us, both at once %.3f us per block; %.0f%% of the populate held the copy "
                 "(true from 50%%)",
                 CopyAloneBlockUs, PopulateAloneBlockUs, PopulateBesideCopyBlockUs, 100 * Held));
  }
  if (BatchUs >= 0) {
    Add("fault_batch_latency_us", BatchUs,
        fmt("first touch of host-resident memory at 4 KiB, 64 KiB and 2 MiB strides, less the "
            "kernel on resident memory and the bytes at the link rate, fitted per batch of "
            "256 entries and per 2 MiB block: %.3f us per batch",
            BatchUs));
    Add("fault_block_service_us", BlockUs,
        fmt("the same fit: %.3f us per 2 MiB block in a batch", BlockUs));
  }
  std::ostringstream J;
  J << "{\n  \"format\": \"deepum-device-models/1\",\n"
    << "  \"comment\": "
    << jsonString("Written by deepum-calibrate; lay it over a built-in "
                  "model with --device NAME --device-file FILE.")
    << ",\n  \"models\": [\n    {\n      \"name\": " << jsonString(ModelName);
  for (auto &[K, V] : Fields)
    J << ",\n      " << jsonString(K) << ": " << V;
  J << ",\n      \"sources\": {";
  for (size_t I = 0; I < Sources.size(); ++I)
    J << (I ? ",\n" : "\n") << "        " << jsonString(Sources[I].first) << ": "
      << jsonString(Sources[I].second);
  J << "\n      }\n    }\n  ]\n}\n";
  writeWhole(Opt.Out, J.str(), "device file");
  progress("wrote %s (model '%s')", Opt.Out.c_str(), ModelName.c_str());
}

void Calibration::writeReport() {
  std::ostringstream R;
  R << "# deepum-calibrate: " << Prop.name << "\n\n"
    << fmt("CUDA driver %d.%d, %s; %d repeats per row; times from cudaEvents unless the row "
           "says host clock (std::chrono around the call: the call's own cost).\n\n",
           Driver / 1000, Driver % 1000 / 10, Date.c_str(), Opt.Repeats)
    << "| measurement | size | median | min | max | repeats | unit |\n"
    << "|---|---|---:|---:|---:|---:|---|\n";
  for (const Sample &S : Samples)
    R << "| " << S.What << " | " << S.Size << " | " << fmt("%.3f", S.Median) << " | "
      << fmt("%.3f", S.Min) << " | " << fmt("%.3f", S.Max) << " | " << S.Repeats << " | " << S.Unit
      << " |\n";
  R << "\n## Derived\n\n| figure | value | written as |\n|---|---:|---|\n"
    << "| host->device rate (plateau) | " << rateText(LinkHtoD) << " | link_bytes_per_second |\n"
    << "| device->host rate (plateau) | " << rateText(LinkDtoH) << " | "
    << (LinkDtoH > 0 ? "device_to_host_bytes_per_second" : "report only") << " |\n"
    << "| write-back of dirty pages | " << rateText(WriteBack) << " | report only |\n"
    << "| both directions at once, in all | " << rateText(BothWays) << " | report only |\n"
    << "| cudaMemcpyAsync device->pinned host | " << rateText(CopyDtoH) << " | "
    << (CopyDtoH > 0 ? "copy_device_to_host_bytes_per_second" : "report only") << " |\n"
    << "| cudaMemcpyAsync pinned host->device | " << rateText(CopyHtoD) << " | "
    << (CopyHtoD > 0 ? "copy_host_to_device_bytes_per_second" : "report only") << " |\n"
    << "| cudaMemcpyAsync GPU-written managed->pinned host | " << rateText(ManagedToPinned)
    << " | " << (ManagedToPinned > 0 ? "copy_managed_to_host_bytes_per_second" : "report only")
    << " |\n"
    << fmt("| per call, host clock | %.3f us + %.4f us per extra range | %s |\n", HostCallUs,
           HostRangeUs, Opt.StreamClock ? "report only" : "transfer_call_us, transfer_range_us")
    << fmt("| per call, stream clock | %.3f us + %.4f us per extra range | %s |\n", StreamCallUs,
           StreamRangeUs, Opt.StreamClock ? "transfer_call_us, transfer_range_us" : "report only");
  if (PopulateBlockUs >= 0)
    R << fmt("| discarded data, per 2 MiB block | discard %.3f us, populate %.3f us, a kernel's "
             "first write %.3f us beyond resident | populate_block_us, discarded_fault_block_us |\n",
             DiscardBlockUs, PopulateBlockUs, DiscardedWriteBlockUs);
  if (InFlightWriteBlockUs >= 0)
    R << fmt("| a kernel's first write to discarded blocks, their populate in flight, per 2 MiB "
             "block | %.3f us beyond resident | report only |\n",
             InFlightWriteBlockUs);
  if (CopyOutBlockUs >= 0)
    R << fmt("| the copy path, per 2 MiB block | out (copy to a pinned slot + discard) %.3f us, "
             "in (populate + copy back) %.3f us, both at once %.3f us (%s) | report only |\n",
             CopyOutBlockUs, CopyInBlockUs, CopyBothBlockUs,
             CopyBothBlockUs < 0.75 * (CopyOutBlockUs + CopyInBlockUs)
                 ? "the directions overlap"
                 : "the directions do not overlap");
  if (PopulateBesideCopyBlockUs >= 0) {
    const double Held = populateHeldCopy();
    R << fmt("| a populate beside a copy back, per 2 MiB block | copy alone %.3f us, populate "
             "alone %.3f us, both at once %.3f us (%s) | %s |\n",
             CopyAloneBlockUs, PopulateAloneBlockUs, PopulateBesideCopyBlockUs,
             Held < 0 ? "the populate takes no time here"
                      : fmt("%.0f%% of the populate held the copy", 100 * Held).c_str(),
             Held < 0 ? "report only" : "populates_hold_copy_engine");
  }
  if (CopyIntoDiscardedBlockUs >= 0)
    R << fmt("| a copy back into discarded blocks, no populate, per 2 MiB block | %.3f us "
             "(populate + copy %.3f us) | report only |\n",
             CopyIntoDiscardedBlockUs, CopyInBlockUs);
  for (const std::string &U : Unsupported)
    R << "| " << U << " | not supported by this driver | left out |\n";
  if (BatchUs >= 0)
    R << fmt("| fault service | %.3f us per batch + %.3f us per 2 MiB block | "
             "fault_batch_latency_us, fault_block_service_us |\n",
             BatchUs, BlockUs);
  else
    R << "| fault service | " << FaultNote << " | not written |\n";
  const double Single = std::min(LinkHtoD, LinkDtoH);
  if (BothWays > 0 && Single > 0)
    R << fmt("\ncopy_engines_per_direction (hint, not written): both directions together reach "
             "%.2fx one direction's rate, %s.\n",
             BothWays / Single,
             BothWays > 1.5 * Single ? "so each direction has an engine of its own"
                                     : "so the two directions share the link or an engine");
  else
    R << "\ncopy_engines_per_direction (hint, not written): no figure, device->host copies took "
         "no time that events could see.\n";
  writeWhole(Opt.Report, R.str(), "report");
  progress("wrote %s", Opt.Report.c_str());
}

void Calibration::run() {
  setup();
  measureLink();
  measureBothDirections();
  measureWriteBack();
  measureExplicitCopies();
  measureDiscards();
  measureCalls();
  measureFaults();
  // Report only, and last: at a small capacity (the stand-in's tests) its
  // blocks evict others, whose write-backs would still run when a later
  // measurement started.
  measureCopyPath();
  writeDeviceFile();
  if (!Opt.Report.empty())
    writeReport();
}

} // namespace

int main(int Argc, char **Argv) {
  const Options O = parseArgs(Argc, Argv);
  Calibration(O).run();
  return 0;
}
