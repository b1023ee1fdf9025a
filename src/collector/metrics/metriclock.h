/* SPDX-License-Identifier: MIT */
/*
 * One sampler per device.  PM sampling is device-wide and takes one client at a time, so when
 * several processes of a job share a GPU, the first to claim the device's lock file samples it
 * and the others read from the file who that is (pid, host, trace file, session id), to say so
 * in their own trace.  The file lies next to the output, named by the GPU's UUID, so processes
 * of one job on one node meet there and nodes sharing a file system never collide.
 *
 * The lock is a POSIX record lock on the file, owned by the process: the kernel drops it when the
 * holder exits, however it exits, so a lock file is never stale, and a fork child never inherits
 * it (it is the process's, not the descriptor's); its contents are only read while someone holds
 * it.  The file is left in place (a removed lock file lets two processes each lock a file of
 * their own).  Only the sampler opens these files in a process: closing any descriptor of the
 * file would drop a POSIX lock.
 */
#ifndef TALLY_COLLECTOR_METRICLOCK_H
#define TALLY_COLLECTOR_METRICLOCK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keptfd.h"

struct pm_lock_holder {
	long pid;
	char host[256];
	char file[PATH_MAX];
	uint8_t session[16];
	bool has_session;
};

/* DIR/.tally-gpu-metrics-GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.lock (nvidia-smi's UUID
 * spelling); without a UUID, DIR/.tally-gpu-metrics-HOST-devN.lock. */
void pm_lock_path(char *out, size_t len, const char *dir, const uint8_t *uuid, const char *host,
		  unsigned device);

/*
 * Claim path for self.  Returns 0 with the lock's descriptor in *kept (a high number, held until
 * pm_lock_release or exit; close-on-exec), -EBUSY when another process holds it (*holder says
 * who, as far as it wrote it: pid 0 when it had not yet), or another -errno when no lock can be
 * taken there (the directory is not writable): the caller then samples without one, and CUPTI's
 * own "busy" is the referee.
 */
int pm_lock_claim(const char *path, const struct pm_lock_holder *self,
		  struct pm_lock_holder *holder, struct tally_kept *kept);
/* Is the lock still held?  The program may have closed its descriptor, and with it the lock. */
bool pm_lock_held(const struct tally_kept *kept);
/* Close it (only while the descriptor is still the lock file's); forget it either way. */
void pm_lock_release(struct tally_kept *kept);

#endif
