//===- deepum/base/Log.h - deepum's few log lines --------------------------===//
//
// DEEPUM_LOG=off|error|warn|info|debug[:path] (default warn, to stderr). The
// executor and the CUPTI subscriber live inside someone else's training
// process: they speak rarely, prefix every line with "deepum:", and say a
// recurring problem once. Dependency-free: libdeepum.so uses it.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_BASE_LOG_H
#define DEEPUM_BASE_LOG_H

#include <atomic>
#include <string>

namespace deepum::base {

enum class LogLevel { Off = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

/// Parses a DEEPUM_LOG value; unknown text gives Warn and sets *Known (when
/// given) to false. `Path` receives the file part.
LogLevel parseLogSetting(const std::string &Value, std::string &Path, bool *Known = nullptr);
/// Applies a DEEPUM_LOG value (level and optional file); an unknown level is
/// warned about once and Warn used.
void configureLog(const std::string &Value);
void setLogLevel(LogLevel L);
LogLevel logLevel();

/// printf-style; one line, "deepum: " prefixed.
void log(LogLevel L, const char *Fmt, ...) __attribute__((format(printf, 2, 3)));

/// Logs at most once per `Flag` (a static or member atomic).
#define DEEPUM_LOG_ONCE(Flag, Level, ...)                                                          \
  do {                                                                                             \
    if (!(Flag).exchange(true, std::memory_order_relaxed))                                         \
      ::deepum::base::log(Level, __VA_ARGS__);                                                     \
  } while (0)

/// Lines logged since start (for tests), counting suppressed levels too.
struct LogCapture {
  static void start();
  static std::string stop();
};

} // namespace deepum::base

#endif // DEEPUM_BASE_LOG_H
