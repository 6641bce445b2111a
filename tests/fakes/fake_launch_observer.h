/* How the fake libcuda (fake_driver.c) tells the fake libcupti (fake_cupti.c)
 * about each cuLaunchKernel, as the real driver tells CUPTI: before the call,
 * and after it with its result and, on the fake clock, when the kernel ran. */
#ifndef FAKE_LAUNCH_OBSERVER_H
#define FAKE_LAUNCH_OBSERVER_H

/* cuLaunchKernel's arguments, laid out as CUPTI's cuLaunchKernel_params. */
typedef struct {
  void* f;
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  void* stream;
  void** kernel_params;
  void** extra;
} fake_launch_params;

enum { FAKE_LAUNCH_ENTER = 0, FAKE_LAUNCH_EXIT = 1 };

/* `result`, `start_ms`, `end_ms`: only at FAKE_LAUNCH_EXIT. */
typedef void (*fake_launch_observer)(int site, const fake_launch_params* call, int result, double start_ms,
                                     double end_ms);

void fake_set_launch_observer(fake_launch_observer observer);

#endif
