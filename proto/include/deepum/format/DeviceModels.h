//===- deepum/format/DeviceModels.h - The built-in device models ------------===//
//
// simulator/devices/device-models.json, compiled in: the simulator's device
// models and the planner's cost model read the same numbers wherever the
// tools are installed.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_DEVICEMODELS_H
#define DEEPUM_FORMAT_DEVICEMODELS_H

#include "llvm/ADT/StringRef.h"

namespace deepum::format {

/// The text of device-models.json as built.
llvm::StringRef builtinDeviceModelsJson();

} // namespace deepum::format

#endif // DEEPUM_FORMAT_DEVICEMODELS_H
