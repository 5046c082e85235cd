//===- Log.cpp - deepum's few log lines inside someone else's process -----===//
#include "deepum/base/Log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace deepum::base {

namespace {
std::atomic<int> Level{static_cast<int>(LogLevel::Warn)};
std::mutex Mu;
FILE *Sink = nullptr; // nullptr = stderr
std::atomic<bool> Capturing{false};
std::string Captured;
} // namespace

LogLevel parseLogSetting(const std::string &Value, std::string &Path, bool *Known) {
  std::string L = Value;
  Path.clear();
  if (Known)
    *Known = true;
  if (auto Colon = Value.find(':'); Colon != std::string::npos) {
    L = Value.substr(0, Colon);
    Path = Value.substr(Colon + 1);
  }
  if (L == "off" || L == "0" || L == "none")
    return LogLevel::Off;
  if (L == "error")
    return LogLevel::Error;
  if (L == "info" || L == "1")
    return LogLevel::Info;
  if (L == "debug" || L == "2")
    return LogLevel::Debug;
  if (!L.empty() && L != "warn" && L != "warning" && Known)
    *Known = false;
  return LogLevel::Warn;
}

void configureLog(const std::string &Value) {
  std::string Path;
  bool Known = true;
  LogLevel L = parseLogSetting(Value, Path, &Known);
  setLogLevel(L);
  if (!Path.empty()) {
    std::lock_guard<std::mutex> Lock(Mu);
    if (FILE *F = std::fopen(Path.c_str(), "a"))
      Sink = F;
  }
  // Inside the training process an unknown level is said once, not fatal.
  if (!Known)
    log(LogLevel::Warn,
        "DEEPUM_LOG: unknown level \"%.64s\" (expected off, error, warn, info or debug, "
        "optionally :PATH); using warn",
        Value.substr(0, Value.find(':')).c_str());
}

void setLogLevel(LogLevel L) { Level.store(static_cast<int>(L), std::memory_order_relaxed); }
LogLevel logLevel() { return static_cast<LogLevel>(Level.load(std::memory_order_relaxed)); }

void log(LogLevel L, const char *Fmt, ...) {
  bool Enabled = static_cast<int>(L) <= Level.load(std::memory_order_relaxed);
  if (!Enabled && !Capturing)
    return;
  char Buf[1024];
  va_list Args;
  va_start(Args, Fmt);
  std::vsnprintf(Buf, sizeof Buf, Fmt, Args);
  va_end(Args);
  std::lock_guard<std::mutex> Lock(Mu);
  if (Capturing) {
    Captured += Buf;
    Captured += '\n';
  }
  if (!Enabled)
    return;
  FILE *Out = Sink ? Sink : stderr;
  std::fprintf(Out, "deepum: %s\n", Buf);
  std::fflush(Out);
}

void LogCapture::start() {
  std::lock_guard<std::mutex> Lock(Mu);
  Capturing = true;
  Captured.clear();
}

std::string LogCapture::stop() {
  std::lock_guard<std::mutex> Lock(Mu);
  Capturing = false;
  return std::move(Captured);
}

} // namespace deepum::base
