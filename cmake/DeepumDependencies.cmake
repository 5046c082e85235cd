# Every dependency comes from Debian packages (installed by tools/setup.sh),
# except the CUDA toolkit, which is a prerequisite found where it is installed
# (optional: see DEEPUM_CUDA below).

find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)

find_package(LLVM 14 REQUIRED CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
if(NOT LLVM_ENABLE_RTTI)
  message(FATAL_ERROR "deepum needs an LLVM built with RTTI (Debian's llvm-dev is)")
endif()
# Link LLVM Support statically (Debian ships the component archives beside
# the one big libLLVM-14.so): the tools start faster and carry no 100 MB
# dependency, so they can run on machines that have no LLVM installed.
add_library(deepum_llvm INTERFACE)
target_include_directories(deepum_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(deepum_llvm INTERFACE ${LLVM_DEFINITIONS_LIST})
# Clang with libstdc++ 12 in C++20 mode cannot compile LLVM 14's JSON.h as installed.
include(${CMAKE_CURRENT_LIST_DIR}/LlvmJsonCompat.cmake)
deepum_llvm_json_compat(deepum_llvm)
find_library(DEEPUM_LLVM_SUPPORT_A libLLVMSupport.a HINTS ${LLVM_LIBRARY_DIRS} NO_DEFAULT_PATH)
find_library(DEEPUM_LLVM_DEMANGLE_A libLLVMDemangle.a HINTS ${LLVM_LIBRARY_DIRS} NO_DEFAULT_PATH)
if(DEEPUM_LLVM_SUPPORT_A AND DEEPUM_LLVM_DEMANGLE_A)
  find_library(DEEPUM_TINFO NAMES tinfo ncurses)
  target_link_libraries(deepum_llvm INTERFACE ${DEEPUM_LLVM_SUPPORT_A} ${DEEPUM_LLVM_DEMANGLE_A}
                                              ZLIB::ZLIB Threads::Threads ${CMAKE_DL_LIBS})
  if(DEEPUM_TINFO)
    target_link_libraries(deepum_llvm INTERFACE ${DEEPUM_TINFO})
  endif()
else()
  target_link_libraries(deepum_llvm INTERFACE LLVM)
endif()

# The CUDA toolkit with CUPTI (CUDA 13): libdeepum.so's CUDA backend, the
# profiler, the stand-in and the gpu tests need it. The rest builds and tests
# without it (README, "What needs what"): the format library, planner,
# simulator, deepum-plan/-sim/-inspect, and the executor's fake and simulator
# backends. DEEPUM_CUDA=OFF leaves the toolkit alone even where it is installed.
if(NOT DEFINED DEEPUM_CUDA OR DEEPUM_CUDA)
  find_package(CUDAToolkit)
endif()
if(CUDAToolkit_FOUND AND TARGET CUDA::cupti)
  set(deepum_cuda_default ON)
else()
  set(deepum_cuda_default OFF)
endif()
option(DEEPUM_CUDA "Build the parts that need the CUDA toolkit and CUPTI" ${deepum_cuda_default})
if(DEEPUM_CUDA)
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR "DEEPUM_CUDA is ON but no CUDA toolkit was found: install it, pass "
                        "-DCUDAToolkit_ROOT=/path/to/cuda, or -DDEEPUM_CUDA=OFF")
  endif()
  if(NOT TARGET CUDA::cupti)
    message(FATAL_ERROR "the CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT} has no CUPTI library")
  endif()
  # libdeepum.so and the profiler use CUDA 13's API and CUPTI 13's records
  # (shared/DESIGN.md); the supported versions are listed in docs/pytorch.md.
  if(CUDAToolkit_VERSION_MAJOR LESS 13)
    message(FATAL_ERROR "deepum needs the CUDA 13 toolkit; the one at "
                        "${CUDAToolkit_LIBRARY_ROOT} is CUDA ${CUDAToolkit_VERSION}")
  endif()
else()
  message(STATUS "deepum: building without CUDA (no toolkit with CUPTI, or DEEPUM_CUDA=OFF): "
                 "libdeepum.so, deepum-profile, the CUDA stand-in and the gpu tests are skipped")
endif()

# How libdeepum and the CUDA tests link the CUDA runtime: static (libcudart_static,
# hidden inside libdeepum.so) or shared (libcudart.so.13, so that the stand-in
# in standin/ can replace NVIDIA's through LD_LIBRARY_PATH).
set(DEEPUM_CUDA_RUNTIME "static" CACHE STRING "How to link the CUDA runtime: static or shared")
set_property(CACHE DEEPUM_CUDA_RUNTIME PROPERTY STRINGS static shared)
if(DEEPUM_CUDA_RUNTIME STREQUAL "static")
  set(DEEPUM_CUDART CUDA::cudart_static)
elseif(DEEPUM_CUDA_RUNTIME STREQUAL "shared")
  set(DEEPUM_CUDART CUDA::cudart)
else()
  message(FATAL_ERROR "DEEPUM_CUDA_RUNTIME is '${DEEPUM_CUDA_RUNTIME}': use static or shared")
endif()

if(DEEPUM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(DEEPUM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

find_program(DEEPUM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
