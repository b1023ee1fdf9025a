/* SPDX-License-Identifier: MIT */
/* What the rules of the diagnosis share: the helpers of findings.c (below every rule), the step
 * rules (diagnosis-steps.c) that diagnosis.c's table calls. */
#ifndef TALLY_STATS_DIAGNOSIS_INT_H
#define TALLY_STATS_DIAGNOSIS_INT_H

#include "diagnosis.h"

/* findings.c */
/* The section of index i, or NULL. */
struct report_section *diag_sec(const struct diag_input *in, unsigned i);
/* "RANK=3 (pid 4242 on node7)", or "pid 4242 on node7" */
const char *diag_who(const struct diag_input *in, unsigned i, char *buf, size_t len);
/* Seconds since the one time origin of every output. */
double diag_at_s(const struct diag_input *in, uint64_t t);
/* A new finding of rule (ranked with the rules' findings by cost), or NULL when out is full. */
struct diag_finding *diag_add(struct diag_finding *out, size_t *n, size_t cap, const char *rule);
double diag_pct(uint64_t part, uint64_t whole);

/* The step rules (diagnosis-steps.c): what bounds the steps, start-up, the tail. */
int diag_rule_gpu_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			size_t cap);
int diag_rule_comm_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap);
int diag_rule_data_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap);
int diag_rule_launch_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			   size_t cap);
int diag_rule_sync_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap);
int diag_rule_wait_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap);
int diag_rule_dependency_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			       size_t cap);
int diag_rule_startup(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap);
int diag_rule_tail(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap);
/* "; of it 5.1 s in start-up, 0.4 s in the steps, 0.1 s in the tail" for a device's idle time. */
void diag_idle_phases(const struct diag_input *in, unsigned section, uint32_t device, char *buf,
		      size_t len);
/* " Its steps: data-bound, 58.1% of the step." for the straggler's process. */
void diag_steps_of(const struct diag_input *in, unsigned section, char *buf, size_t len);

#endif
