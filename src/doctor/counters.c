/* SPDX-License-Identifier: MIT */
/*
 * GPU counters: the driver's RmProfilingAdminOnly (module parameter
 * NVreg_RestrictProfilingToAdminUsers).  With it on, hardware metrics fail with ERR_NVGPUCTRPERM
 * for ordinary users.  tally's tracing reads no counter, so this is reported, never warned about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "remedies.h"

#define CAP_SYS_ADMIN_BIT 21

/* Does CapEff hold CAP_SYS_ADMIN (the driver counts that as admin)?  False if unknown. */
static bool is_admin(struct doctor_ctx *ctx)
{
	char text[8192], raw[64], *end;
	unsigned long long caps;

	if (doctor_read(ctx, "/proc/self/status", text, sizeof(text)) <= 0 ||
	    !doctor_field(text, "CapEff:", raw, sizeof(raw)))
		return false;
	caps = strtoull(raw, &end, 16);
	return end != raw && !*end && (caps & (1ull << CAP_SYS_ADMIN_BIT));
}

void check_counters_permission(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	static const char path[] = "/proc/driver/nvidia/params";
	char text[16384], val[64], *end;
	long v;
	int rc = doctor_read(ctx, path, text, sizeof(text));

	finding_why(f, "hardware metrics (tally record --gpu-metrics, ncu, nsys "
		       "--gpu-metrics-devices) read the GPU's "
		       "performance counters, which the driver can keep for admins; tracing "
		       "kernels, copies, API calls and NVTX reads none");
	finding_fix(f,
		    "nothing to do for tally's tracing. For hardware metrics (tally record "
		    "--gpu-metrics, ncu, nsys --gpu-metrics-devices): " TALLY_REMEDY_GPU_COUNTERS);
	if (rc == -ENOENT) {
		finding_source(f, "%s", path);
		finding_set(f, TALLY_DOCTOR_SKIP, "no %s: no NVIDIA kernel driver visible here",
			    path);
		return;
	}
	if (rc <= 0) {
		finding_unreadable(f, path, rc);
		return;
	}
	finding_source(f, "RmProfilingAdminOnly in %s", path);
	if (!doctor_field(text, "RmProfilingAdminOnly:", val, sizeof(val))) {
		finding_set(f, TALLY_DOCTOR_WARN, "no RmProfilingAdminOnly line in %s", path);
		return;
	}
	v = strtol(val, &end, 10);
	if (end == val || *end || (v != 0 && v != 1)) {
		finding_set(f, TALLY_DOCTOR_WARN, "malformed RmProfilingAdminOnly value \"%.16s\"",
			    val);
		return;
	}
	if (v == 0) {
		finding_set(f, TALLY_DOCTOR_OK,
			    "RmProfilingAdminOnly: 0: GPU counters open to every "
			    "user; not needed for cuda/nvtx tracing");
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK,
		    "RmProfilingAdminOnly: 1: GPU counters for admins only (ERR_NVGPUCTRPERM for "
		    "others)%s; not needed for cuda/nvtx tracing",
		    is_admin(ctx) ? ", and this process has CAP_SYS_ADMIN" : "");
	f->advise = !is_admin(ctx);
}
