# deepum-profile: runs a command with the profiler injected (profiler/).
if(TARGET deepum_profiler)
  deepum_add_tool(deepum-profile SOURCES deepum-profile.cpp DEPS deepum_profiler)
  # The launcher is useless without the library it injects.
  add_dependencies(deepum-profile deepum_profiler_injection)
endif()
