/* SPDX-License-Identifier: MIT */
/*
 * Fixes that both `tally doctor` and the collector's notes give, worded once.
 */
#ifndef TALLY_COMMON_REMEDIES_H
#define TALLY_COMMON_REMEDIES_H

/* The driver keeps the GPU's performance counters for administrators (RmProfilingAdminOnly 1,
 * ERR_NVGPUCTRPERM, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES). */
#define TALLY_REMEDY_GPU_COUNTERS                                                                  \
	"on the host, `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "                  \
	"/etc/modprobe.d/, then reload the nvidia module (or reboot); or run with CAP_SYS_ADMIN "  \
	"(a container: --cap-add SYS_ADMIN); shared clusters and cloud platforms rarely allow "    \
	"it: ask the admins. `tally doctor` checks it (counters.permission)"

#endif
