# Installs the build tree into WORK/prefix, then configures, builds and runs
# the consumer project against it (find_package(deepum), deepum::executor).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE Rc OUTPUT_VARIABLE Out ERROR_VARIABLE Err)
  if(NOT Rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${Out}\n${Err}")
  endif()
  message(STATUS "${Out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix --component executor)
if(NOT EXISTS ${WORK}/prefix/lib/cmake/deepum/deepumConfig.cmake)
  message(FATAL_ERROR "no deepumConfig.cmake installed")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK}/prefix)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer)
