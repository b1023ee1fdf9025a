/* SPDX-License-Identifier: MIT */
/* Which job this process belongs to; see jobkeys.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobkeys.h"
#include "tally-format.h"

static const char *const job_vars[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID",
				       "FLUX_JOB_ID",  "JOB_ID",    NULL};
static const char *const step_vars[] = {"SLURM_STEP_ID", NULL};
static const char *const run_vars[] = {"TORCHELASTIC_RUN_ID", NULL};
static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
					"PMI_SIZE", NULL};

static const struct {
	unsigned key;
	const char *const *vars;
} job_keys[] = {
    {TALLY_SK_JOB, job_vars},
    {TALLY_SK_JOB_STEP, step_vars},
    {TALLY_SK_RUN_ID, run_vars},
    {TALLY_SK_WORLD_SIZE, size_vars},
};

void tally_job_keys(struct tally_buf *b)
{
	char text[256];
	size_t k, i;

	for (k = 0; k < sizeof(job_keys) / sizeof(job_keys[0]); k++)
		for (i = 0; job_keys[k].vars[i]; i++) {
			const char *v = getenv(job_keys[k].vars[i]);

			/* torchrun's run id is "none" unless one is given (--rdzv-id): not an id */
			if (v && *v && strcmp(v, "none") != 0) {
				snprintf(text, sizeof(text), "%s=%s", job_keys[k].vars[i], v);
				tally_kv_str(b, job_keys[k].key, text);
				break;
			}
		}
}
