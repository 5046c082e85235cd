//===- Fatbin.h - Kernel parameter layouts from an nvcc fat binary ---------===//
//
// nvcc's host stub passes a launch its argument pointers but not how many
// there are or how big each is. The cubins in the fat binary say: every
// kernel's `.nv.info.<name>` section lists its parameters (EIATTR_KPARAM_INFO:
// ordinal, offset, size). Only uncompressed cubins are read; a kernel found
// in none (PTX only, or compressed) has no layout, and a launch of it without
// a twin touches nothing.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_FATBIN_H
#define DEEPUM_STANDIN_FATBIN_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepum::standin {

struct ParamLayout {
  std::vector<uint32_t> Sizes; // by ordinal
};

/// Layouts of the kernels in the fat binary behind nvcc's wrapper
/// (__fatBinC_Wrapper_t), by device name. Malformed input yields what could
/// be read; nothing is read outside the sizes the headers state.
std::unordered_map<std::string, ParamLayout> readParamLayouts(const void *FatbinWrapper);

} // namespace deepum::standin

#endif // DEEPUM_STANDIN_FATBIN_H
