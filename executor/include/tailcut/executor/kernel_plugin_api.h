/* Kernel plugins: kernels in a shared library that tailcut-executor loads
 * with --kernel-plugin PATH or `kernel_plugins = [...]` (docs/KERNELS.md,
 * "Kernel plugins"). A plain C interface: the plugin links no tailcut
 * library and may be built with any compiler; it exports two entry points
 *
 *   int tailcut_kernel_plugin_api_version(void);
 *       returns TAILCUT_KERNEL_PLUGIN_API_VERSION as compiled into it;
 *   const TailcutKernelInfo* tailcut_kernel_plugin_kernels(size_t* count);
 *       its kernels: *count entries, valid while the library is loaded.
 *
 * The executor refuses a plugin built for another version, naming both.
 * Bump the version whenever a struct below or a calling convention
 * changes; fields are only ever added with a bump.
 */
#ifndef TAILCUT_EXECUTOR_KERNEL_PLUGIN_API_H_
#define TAILCUT_EXECUTOR_KERNEL_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#define TAILCUT_KERNEL_PLUGIN_API_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* One attempt of a plugin kernel, valid for the duration of its `run` call.
 * The callbacks take `host` as their first argument. */
typedef struct TailcutKernelCall {
  const char* args; /* TaskSpec.args, args_len bytes (not NUL-terminated) */
  size_t args_len;
  /* Who the attempt is (the same values as the TAILCUT_* environment of
   * shell tasks, docs/KERNELS.md). */
  uint64_t job_id;
  uint32_t task_index;
  uint32_t task_count;
  uint64_t attempt_id;
  int is_copy; /* 1: a copy, clone, hedge or restart of a task that has another attempt */
  /* Divisible jobs: units [share_begin, share_begin + share_count) of share_total (0: not divisible). */
  uint64_t share_begin, share_count, share_total;
  uint32_t gpus;  /* GPUs the task asked for */
  int gpu_device; /* the CUDA device it may use when gpus >= 1 */
  /* The attempt's private output directory, or "" when the job names no
   * output_dir (docs/JOBS.md, "Output directories"). Only the committed
   * attempt's directory is kept. */
  const char* output_dir;
  void* host;
  int (*cancelled)(void* host);                       /* 1: stop now, return non-zero */
  void (*report_progress)(void* host, float fraction); /* 0..1 */
  int (*sleep_for)(void* host, double seconds);       /* cooperative; 0 when cancelled */
  void (*yield)(void* host);                          /* lets other attempts on this thread run */
  /* The attempt's output (copied); the last call wins. */
  void (*set_output)(void* host, const char* data, size_t len);
  void (*log)(void* host, int level, const char* message); /* 0 debug, 1 info, 2 warn */
} TailcutKernelCall;

/* Runs one attempt: 0 = success (output from set_output), otherwise the
 * attempt FAILED with the NUL-terminated message written into err (at most
 * errlen bytes). Runs on a fiber: never block the thread for long (use
 * sleep_for, hand blocking work to a thread or child process). */
typedef int (*TailcutKernelRunFn)(const TailcutKernelCall* call, char* err, size_t errlen);

typedef struct TailcutKernelInfo {
  const char* name;       /* the kernel's name; unique across the executor's kernels */
  TailcutKernelRunFn run;
  int idempotent;         /* 1: running it twice is harmless, copies may race it */
  int self_timed;         /* 1: applies fault-injection slowdown itself (KernelTraits::self_timed) */
} TailcutKernelInfo;

/* The entry points a plugin defines (declared here so that a C++ plugin's
 * definitions get C linkage). */
int tailcut_kernel_plugin_api_version(void);
const TailcutKernelInfo* tailcut_kernel_plugin_kernels(size_t* count);

typedef int (*TailcutKernelPluginApiVersionFn)(void);
typedef const TailcutKernelInfo* (*TailcutKernelPluginKernelsFn)(size_t* count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TAILCUT_EXECUTOR_KERNEL_PLUGIN_API_H_ */
