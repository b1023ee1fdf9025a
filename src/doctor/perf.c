/* SPDX-License-Identifier: MIT */
/*
 * CPU sampling: kernel.perf_event_paranoid, CAP_SYS_ADMIN / CAP_PERFMON in the effective set, and
 * seccomp.  These decide whether perf_event_open works, which tally uses only for native host
 * samples (`tally record --sample native`); where it is closed, tally samples with a per-thread
 * CPU-time timer instead.  cuda/nvtx tracing (CUPTI) and Python sampling need none of it.  So
 * these checks say what they see and which sampling tally will use, and never warn or block;
 * the remedy is for whoever wants perf's own view (kernel frames, time off CPU) or another tool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT	  38 /* Linux 5.8 */

#define NOT_NEEDED "not needed for cuda/nvtx tracing or Python sampling"

static const char perf_fix[] =
    "nothing to do for tally. For CPU sampling with other tools: on the host, `sysctl "
    "kernel.perf_event_paranoid=2` (a container cannot change it: /proc/sys is the host's), "
    "or give the process CAP_PERFMON or CAP_SYS_ADMIN (`docker run --cap-add=SYS_ADMIN`, "
    "Kubernetes securityContext.capabilities.add: [\"SYS_ADMIN\"]); or keep sampling off "
    "(`nsys --sample=none`)";

/* A whole-file integer: "2\n" is 2; "", "abc" and "2x" are not numbers. */
static bool parse_int(const char *text, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(text, &end, 10);
	if (errno || end == text)
		return false;
	while (*end == '\n' || *end == ' ' || *end == '\t')
		end++;
	return *end == '\0';
}

/* CapEff from ROOT/proc/self/status.  0, or -errno / -EINVAL (no or bad CapEff line). */
static int read_capeff(struct doctor_ctx *ctx, uint64_t *caps, char *raw, size_t rawlen)
{
	char text[8192], *end;
	int rc = doctor_read(ctx, "/proc/self/status", text, sizeof(text));

	if (rc <= 0)
		return rc;
	if (!doctor_field(text, "CapEff:", raw, rawlen))
		return -EINVAL;
	errno = 0;
	*caps = strtoull(raw, &end, 16);
	if (errno || end == raw || *end)
		return -EINVAL;
	return 1;
}

/* Does this process hold CAP_PERFMON or CAP_SYS_ADMIN?  False when it cannot be told. */
static bool has_perf_caps(struct doctor_ctx *ctx)
{
	char raw[64];
	uint64_t caps = 0;

	return read_capeff(ctx, &caps, raw, sizeof(raw)) > 0 &&
	       (caps & ((1ull << CAP_SYS_ADMIN_BIT) | (1ull << CAP_PERFMON_BIT)));
}

/* perf_event_paranoid, or -1 when it cannot be read. */
static long paranoid(struct doctor_ctx *ctx)
{
	char text[64];
	long level;

	if (doctor_read(ctx, "/proc/sys/kernel/perf_event_paranoid", text, sizeof(text)) <= 0 ||
	    !parse_int(text, &level))
		return -1;
	return level;
}

static const char *paranoid_meaning(long level)
{
	if (level <= 0)
		return "CPU sampling open to every user";
	if (level == 1)
		return "CPU sampling open to every user, kernel profiling restricted";
	if (level == 2)
		return "user-space CPU sampling allowed (nsys asks for 2 or lower)";
	return "perf_event_open closed to unprivileged users (Debian/Ubuntu hardening)";
}

/* Seccomp mode 2 (a filter), which may refuse perf_event_open whatever the sysctl says. */
static bool seccomp_filtered(struct doctor_ctx *ctx)
{
	char text[8192], mode[32];

	return doctor_read(ctx, "/proc/self/status", text, sizeof(text)) > 0 &&
	       doctor_field(text, "Seccomp:", mode, sizeof(mode)) && atoi(mode) == 2;
}

/* What `tally record --sample native` will use here (docs/doctor.md, gate 2). */
static const char *native_sampling(struct doctor_ctx *ctx, long level)
{
	if (level > 2 && !has_perf_caps(ctx))
		return "tally --sample native uses the timer fallback (a CPU-time timer per "
		       "thread: no kernel frames, no time off CPU in native stacks)";
	if (seccomp_filtered(ctx))
		return "tally --sample native uses perf events, or the timer fallback (no kernel "
		       "frames, no time off CPU) if the seccomp filter refuses perf_event_open";
	return "tally --sample native uses perf events (user-space callchains)";
}

void check_perf_paranoid(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	static const char path[] = "/proc/sys/kernel/perf_event_paranoid";
	char text[64];
	long level;
	int rc = doctor_read(ctx, path, text, sizeof(text));

	finding_why(f, "native CPU sampling (tally record --sample native, nsys --sample, perf "
		       "record) uses perf_event_open; where it is closed, tally samples with a "
		       "CPU-time timer per thread instead, which sees no kernel frames and no time "
		       "off CPU; cuda/nvtx tracing (CUPTI) and Python sampling need no perf "
		       "permission");
	finding_fix(f, "%s", perf_fix);
	if (rc <= 0) {
		finding_unreadable(f, path, rc);
		return;
	}
	finding_source(f, "%s", path);
	if (!parse_int(text, &level)) {
		text[strcspn(text, "\n")] = '\0';
		finding_set(f, TALLY_DOCTOR_WARN, "malformed value \"%.32s\" in %s; " NOT_NEEDED,
			    text, path);
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%ld: %s; %s; " NOT_NEEDED, level, paranoid_meaning(level),
		    native_sampling(ctx, level));
	f->advise = level > 2 && !has_perf_caps(ctx);
}

void check_perf_caps(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	static const char path[] = "/proc/self/status";
	uint64_t caps = 0;
	char raw[64];
	int rc = read_capeff(ctx, &caps, raw, sizeof(raw));
	bool admin, perfmon;

	finding_why(f, "CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN lets a process use "
		       "perf_event_open whatever perf_event_paranoid says, and counts as admin for "
		       "GPU counters; tally needs neither");
	finding_fix(f,
		    "nothing to do for tally. For CPU sampling or GPU counters with other "
		    "tools: `docker run --cap-add=SYS_ADMIN` (or `--cap-add=PERFMON`), Kubernetes "
		    "securityContext.capabilities.add: [\"SYS_ADMIN\"]; SYS_ADMIN is a big key: "
		    "ask your infra team first");
	finding_source(f, "CapEff in %s", path);
	if (rc == -EINVAL) {
		finding_set(f, TALLY_DOCTOR_WARN, "no readable CapEff line in %s; " NOT_NEEDED,
			    path);
		return;
	}
	if (rc <= 0) {
		finding_unreadable(f, path, rc);
		return;
	}
	admin = caps & (1ull << CAP_SYS_ADMIN_BIT);
	perfmon = caps & (1ull << CAP_PERFMON_BIT);
	finding_set(f, TALLY_DOCTOR_OK, "CapEff %s: %s; " NOT_NEEDED, raw,
		    admin && perfmon ? "CAP_SYS_ADMIN and CAP_PERFMON"
		    : admin	     ? "CAP_SYS_ADMIN, no CAP_PERFMON"
		    : perfmon	     ? "CAP_PERFMON, no CAP_SYS_ADMIN"
				     : "neither CAP_SYS_ADMIN nor CAP_PERFMON");
	/* Only where perf_event_paranoid closes the door do the capabilities matter. */
	f->advise = !admin && !perfmon && paranoid(ctx) > 2;
}

void check_perf_seccomp(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	static const char path[] = "/proc/self/status";
	char text[8192], mode[32], filters[32];
	long m;
	int rc = doctor_read(ctx, path, text, sizeof(text));

	finding_why(f,
		    "a seccomp filter can refuse perf_event_open even with --cap-add (Docker's "
		    "default profile lets it through only with added capabilities; stricter site "
		    "profiles block it outright); CUPTI tracing makes no such call");
	finding_fix(f, "nothing to do for tally. For CPU sampling with other tools: `docker run "
		       "--security-opt seccomp=unconfined`, or a profile that allows "
		       "perf_event_open; a site policy is for your infra team");
	if (rc <= 0) {
		finding_unreadable(f, path, rc);
		return;
	}
	finding_source(f, "Seccomp in %s", path);
	if (!doctor_field(text, "Seccomp:", mode, sizeof(mode))) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no Seccomp line in %s (kernel without seccomp)",
			    path);
		return;
	}
	if (!parse_int(mode, &m) || m < 0 || m > 2) {
		finding_set(f, TALLY_DOCTOR_WARN, "malformed Seccomp value \"%.16s\"; " NOT_NEEDED,
			    mode);
		return;
	}
	if (!doctor_field(text, "Seccomp_filters:", filters, sizeof(filters)))
		snprintf(filters, sizeof(filters), "?");
	if (m == 0)
		finding_set(f, TALLY_DOCTOR_OK, "0: no seccomp filter; " NOT_NEEDED);
	else if (m == 1)
		finding_set(f, TALLY_DOCTOR_OK, "1: strict mode; " NOT_NEEDED);
	else
		finding_set(f, TALLY_DOCTOR_OK,
			    "2: filtered (%s filter(s)): perf_event_open may be "
			    "refused; " NOT_NEEDED,
			    filters);
	f->advise = m != 0;
}
