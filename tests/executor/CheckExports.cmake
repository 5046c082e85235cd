# Fails unless LIB exports exactly the C ABI of deepum/deepum.h plus the shared
# CUPTI subscriber table (deepum_cupti_v1, see deepum/cupti/Subscriber.h).
execute_process(COMMAND nm -D --defined-only ${LIB} OUTPUT_VARIABLE Out RESULT_VARIABLE Rc)
if(NOT Rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^\n]+" Lines "${Out}")
set(Expected deepum_cupti_v1 deepum_free deepum_get_stats deepum_init deepum_malloc
             deepum_stats_json deepum_step)
set(Found)
foreach(L ${Lines})
  string(REGEX REPLACE "^[0-9a-f]* *[A-Za-z] " "" Sym "${L}")
  string(REGEX REPLACE "@.*" "" Sym "${Sym}")
  if(Sym STREQUAL "DEEPUM_0.1")
    continue() # the version node
  endif()
  list(APPEND Found ${Sym})
endforeach()
list(SORT Found)
if(NOT Found STREQUAL Expected)
  message(FATAL_ERROR "libdeepum exports [${Found}], expected [${Expected}]")
endif()
message(STATUS "exports: ${Found}")
