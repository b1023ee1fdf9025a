/* SPDX-License-Identifier: MIT */
/*
 * cpu_sample_sum (docs/stats.md): where the host's samples fell, by function and by line, flat
 * (self: the innermost frame) and cumulative (total: anywhere on the stack, once per sample), for
 * Python samples (wall clock) and native samples (CPU time) apart, since their samples stand for
 * different time.  A section's samples are counted per stack id as they come (8 bytes per stack
 * of the section), and expanded into frames when it ends.
 */
#ifndef TALLY_STATS_SAMPLESUM_H
#define TALLY_STATS_SAMPLESUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

enum sample_sum_kind {
	SAMPLE_SUM_PYTHON,
	SAMPLE_SUM_NATIVE,
	SAMPLE_SUM_KINDS,
};

struct sample_sum_row {
	char *label;	 /* owned: "func (file:line)", or "func (file)" by function */
	uint8_t kind;	 /* enum sample_sum_kind */
	bool by_line;	 /* the row is a line (else a function) */
	uint64_t self;	 /* samples whose innermost frame this is */
	uint64_t total;	 /* samples with this anywhere on their stack */
	uint64_t on_cpu; /* of self: samples taken while the thread was on a CPU */
};

struct sample_sum;

struct sample_sum *sample_sum_new(void);
void sample_sum_free(struct sample_sum *s);
/* CPU_SAMPLE records are counted; others ignored.  0 or -ENOMEM. */
int sample_sum_add(struct sample_sum *s, const struct report_section *rs,
		   const struct tally_record *r, size_t n);
int sample_sum_section(struct sample_sum *s, struct report_section *rs);
/* Sort: by kind, then functions before lines, then self and total, descending. */
int sample_sum_finish(struct sample_sum *s);
const struct sample_sum_row *sample_sum_rows(const struct sample_sum *s, size_t *n);
/* All samples of a kind (the percentages' denominator). */
uint64_t sample_sum_samples(const struct sample_sum *s, enum sample_sum_kind k);

#endif
