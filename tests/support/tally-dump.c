/* SPDX-License-Identifier: MIT */
/*
 * tally-dump FILE [LIMIT]: every record of a trace, one line each, in file order (a debugging
 * aid for tests and probes; `tally export --format csv` is the user-facing way).
 *
 * tally-dump --host FILE: the host records of format 1.3, for the sampling tests: one line per
 * CPU_SAMPLE and OSRT record, with the thread, the state or call, and the stack frame by frame
 * ("py:FILE:LINE:FUNC", "pc:MODULE:0xOFFSET" for the innermost native frame, the instruction
 * itself, "ra:MODULE:0xOFFSET" for a return address: offsets are ELF addresses in the module),
 * then the THREADS entries ("thread TID PTHREAD FLAGS NAME").  Times are the records' own (the
 * section's record clock, CLOCK_REALTIME for a session started at load), durations in ns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void frame(const struct tally_section *s, uint32_t id)
{
	const struct tally_frame *f = tally_frame_get(&s->stacks, id);
	const struct tally_module *m;
	const char *base;

	if (!f) {
		printf(" lost");
		return;
	}
	if (f->type == TALLY_FRAME_PYTHON) {
		printf(" py:%s:%u:%s", f->file, f->line, f->func);
		return;
	}
	m = tally_module_of(&s->stacks, f->pc);
	base = m ? strrchr(m->path, '/') : NULL;
	printf(" %s:%s:0x%" PRIx64, f->type == TALLY_FRAME_NATIVE_PC ? "pc" : "ra",
	       m ? (base ? base + 1 : m->path) : "?", m ? f->pc - m->base : f->pc);
}

static int dump_host(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n; i++) {
		const struct tally_stack *st = tally_stack_get(&s->stacks, r[i].stack_id);
		uint32_t k;

		if (r[i].kind == TALLY_KIND_CPU_SAMPLE)
			printf("sample %" PRIu64 " dur=%" PRIu64 " tid=%" PRIu32
			       " source=%u state=%u flags=%#x stack",
			       r[i].start, r[i].end - r[i].start, r[i].thread_id, r[i].subkind,
			       r[i].value, r[i].flags);
		else if (r[i].kind == TALLY_KIND_OSRT)
			printf("osrt %" PRIu64 " dur=%" PRIu64 " tid=%" PRIu32
			       " call=%s ret=%d err=%u object=%#" PRIx64,
			       r[i].start, r[i].end - r[i].start, r[i].thread_id,
			       tally_section_string(s, r[i].name_id)
				   ? tally_section_string(s, r[i].name_id)
				   : "?",
			       (int32_t)r[i].value, r[i].subkind, r[i].address);
		else
			continue;
		for (k = 0; st && k < st->nframes; k++)
			frame(s, st->frames[k]);
		printf("\n");
	}
	return 0;
}

static int host(const char *path)
{
	struct tally_read_ops ops = {.records = dump_host};
	struct tally_file *f;
	char err[512];
	size_t i, j;

	if (tally_file_open(&f, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 3;
	}
	tally_file_read(f, &ops);
	for (i = 0; i < f->nsections; i++)
		for (j = 0; j < f->sections[i]->nthreads; j++) {
			const struct tally_thread *t = &f->sections[i]->threads[j];

			printf("thread %" PRIu32 " %#lx %#x %s\n", t->tid,
			       (unsigned long)t->pthread_id, t->flags, t->name ? t->name : "");
		}
	tally_file_close(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct tally_read_ops ops = {.records = dump};
	struct tally_file *f;
	char err[512];

	if (argc < 2) {
		fprintf(stderr, "usage: tally-dump FILE [LIMIT] | tally-dump --host FILE\n");
		return 2;
	}
	if (strcmp(argv[1], "--host") == 0 && argc > 2)
		return host(argv[2]);
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
