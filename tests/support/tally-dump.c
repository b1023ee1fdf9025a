/* SPDX-License-Identifier: MIT */
/*
 * tally-dump FILE [LIMIT]: every record of a trace, one line each, in file order (a debugging
 * aid for tests and probes; `tally export --format csv` is the user-facing way).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "reader.h"

static long limit = -1;

static int dump(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n && limit != 0; i++, limit--) {
		const char *name = tally_section_string(s, r[i].name_id);

		printf("%s start=%" PRIu64 " dur=%" PRIu64 " corr=%" PRIu32 " dev=%" PRIu32
		       " ctx=%" PRIu32 " stream=%" PRIu32 " pid=%" PRIu32 " tid=%" PRIu32
		       " cbid=%" PRIu32 " flags=%#x bytes=%" PRIu64 " graph=%" PRIu32 " name=%s\n",
		       tally_kind_name(r[i].kind), r[i].start, r[i].end - r[i].start,
		       r[i].correlation_id, r[i].device_id, r[i].context_id, r[i].stream_id,
		       r[i].process_id, r[i].thread_id, r[i].cbid, r[i].flags, r[i].bytes,
		       r[i].graph_id, name ? name : "-");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tally_read_ops ops = {.records = dump};
	struct tally_file *f;
	char err[512];

	if (argc < 2) {
		fprintf(stderr, "usage: tally-dump FILE [LIMIT]\n");
		return 2;
	}
	if (argc > 2)
		limit = atol(argv[2]);
	if (tally_file_open(&f, argv[1], err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 3;
	}
	tally_file_read(f, &ops);
	tally_file_close(f);
	return 0;
}
