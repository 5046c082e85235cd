# The static checks of proto/lib/PlanFieldsCheck.cpp can fail: the file is
# compiled once as it is (it must compile) and once against a copy of
# deepum/format/PlanFields.h in which one field number differs from
# plan.proto (it must not, naming the field).
#
# -DCXX=compiler -DSOURCE_DIR=project -DGEN_DIR=generated protobuf code
# -DINCLUDES=other include dirs (;-list) -DWORK=scratch dir
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/deepum/format)
set(check ${SOURCE_DIR}/proto/lib/PlanFieldsCheck.cpp)
set(flags -std=c++20 -fsyntax-only -isystem ${GEN_DIR})
foreach(dir IN LISTS INCLUDES)
  # The compiler's own directories stay where it searches them (an -isystem
  # /usr/include breaks <cstdlib>'s #include_next).
  if(NOT dir STREQUAL "/usr/include")
    list(APPEND flags -isystem ${dir})
  endif()
endforeach()

execute_process(COMMAND ${CXX} ${flags} -I ${SOURCE_DIR}/proto/include ${check}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "PlanFieldsCheck.cpp does not compile as it is:\n${err}")
endif()

file(READ ${SOURCE_DIR}/proto/include/deepum/format/PlanFields.h header)
string(REPLACE "Field DuePosition{3," "Field DuePosition{9," wrong "${header}")
if(wrong STREQUAL header)
  message(FATAL_ERROR "action::DuePosition is no longer field 3: update this test")
endif()
file(WRITE ${WORK}/deepum/format/PlanFields.h "${wrong}")
execute_process(COMMAND ${CXX} ${flags} -I ${WORK} ${check}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "a renumbered field passed the static checks")
endif()
if(NOT err MATCHES "plan.proto's Action.due_position differs")
  message(FATAL_ERROR "the failure does not name the field:\n${err}")
endif()
message(STATUS "a renumbered field fails the build: Action.due_position")
