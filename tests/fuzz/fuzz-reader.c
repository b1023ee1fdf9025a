/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the reader: any bytes, as a file, must read without a crash, a hang, a leak or
 * undefined behaviour, and the verdict on whatever sections come out must be computable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "verdict.h"

static int count(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		(void)tally_section_string(s, r[i].name_id);
	*(size_t *)ctx += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/tally-fuzz-XXXXXX";
	struct tally_file *f;
	size_t records = 0, i;
	struct tally_read_ops ops = {.records = count, .ctx = &records};
	int fd = mkstemp(path);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size)
		goto out;
	if (tally_file_open(&f, path, NULL, 0) == 0) {
		tally_file_read(f, &ops);
		for (i = 0; i < f->nsections; i++) {
			struct tally_verdict v;

			tally_verdict_compute(f, f->sections[i], &v);
			tally_verdict_fini(&v);
		}
		tally_file_close(f);
	}
out:
	close(fd);
	unlink(path);
	return 0;
}
