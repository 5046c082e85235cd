//===- ApiHook.h - How the stand-in runtime hands API calls to its CUPTI ---===//
//
// Private to the stand-in: libcudart.so.13 exports deepum_standin_cupti_v1(),
// and the stand-in's libcupti.so.13 looks it up with dlsym (as NVIDIA's CUPTI
// reaches its driver through private tables). The runtime reports each API
// call it has a CUPTI callback id for, at entry and at exit, with the
// parameter structs of generated_cuda_runtime_api_meta.h (runtime domain) and
// generated_cuda_meta.h (driver domain), and resource events (graph execs).
// CUPTI owns everything else: subscribers, enabled ids, the context handle.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_APIHOOK_H
#define DEEPUM_STANDIN_APIHOOK_H

#include <stddef.h>
#include <stdint.h>

extern "C" {

/// One callback site of one API call.
struct deepum_standin_api_call {
  int domain;    // CUpti_CallbackDomain
  uint32_t cbid; // CUpti_CallbackId of that domain
  int site;      // CUpti_ApiCallbackSite (enter 0, exit 1); unused for resources
  const char *function_name;
  const void *params;         // the domain's parameter struct, or the resource descriptor
  void *return_value;         // cudaError_t* or CUresult*; NULL at enter and for resources
  const char *symbol_name;    // launches: the kernel's device name
  uint32_t correlation_id;    // the same at enter and exit; a launch's kernel record has it
  uint64_t *correlation_data; // per call, shared by its enter and exit
};

/// Called by the runtime for every call site while a hook is installed. It
/// runs on the calling thread, may call back into the runtime, and returns
/// before the call goes on.
typedef void (*deepum_standin_api_hook_fn)(const struct deepum_standin_api_call *call, void *user);

/// One Unified Memory event of the model (deepum::sim::UmEvent).
struct deepum_standin_um_event {
  int kind;   // 0 GPU page fault group, 1 migration HtoD, 2 migration DtoH, 3 thrashing
  int cause;  // migrations: 1 demand, 2 driver prefetch, 3 user, 4 eviction; else 0
  int access; // faults: 0 read, 1 write, 2 read-write
  uint64_t address;
  uint64_t bytes;
  uint64_t start_ns;
  uint64_t end_ns;
};

struct deepum_standin_cupti_table {
  size_t size; // sizeof(deepum_standin_cupti_table)
  /// Installs (or, with NULL, removes) the hook.
  void (*set_api_hook)(deepum_standin_api_hook_fn fn, void *user);
  /// The model's clock, in ns (cuptiGetTimestamp and activity records).
  uint64_t (*now_ns)(void);
  /// deepum_standin_kernel_records (StandIn.h).
  size_t (*kernel_records)(struct deepum_standin_kernel_record *out, size_t capacity, size_t first);
  /// Starts (1) or stops (0) the model's Unified Memory event log.
  void (*set_um_log)(int on);
  /// Moves up to `capacity` logged events, oldest first, into `out`; returns how many.
  size_t (*take_um_events)(struct deepum_standin_um_event *out, size_t capacity);
};

const struct deepum_standin_cupti_table *deepum_standin_cupti_v1(void);
typedef const struct deepum_standin_cupti_table *(*deepum_standin_cupti_v1_fn)(void);

} // extern "C"

#endif // DEEPUM_STANDIN_APIHOOK_H
