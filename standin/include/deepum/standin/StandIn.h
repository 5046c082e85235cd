/*===- deepum/standin/StandIn.h - The stand-in's own C entry points -------===*
 *
 * Entry points of the CUDA 13 stand-in (libcudart.so.13 built in standin/)
 * that are not CUDA: host twins of kernels, and the model's counters.
 *
 * A program never links these: it looks them up at run time
 * (dlsym(RTLD_DEFAULT, ...)), so the same binary runs unchanged on NVIDIA's
 * runtime, where the lookups fail and the real kernels run. Twin.h wraps this.
 *
 * Times are the model's nanoseconds (deepum::sim::Engine), not wall time.
 *===----------------------------------------------------------------------===*/
#ifndef DEEPUM_STANDIN_STANDIN_H
#define DEEPUM_STANDIN_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How a kernel uses a range (the model's deepum::sim::Access). */
enum deepum_standin_access {
  DEEPUM_STANDIN_READ = 0,
  DEEPUM_STANDIN_WRITE = 1,
  DEEPUM_STANDIN_READ_WRITE = 2
};

/** One launch as a twin sees it. Opaque beyond these fields. */
struct deepum_standin_launch {
  const char *name; /* the kernel's device (mangled) name */
  uint32_t grid[3];
  uint32_t block[3];
  size_t shared_mem_bytes;
  void *stream; /* the cudaStream_t it was launched on */
  void *internal;
};

/** A kernel's host twin: runs on the CPU in place of the kernel, with the
 *  launch's argument pointers (args[i] points at parameter i, as given to
 *  cudaLaunchKernel). */
typedef void (*deepum_standin_twin_fn)(struct deepum_standin_launch *launch, void **args,
                                       void *user);

/** Registers `fn` for the kernel whose host-side symbol is `host_fun` (the
 *  pointer a <<<>>> launch names), or, when `host_fun` is NULL, for the kernel
 *  whose device name is `name`. `param_sizes` (may be NULL) gives each
 *  parameter's size in bytes, used to copy arguments into captured graphs.
 *  Returns 0, or a cudaError_t value. */
typedef int (*deepum_standin_register_twin_fn)(const void *host_fun, const char *name,
                                               deepum_standin_twin_fn fn, void *user,
                                               const uint32_t *param_sizes,
                                               uint32_t param_count);
int deepum_standin_register_twin(const void *host_fun, const char *name,
                                 deepum_standin_twin_fn fn, void *user,
                                 const uint32_t *param_sizes, uint32_t param_count);

/** Declares, from inside a twin, that the kernel touches [ptr, ptr+bytes).
 *  Returns 1 when the range lies in live CUDA memory; otherwise 0, and the
 *  launch ends in cudaErrorIllegalAddress (sticky), as the device's MMU would
 *  make it: the twin must then not touch the range. The first declaration
 *  replaces the default (every pointer argument to the end of its allocation). */
typedef int (*deepum_standin_access_fn)(struct deepum_standin_launch *launch, const void *ptr,
                                        size_t bytes, int access);
int deepum_standin_access(struct deepum_standin_launch *launch, const void *ptr, size_t bytes,
                          int access);

/** Adds floating-point work to the launch's cost in the model. */
void deepum_standin_add_flops(struct deepum_standin_launch *launch, double flops);

/** A kernel's parameter `index`: its offset and size in the parameter buffer
 *  (`kernel`: a host stub, or the kernel object that __cudaGetKernel,
 *  cudaGetFuncBySymbol or a CUfunction names). The stand-in driver's
 *  cuFuncGetParamInfo: unlike the runtime's cudaFuncGetParamInfo it leaves
 *  the thread's last error alone. 0, or cudaErrorInvalidValue past the last
 *  parameter or without a layout, cudaErrorInvalidDeviceFunction for an
 *  unknown kernel. */
int deepum_standin_param_info(const void *kernel, size_t index, size_t *offset, size_t *size);

/** The model's counters since start-up (or the last reset). */
struct deepum_standin_stats {
  uint64_t kernels;
  uint64_t faults;          /* 64 KiB pages demand-faulted */
  uint64_t fault_batches;
  uint64_t bytes_htod;      /* every migration to the GPU */
  uint64_t bytes_dtoh;      /* every migration to the host */
  uint64_t bytes_prefetched;        /* explicit prefetches to the GPU */
  uint64_t bytes_driver_prefetched; /* the driver's density prefetcher */
  uint64_t bytes_demand;            /* the faulted pages themselves */
  uint64_t evictions;       /* 2 MiB blocks that left the GPU */
  uint64_t bytes_discarded; /* by cudaMemDiscard*; not by cudaFree */
  uint64_t thrashing_events;
  uint64_t model_refused_launches; /* launches the model could not run at all */
  uint64_t memcpy_bytes;
  uint64_t resident_bytes;
  uint64_t capacity_bytes;
  uint64_t device_allocated_bytes; /* cudaMalloc, and the memory pool's reserved bytes */
  uint64_t managed_allocated_bytes;
  uint64_t model_time_ns;   /* end of the last kernel */
  uint64_t host_calls;      /* prefetch / discard calls (a batch call is one) */
  uint64_t host_call_ns;    /* host time the model charged for them */
  uint64_t oversubscribed_launches; /* a kernel's pages alone exceeded capacity: it ran
                                       in pieces, faulting and evicting */
  uint64_t bytes_copied;   /* cudaMemcpy* over the link, timed on a copy engine */
  uint64_t bytes_poisoned; /* discarded managed bytes overwritten with 0xFF */
  uint64_t host_faults;    /* host touches of GPU-resident managed pages: each page went back */
};
typedef int (*deepum_standin_stats_fn)(struct deepum_standin_stats *out, size_t out_size);
/** Fills `out` (`out_size` = sizeof(*out), for compatibility). Returns 0. */
int deepum_standin_get_stats(struct deepum_standin_stats *out, size_t out_size);

/** One kernel execution, in launch order. */
struct deepum_standin_kernel_record {
  const char *name;  /* valid while the module stays registered */
  uint64_t correlation_id; /* 1, 2, ... per launch; CUPTI's correlation id of the launch call */
  void *stream;
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t faults;   /* pages this kernel demand-faulted */
  uint64_t graph_exec; /* 0, or the cudaGraphExec_t that launched it */
  uint32_t shared_mem_bytes; /* dynamic shared memory of the launch */
};
typedef size_t (*deepum_standin_kernel_records_fn)(struct deepum_standin_kernel_record *out,
                                                   size_t capacity, size_t first);
/** Copies records [first, first+capacity) into `out`; returns how many were
 *  copied. With `out` NULL, returns the number of records held. */
size_t deepum_standin_kernel_records(struct deepum_standin_kernel_record *out, size_t capacity,
                                     size_t first);

/** Clears the counters and kernel records (residency is kept). */
void deepum_standin_reset_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* DEEPUM_STANDIN_STANDIN_H */
