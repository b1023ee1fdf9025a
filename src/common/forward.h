/* SPDX-License-Identifier: MIT */
/*
 * A signal that `tally record` forwards to its program goes by sigqueue (si_code SI_QUEUE, si_pid
 * tally record's), its value marked as tally's and carrying who sent the original.  The collector
 * in the program then knows it for a copy: when the program also got the original (a signal to
 * the whole process group, Slurm's proctrack/linuxproc), the copy is dropped, so that tracing
 * never adds a delivery the program would not have had (docs/collector.md, "Signals").
 */
#ifndef TALLY_COMMON_FORWARD_H
#define TALLY_COMMON_FORWARD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define TALLY_FORWARD_MAGIC 0x7a11f0d5u

/* The value of a forwarded copy of a signal that sender sent. */
static inline union sigval tally_forward_value(int sender)
{
	union sigval v;

	v.sival_ptr = (void *)(uintptr_t)((uint64_t)TALLY_FORWARD_MAGIC << 32 | (uint32_t)sender);
	return v;
}

/* Is info a copy forwarded by forwarder (the pid of tally record)?  *sender: the original's. */
static inline bool tally_forwarded(const siginfo_t *info, int forwarder, int *sender)
{
	uint64_t v;

	if (!info || info->si_code != SI_QUEUE || info->si_pid != forwarder || forwarder <= 1)
		return false;
	v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
	if (v >> 32 != TALLY_FORWARD_MAGIC)
		return false;
	*sender = (int)(uint32_t)v;
	return true;
}

#endif
