//===- Fatbin.h - What an nvcc fat binary says of its kernels --------------===//
//
// nvcc's host stub passes a launch its argument pointers but not how many
// there are or how big each is. The cubins in the fat binary say: every
// kernel's `.nv.info.<name>` section lists its parameters (EIATTR_KPARAM_INFO:
// ordinal, offset, size). Only uncompressed cubins are read; a kernel found
// in none (PTX only, or compressed) has no layout, and a launch of it without
// a twin touches nothing. The same cubins give what a kernel needs of an SM
// (registers, shared and local memory, launch bounds), for the occupancy
// calculator.
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
  std::vector<uint32_t> Sizes;   // by ordinal
  std::vector<uint32_t> Offsets; // by ordinal; empty: laid out by paramInfo's rule
};

/// Parameter `Index`'s offset and size in the device-side parameter buffer
/// (cuFuncGetParamInfo): the cubin's offsets when it gave them, else each
/// parameter at the next multiple of its natural alignment (its size's
/// largest power of two, at most 8: what a twin's declared sizes allow).
/// False past the last parameter.
bool paramInfo(const ParamLayout &L, size_t Index, size_t *Offset, size_t *Size);

/// The initial values of the global variables (`__device__`, `__managed__`)
/// of the uncompressed cubins behind nvcc's wrapper, by name: the bytes the
/// cubin's initialised data holds, zeros for one without data.
std::unordered_map<std::string, std::vector<uint8_t>> readGlobalInits(const void *FatbinWrapper);

/// Layouts of the kernels in the fat binary behind nvcc's wrapper
/// (__fatBinC_Wrapper_t), by device name. Malformed input yields what could
/// be read; nothing is read outside the sizes the headers state.
std::unordered_map<std::string, ParamLayout> readParamLayouts(const void *FatbinWrapper);

/// What a kernel's cubin says it needs of an SM (cudaFuncGetAttributes, the
/// occupancy calculator).
struct KernelResources {
  int Arch = 0;             // the cubin's SASS architecture, major * 10 + minor
  uint32_t Registers = 0;   // per thread (EIATTR_REGCOUNT)
  uint32_t SharedBytes = 0; // static shared memory per block
  uint32_t LocalBytes = 0;  // local memory per thread (EIATTR_FRAME_SIZE)
  uint32_t MaxThreads = 0;  // __launch_bounds__ / .maxntid (EIATTR_MAX_THREADS); 0: none
};

/// Resources of the kernels in the fat binary, by device name: from the
/// cubin built for `PreferArch` when there is one, else from the first
/// cubin naming the kernel. Same reading rules as readParamLayouts.
std::unordered_map<std::string, KernelResources> readKernelResources(const void *FatbinWrapper,
                                                                     int PreferArch);

} // namespace deepum::standin

#endif // DEEPUM_STANDIN_FATBIN_H
