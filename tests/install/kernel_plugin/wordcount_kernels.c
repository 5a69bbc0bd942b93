/* wordcount_kernels: a kernel plugin in plain C (docs/KERNELS.md, "Kernel
 * plugins"), built out of tree against an installed tailcut
 * (tests/install/run.sh) and in tree for the executor's tests.
 *   wordcount  (idempotent): "words=N task=T of C attempt=A" for the words
 *              of its arguments; with an output directory it also writes
 *              count.txt there.
 *   nap        (not idempotent): sleeps ms=N milliseconds cooperatively and
 *              fails when its arguments say fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailcut/executor/kernel_plugin_api.h"

/* The stale twin of the install test is this file built with
 * TAILCUT_TEST_API_VERSION_OFFSET=1: a plugin for another API version. */
#ifndef TAILCUT_TEST_API_VERSION_OFFSET
#define TAILCUT_TEST_API_VERSION_OFFSET 0
#endif

static int Wordcount(const TailcutKernelCall* call, char* err, size_t errlen) {
  size_t words = 0;
  int in_word = 0;
  for (size_t i = 0; i < call->args_len; ++i) {
    int space = call->args[i] == ' ' || call->args[i] == '\t' || call->args[i] == '\n';
    if (!space && !in_word) ++words;
    in_word = !space;
    if (call->cancelled(call->host)) {
      snprintf(err, errlen, "cancelled");
      return 1;
    }
  }
  call->report_progress(call->host, 1.0f);
  char out[160];
  int n = snprintf(out, sizeof out, "words=%zu task=%u of %u attempt=%llu", words, (unsigned)call->task_index,
                   (unsigned)call->task_count, (unsigned long long)call->attempt_id);
  if (call->output_dir[0]) {
    char path[4096];
    snprintf(path, sizeof path, "%s/count.txt", call->output_dir);
    FILE* f = fopen(path, "w");
    if (!f || fprintf(f, "%zu\n", words) < 0 || fclose(f) != 0) {
      snprintf(err, errlen, "cannot write %s", path);
      return 1;
    }
  }
  call->set_output(call->host, out, (size_t)n);
  return 0;
}

static int Nap(const TailcutKernelCall* call, char* err, size_t errlen) {
  char args[256];
  size_t len = call->args_len < sizeof args - 1 ? call->args_len : sizeof args - 1;
  memcpy(args, call->args, len);
  args[len] = 0;
  if (strstr(args, "fail")) {
    snprintf(err, errlen, "nap asked to fail");
    return 1;
  }
  const char* ms = strstr(args, "ms=");
  double seconds = ms ? atof(ms + 3) / 1000.0 : 0.01;
  if (!call->sleep_for(call->host, seconds)) {
    snprintf(err, errlen, "cancelled");
    return 1;
  }
  call->log(call->host, 0, "nap done");
  call->set_output(call->host, "rested", 6);
  return 0;
}

static const TailcutKernelInfo kKernels[] = {
    {"wordcount", Wordcount, /*idempotent=*/1, /*self_timed=*/0},
    {"nap", Nap, /*idempotent=*/0, /*self_timed=*/1},
};

int tailcut_kernel_plugin_api_version(void) {
  return TAILCUT_KERNEL_PLUGIN_API_VERSION + TAILCUT_TEST_API_VERSION_OFFSET;
}

const TailcutKernelInfo* tailcut_kernel_plugin_kernels(size_t* count) {
  *count = sizeof kKernels / sizeof kKernels[0];
  return kKernels;
}
