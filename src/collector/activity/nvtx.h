/* SPDX-License-Identifier: MIT */
/*
 * NVTX capture of our own (see nvtx.c).  Events are recorded while a pipeline runs in this
 * process; the session hands the buffers over at close.
 */
#ifndef TALLY_COLLECTOR_NVTX_H
#define TALLY_COLLECTOR_NVTX_H

#include <nvtx3/nvToolsExt.h>

/* Fill the NVTX loader's callback tables; 1 on success, 0 if the loader offered none. */
int nvtx_capture_register(NvtxGetExportTableFunc_t get_table);
void nvtx_flush_all(void); /* every thread's finished events, to the pipeline */
void nvtx_before_fork(void);
void nvtx_after_fork_parent(void);
void nvtx_forget(void); /* a fork child: only the calling thread exists */

#endif
