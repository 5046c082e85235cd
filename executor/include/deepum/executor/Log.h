//===- deepum/executor/Log.h - The executor's few log lines ----------------===//
//
// The executor logs through deepum/base/Log.h (DEEPUM_LOG), shared with the
// CUPTI subscriber; these names keep the executor's code as it reads.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_LOG_H
#define DEEPUM_EXECUTOR_LOG_H

#include "deepum/base/Log.h"

namespace deepum::executor {

using base::configureLog;
using base::log;
using base::LogCapture;
using base::LogLevel;
using base::logLevel;
using base::parseLogSetting;
using base::setLogLevel;

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_LOG_H
