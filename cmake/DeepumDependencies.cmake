# Every dependency comes from Debian packages (installed by tools/setup.sh),
# except the CUDA toolkit, which is a prerequisite found where it is installed.

find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)

find_package(LLVM 14 REQUIRED CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
if(NOT LLVM_ENABLE_RTTI)
  message(FATAL_ERROR "deepum needs an LLVM built with RTTI (Debian's llvm-dev is)")
endif()
# Debian's LLVM ships one shared library; link it instead of the static components.
add_library(deepum_llvm INTERFACE)
target_include_directories(deepum_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(deepum_llvm INTERFACE ${LLVM_DEFINITIONS_LIST})
if(LLVM_LINK_LLVM_DYLIB OR TARGET LLVM)
  target_link_libraries(deepum_llvm INTERFACE LLVM)
else()
  llvm_map_components_to_libnames(deepum_llvm_libs support)
  target_link_libraries(deepum_llvm INTERFACE ${deepum_llvm_libs})
endif()

find_package(CUDAToolkit)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "deepum needs the CUDA toolkit (with CUPTI); none was found. "
                      "Install it or pass -DCUDAToolkit_ROOT=/path/to/cuda")
endif()
if(NOT TARGET CUDA::cupti)
  message(FATAL_ERROR "the CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT} has no CUPTI library")
endif()

if(DEEPUM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(DEEPUM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

find_program(DEEPUM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
