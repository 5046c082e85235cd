# Compiler settings shared by every deepum target.
add_library(deepum_warnings INTERFACE)
target_compile_options(deepum_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough
  # llvm::Error and Expected are [[nodiscard]]; LLVM 14 does not abort on an unchecked one.
  -Werror=unused-result)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false maybe-uninitialized warnings inside LLVM 14's
  # FormatProviders.h and protobuf's inline code at -O2.
  target_compile_options(deepum_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
if(DEEPUM_WERROR)
  target_compile_options(deepum_warnings INTERFACE -Werror)
endif()

# deepum_add_library(NAME SOURCES... [DEPS targets...])
function(deepum_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE deepum_warnings ${ARG_PRIVATE_DEPS})
endfunction()

# deepum_add_tool(NAME SOURCES... DEPS targets...)
function(deepum_add_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE deepum_warnings deepum_llvm ${ARG_DEPS})
  # The command-line conventions every tool shares (tools/include/deepum/tools/Cli.h).
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tools/include)
  target_compile_definitions(${name} PRIVATE DEEPUM_VERSION_STRING="${PROJECT_VERSION}")
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()

# deepum_add_test(NAME SOURCES... DEPS targets... [LABELS labels...])
# One gtest binary; each test case becomes a ctest test.
function(deepum_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE deepum_warnings deepum_test_support ${ARG_DEPS}
                                        GTest::gtest GTest::gtest_main GTest::gmock)
  include(GoogleTest)
  # One label per test binary: "unit" by default, or what LABELS says (e.g. gpu).
  # (A list would be split into separate properties on its way through
  # gtest_discover_tests.)
  set(label unit)
  if(ARG_LABELS)
    list(GET ARG_LABELS 0 label)
  endif()
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS ${label}
               ENVIRONMENT "DEEPUM_SOURCE_DIR=${PROJECT_SOURCE_DIR};DEEPUM_BINARY_DIR=${PROJECT_BINARY_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# Sanitized builds (.ci/run, make fuzz): every target, libraries included.
# Failures stop the program (-fno-sanitize-recover) so ctest and the fuzzers
# see them.
if(DEEPUM_SANITIZE)
  set(deepum_sanitize_flags -fsanitize=${DEEPUM_SANITIZE} -fno-omit-frame-pointer)
  if(DEEPUM_SANITIZE MATCHES "undefined")
    list(APPEND deepum_sanitize_flags -fno-sanitize-recover=all)
  endif()
  add_compile_options(${deepum_sanitize_flags})
  add_link_options(${deepum_sanitize_flags})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # Clang links the sanitizer runtime into executables only; a shared
    # library's __asan_*/__tsan_* references resolve against the executable
    # that loads it. So the shared libraries' -Wl,--no-undefined (libdeepum.so,
    # the profiler's injection library) cannot hold here: -z undefs, placed
    # last on every link line, lifts it. (The shared runtime, -shared-libsan,
    # would keep it, but libFuzzer's executables then load libstdc++ before
    # the runtime, which ASan refuses.)
    string(APPEND CMAKE_CXX_STANDARD_LIBRARIES " -Wl,-z,undefs")
  endif()
endif()

# libFuzzer builds (make fuzz): every library carries the coverage
# instrumentation libFuzzer is guided by; fuzz/CMakeLists.txt links the
# targets with -fsanitize=fuzzer.
if(DEEPUM_FUZZ_ENGINE STREQUAL "libfuzzer")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DEEPUM_FUZZ_ENGINE=libfuzzer needs Clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# deepum_add_nvcc_output(OUTPUT SOURCE [FLAGS...] [INCLUDES dirs...] [DEPENDS files...])
# A CUDA program or library compiled by nvcc (DEEPUM_NVCC) with the shared
# runtime, so that it runs on a GPU and on the CUDA stand-in alike; host
# warnings are errors. The caller adds the target that builds OUTPUT.
function(deepum_add_nvcc_output output source)
  cmake_parse_arguments(ARG "" "" "FLAGS;INCLUDES;DEPENDS" ${ARGN})
  set(host_compiler)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(host_compiler -ccbin ${CMAKE_CXX_COMPILER})
  endif()
  list(TRANSFORM ARG_INCLUDES PREPEND -I)
  get_filename_component(source_name ${source} NAME)
  add_custom_command(OUTPUT ${output}
    COMMAND ${DEEPUM_NVCC} ${host_compiler} -cudart shared -std=c++17 ${ARG_FLAGS}
            ${ARG_INCLUDES} -Xcompiler=-Wall,-Wextra,-Werror ${source} -o ${output}
    DEPENDS ${source} ${ARG_DEPENDS}
    COMMENT "nvcc -cudart shared ${source_name}"
    VERBATIM)
endfunction()
