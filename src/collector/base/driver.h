/* SPDX-License-Identifier: MIT */
/* The CUDA driver the program loaded, found without linking it; see driver.c. */
#ifndef TALLY_COLLECTOR_DRIVER_H
#define TALLY_COLLECTOR_DRIVER_H

/* name (a cu* function) in the loaded libcuda.so.1, or NULL when the process has no driver. */
void *tally_driver_sym(const char *name);

#endif
