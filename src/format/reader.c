/* SPDX-License-Identifier: MIT */
/* The .tally reader; see reader.h and docs/format.md. */
#include "reader.h"
#include "payloads.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "codec.h"
#include "summary.h"
#include "writer.h"

#define READ_WINDOW	  (1u << 20)
#define PROGRESS_INTERVAL (64ull << 20)

/*
 * A read is two stages (reader.h): the framer finds the intact chunks and the damage between them
 * and decodes RECORDS payloads, touching nothing of the file's summary; the applier takes those
 * items in order and builds the summary and calls the caller back.  tally_file_read runs both on
 * one thread, item by item; a caller may run framers of many files on other threads.
 */
struct tally_framer {
	struct tally_file *f;
	struct tally_codec codec;
	struct tally_record *recs;
	size_t recs_cap;
	bool have_seq;
	uint32_t last_seq;
};

/* State of the applier (kept off struct tally_file so the public struct stays a summary). */
struct read_state {
	struct tally_file *f;
	const struct tally_read_ops *ops;
	struct tally_section *cur;
	uint64_t next_progress;
	/* payload bytes that may still define string, frame and stack ids, for every section */
	uint64_t id_budget;
	/* the SYMBOLS chunk that ends the file, read ahead: given to its section at its SESSION */
	uint8_t *ahead;
	size_t ahead_len;
};

const char *tally_damage_kind_name(enum tally_damage_kind k)
{
	switch (k) {
	case TALLY_DAMAGE_TRUNCATED:
		return "truncated";
	case TALLY_DAMAGE_CORRUPT:
		return "corrupt";
	case TALLY_DAMAGE_SEQ_GAP:
		return "missing-chunks";
	case TALLY_DAMAGE_PAYLOAD:
		return "bad-payload";
	case TALLY_DAMAGE_PARTIAL:
		return "partial-chunk";
	}
	return "unknown";
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Make bytes [off, off+n) of the file available; returns a pointer into the read buffer, or NULL
 * if the file ends first (*got then says how many bytes there are) or on an I/O error (errno set).
 */
static const uint8_t *file_bytes(struct tally_file *f, uint64_t off, size_t n, size_t *got)
{
	size_t want;

	*got = 0;
	if (off >= f->size)
		return NULL;
	if (off >= f->buf_base && off + n <= f->buf_base + f->buf_len) {
		*got = n;
		return f->buf + (off - f->buf_base);
	}
	want = n > READ_WINDOW ? n : READ_WINDOW;
	if (want > f->size - off)
		want = (size_t)(f->size - off);
	if (want > f->buf_cap) {
		uint8_t *b = tally_resize(f->buf, want, 1);

		if (!b)
			return NULL;
		f->buf = b;
		f->buf_cap = want;
	}
	f->buf_base = off;
	f->buf_len = 0;
	while (f->buf_len < want) {
		ssize_t r =
		    pread(f->fd, f->buf + f->buf_len, want - f->buf_len, (off_t)(off + f->buf_len));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		f->buf_len += (size_t)r;
	}
	*got = f->buf_len < n ? f->buf_len : n;
	return f->buf_len >= n ? f->buf : NULL;
}

int tally_file_open(struct tally_file **ret, const char *path, char *err, size_t errlen)
{
	struct tally_file *f;
	const uint8_t *p;
	struct stat st;
	size_t got;
	int rc;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
	 * fstat below then turns away everything that is not a regular file. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f->fd < 0) {
		rc = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		goto free_file;
	}
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		set_err(err, errlen, "%s: not a regular file", path);
		goto close_fd;
	}
	(void)fcntl(f->fd, F_SETFL, 0);
	f->size = (uint64_t)st.st_size;
	f->path = strdup(path);
	p = file_bytes(f, 0, TALLY_PREAMBLE_LEN, &got);
	if (!p || memcmp(p, TALLY_MAGIC, TALLY_MAGIC_LEN) != 0) {
		rc = -EPROTO;
		set_err(err, errlen, "%s: not a tally trace (%s)", path,
			f->size == 0 ? "empty file" : "no tally magic at offset 0");
		goto close_fd;
	}
	f->format_major = p[8] | p[9] << 8;
	f->format_minor = p[10] | p[11] << 8;
	if (f->format_major != TALLY_FORMAT_MAJOR || get_le32(p + 12) != 0) {
		rc = -ENOTSUP;
		set_err(
		    err, errlen,
		    "%s: format %u.%u (features %#x) is not readable by this tally (format %d.%d): "
		    "use a tally at least as new as the one that wrote it",
		    path, f->format_major, f->format_minor, get_le32(p + 12), TALLY_FORMAT_MAJOR,
		    TALLY_FORMAT_MINOR);
		goto close_fd;
	}
	f->intact_end = TALLY_PREAMBLE_LEN;
	*ret = f;
	return 0;
close_fd:
	close(f->fd);
	f->fd = -1;
free_file:
	tally_file_close(f);
	return rc;
}

static void free_section(struct tally_section *s)
{
	size_t i;

	if (!s)
		return;
	free(s->writer);
	free(s->host);
	free(s->cmdline);
	free(s->rank);
	free(s->config);
	free(s->source);
	free(s->exe);
	free(s->output);
	free(s->output_fs);
	free(s->job);
	free(s->job_step);
	free(s->run_id);
	free(s->world_size);
	free(s->sample_mechanism);
	for (i = 0; i < s->nthreads; i++)
		free(s->threads[i].name);
	free(s->threads);
	for (i = 0; i < s->ndevices; i++) {
		free(s->devices[i].name);
		free(s->devices[i].pci_bus);
	}
	free(s->devices);
	free(s->clocks);
	for (i = 0; i < s->nnotes; i++) {
		free(s->notes[i].code);
		free(s->notes[i].text);
	}
	free(s->notes);
	free(s->windows);
	free(s->drops);
	free(s->gpu_metrics_asked);
	free(s->gpu_metrics_set);
	for (i = 0; i < s->ngpu_metrics; i++)
		tally_gpu_metrics_fini(&s->gpu_metrics[i]);
	free(s->gpu_metrics);
	for (i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	tally_stack_tables_fini(&s->stacks);
	tally_summary_facts_free(s->facts);
	free(s);
}

void tally_file_close(struct tally_file *f)
{
	size_t i;

	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	for (i = 0; i < f->nsections; i++)
		free_section(f->sections[i]);
	free(f->sections);
	free(f->damage);
	free(f->buf);
	free(f->path);
	free(f);
}

void tally_file_drop_window(struct tally_file *f)
{
	free(f->buf);
	f->buf = NULL;
	f->buf_cap = f->buf_len = 0;
	f->buf_base = 0;
}

uint64_t tally_section_origin(const struct tally_section *s)
{
	uint64_t t0 = s->start_cupti ? s->start_cupti : UINT64_MAX;

	if (s->t_min < t0)
		t0 = s->t_min;
	return t0 == UINT64_MAX ? 0 : t0;
}

const char *tally_section_string(const struct tally_section *s, uint32_t id)
{
	return id && id < s->nstrings ? s->strings[id] : NULL;
}

/* A NUL-terminated copy of a bytes entry; NULL for an entry of another type. */
static char *dup_bytes(const struct tally_kv *kv)
{
	char *s;

	if (kv->type != TALLY_KV_BYTES || (!kv->ptr && kv->len))
		return NULL;
	s = malloc(kv->len + 1);
	if (s) {
		if (kv->len)
			memcpy(s, kv->ptr, kv->len);
		s[kv->len] = '\0';
	}
	return s;
}

static void add_damage(struct read_state *st, enum tally_damage_kind kind, uint64_t off,
		       uint64_t end, uint32_t missing)
{
	struct tally_damage *d = tally_array_push(&st->f->damage, &st->f->ndamage, sizeof(*d));

	if (!d)
		return;
	d->kind = kind;
	d->offset = off;
	d->end = end;
	d->missing = missing;
	d->section = st->cur ? (int)st->cur->index : -1;
}

static struct tally_section *new_section(struct read_state *st, uint64_t offset, bool implicit)
{
	struct tally_file *f = st->f;
	struct tally_section *s = calloc(1, sizeof(*s));
	struct tally_section **slot;

	if (!s)
		return NULL;
	slot = tally_array_push(&f->sections, &f->nsections, sizeof(*slot));
	if (!slot) {
		free(s);
		return NULL;
	}
	*slot = s;
	s->index = (unsigned)(f->nsections - 1);
	s->offset = offset;
	s->implicit = implicit;
	s->t_min = UINT64_MAX;
	st->cur = s;
	return s;
}

/* The section chunks belong to; one is made up if the SESSION chunk was lost. */
static struct tally_section *current_section(struct read_state *st)
{
	return st->cur ? st->cur : new_section(st, 0, true);
}

/* Where each SESSION key lands in struct tally_section (docs/format.md §5). */
enum field_type { F_STR, F_U64, F_S64, F_BOOL, F_ID };

static const struct session_field {
	unsigned key;
	enum field_type type;
	size_t offset;
	size_t flag; /* F_ID: offset of the bool that says it is there */
} session_fields[] = {
#define STR(k, m)                                                                                  \
	{                                                                                          \
		k, F_STR, offsetof(struct tally_section, m), 0                                     \
	}
#define U64(k, m)                                                                                  \
	{                                                                                          \
		k, F_U64, offsetof(struct tally_section, m), 0                                     \
	}
    STR(TALLY_SK_WRITER, writer),
    STR(TALLY_SK_HOST, host),
    STR(TALLY_SK_CMDLINE, cmdline),
    STR(TALLY_SK_RANK, rank),
    STR(TALLY_SK_CONFIG, config),
    STR(TALLY_SK_SOURCE, source),
    STR(TALLY_SK_EXE, exe),
    STR(TALLY_SK_OUTPUT, output),
    STR(TALLY_SK_OUTPUT_FS, output_fs),
    U64(TALLY_SK_CLOSE_RESERVE, close_reserve),
    U64(TALLY_SK_CLOSE_RESERVE_ERRNO, close_reserve_errno),
    STR(TALLY_SK_GPU_METRICS, gpu_metrics_asked),
    STR(TALLY_SK_GPU_METRICS_SET, gpu_metrics_set),
    U64(TALLY_SK_GPU_METRICS_HZ, gpu_metrics_hz),
    STR(TALLY_SK_JOB, job),
    STR(TALLY_SK_JOB_STEP, job_step),
    STR(TALLY_SK_RUN_ID, run_id),
    STR(TALLY_SK_WORLD_SIZE, world_size),
    U64(TALLY_SK_PID, pid),
    U64(TALLY_SK_PPID, ppid),
    U64(TALLY_SK_START_REALTIME, start_realtime),
    U64(TALLY_SK_START_MONOTONIC, start_monotonic),
    U64(TALLY_SK_START_CUPTI, start_cupti),
    U64(TALLY_SK_DRIVER_VERSION, driver_version),
    U64(TALLY_SK_RUNTIME_VERSION, runtime_version),
    U64(TALLY_SK_CUPTI_VERSION, cupti_version),
    U64(TALLY_SK_KINDS, kinds),
    U64(TALLY_SK_SLICE_NS, slice_ns),
    U64(TALLY_SK_SAMPLE, sample),
    U64(TALLY_SK_SAMPLE_RATE, sample_rate),
    STR(TALLY_SK_SAMPLE_MECHANISM, sample_mechanism),
    U64(TALLY_SK_OSRT_THRESHOLD, osrt_threshold),
    U64(TALLY_SK_SAMPLE_SIGNAL, sample_signal),
    {TALLY_SK_MERGED, F_BOOL, offsetof(struct tally_section, merged), 0},
    {TALLY_SK_SUMMARY, F_BOOL, offsetof(struct tally_section, summary), 0},
    {TALLY_SK_MERGE_OFFSET, F_S64, offsetof(struct tally_section, merge_offset), 0},
    {TALLY_SK_SESSION_ID, F_ID, offsetof(struct tally_section, session_id),
     offsetof(struct tally_section, has_session_id)},
    {TALLY_SK_PARENT_ID, F_ID, offsetof(struct tally_section, parent_id),
     offsetof(struct tally_section, has_parent)},
#undef STR
#undef U64
};

static void set_session_field(struct tally_section *s, const struct session_field *f,
			      const struct tally_kv *kv)
{
	char *base = (char *)s, **str;

	switch (f->type) {
	case F_STR:
		if (kv->type != TALLY_KV_BYTES)
			return;
		str = (char **)(void *)(base + f->offset);
		free(*str);
		*str = dup_bytes(kv);
		/* Arguments are NUL-separated on disk; readers show them space-separated. */
		for (size_t i = 0; *str && f->key == TALLY_SK_CMDLINE && i < kv->len; i++)
			if ((*str)[i] == '\0')
				(*str)[i] = ' ';
		return;
	case F_U64:
		memcpy(base + f->offset, &kv->u, sizeof(uint64_t));
		return;
	case F_S64:
		memcpy(base + f->offset, &kv->s, sizeof(int64_t));
		return;
	case F_BOOL:
		*(bool *)(void *)(base + f->offset) = kv->u != 0;
		return;
	case F_ID:
		if (kv->type == TALLY_KV_BYTES && kv->len == 16) {
			memcpy(base + f->offset, kv->ptr, 16);
			*(bool *)(void *)(base + f->flag) = true;
		}
		return;
	}
}

static void parse_session(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_kv kv;
	size_t i;

	while (tally_kv_next(&c, &kv)) {
		for (i = 0; i < sizeof(session_fields) / sizeof(session_fields[0]); i++)
			if (session_fields[i].key == kv.key)
				break;
		if (i == sizeof(session_fields) / sizeof(session_fields[0]))
			s->unknown_keys++;
		else
			set_session_field(s, &session_fields[i], &kv);
	}
}

static void parse_device(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_device *d = tally_array_push(&s->devices, &s->ndevices, sizeof(*d));
	struct tally_kv kv;

	if (!d)
		return;
	while (tally_kv_next(&c, &kv)) {
		switch (kv.key) {
		case TALLY_DK_ID:
			d->id = (uint32_t)kv.u;
			break;
		case TALLY_DK_NAME:
			free(d->name);
			d->name = dup_bytes(&kv);
			break;
		case TALLY_DK_PCI_BUS:
			free(d->pci_bus);
			d->pci_bus = dup_bytes(&kv);
			break;
		case TALLY_DK_UUID:
			if (kv.len == 16) {
				memcpy(d->uuid, kv.ptr, 16);
				d->has_uuid = true;
			}
			break;
		case TALLY_DK_CC_MAJOR:
			d->cc_major = (uint32_t)kv.u;
			break;
		case TALLY_DK_CC_MINOR:
			d->cc_minor = (uint32_t)kv.u;
			break;
		case TALLY_DK_GLOBAL_MEM:
			d->global_mem = kv.u;
			break;
		case TALLY_DK_SM_COUNT:
			d->sm_count = (uint32_t)kv.u;
			break;
		default:
			s->unknown_keys++;
		}
	}
}

static void parse_clock(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_clock *k = tally_array_push(&s->clocks, &s->nclocks, sizeof(*k));
	struct tally_kv kv;

	if (!k)
		return;
	while (tally_kv_next(&c, &kv)) {
		if (kv.key == TALLY_CK_CUPTI)
			k->cupti = kv.u;
		else if (kv.key == TALLY_CK_REALTIME)
			k->realtime = kv.u;
		else if (kv.key == TALLY_CK_MONOTONIC)
			k->monotonic = kv.u;
		else
			s->unknown_keys++;
	}
}

/* A session that began before CUDA wrote its SESSION chunk without CUDA's versions; its
 * cupti-joined note says them, in the text's fixed form ("... CUPTI API version V (PATH), CUDA
 * driver D"), and the section takes them from it. */
static void versions_from_note(struct tally_section *s, const struct tally_note *n)
{
	const char *api, *drv;
	unsigned long long v;

	if (!n->code || !n->text || strcmp(n->code, "cupti-joined") != 0 || s->cupti_version)
		return;
	api = strstr(n->text, "CUPTI API version ");
	drv = strstr(n->text, "), CUDA driver ");
	if (api && sscanf(api + strlen("CUPTI API version "), "%llu", &v) == 1)
		s->cupti_version = v;
	if (drv && !s->driver_version && sscanf(drv + strlen("), CUDA driver "), "%llu", &v) == 1)
		s->driver_version = v;
}

static void parse_note(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_note *n = tally_array_push(&s->notes, &s->nnotes, sizeof(*n));
	struct tally_kv kv;

	if (!n)
		return;
	while (tally_kv_next(&c, &kv)) {
		if (kv.key == TALLY_NK_TIME)
			n->time = kv.u;
		else if (kv.key == TALLY_NK_SEVERITY)
			n->severity = (unsigned)kv.u;
		else if (kv.key == TALLY_NK_CODE && !n->code)
			n->code = dup_bytes(&kv);
		else if (kv.key == TALLY_NK_TEXT && !n->text)
			n->text = dup_bytes(&kv);
		else
			s->unknown_keys++;
	}
	versions_from_note(s, n);
}

/*
 * Every string id costs at least one byte of some STRINGS payload before it, so ids beyond what
 * the file's bytes could hold are damage.  The budget is the file's, shared by every section (and
 * the frame and stack tables): checking it before growing the table keeps memory proportional to
 * the file, however many sections each claim a first id near the file's size.
 */
static bool parse_strings(struct tally_section *s, const uint8_t *p, size_t len, uint64_t *budget)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t first = tally_cur_varint(&c), count = tally_cur_varint(&c), i;
	uint64_t need = first + count;

	/* A first id below the table's end defines an id again, or one a record may already have
	 * named as lost: the writer never does either, so every reader would name it two ways. */
	if (c.bad || first == 0 || first < s->nstrings || count > len || first > *budget ||
	    need > TALLY_STRING_ID_MAX || (need > s->nstrings && need - s->nstrings > *budget))
		return false;
	if (need > s->nstrings) {
		char **t = tally_resize(s->strings, (size_t)need, sizeof(*t));

		if (!t)
			return false;
		memset(t + s->nstrings, 0, (need - s->nstrings) * sizeof(*t));
		s->strings = t;
		*budget -= need - s->nstrings;
		s->nstrings = (uint32_t)need;
	}
	for (i = 0; i < count; i++) {
		struct tally_kv kv = {.type = TALLY_KV_BYTES, .len = (size_t)tally_cur_varint(&c)};

		kv.ptr = tally_cur_bytes(&c, kv.len);
		if (c.bad)
			return false;
		free(s->strings[first + i]);
		s->strings[first + i] = dup_bytes(&kv);
	}
	return c.p == c.end;
}

static void add_window(struct tally_section *s, uint64_t t0, uint64_t t1, unsigned counter,
		       uint64_t count)
{
	struct tally_window *w;

	/* Merge with the previous window of the same counter when they touch. */
	if (s->nwindows) {
		w = &s->windows[s->nwindows - 1];
		if (w->counter == counter && w->t_end == t0) {
			w->t_end = t1;
			w->count += count;
			return;
		}
	}
	w = tally_array_push(&s->windows, &s->nwindows, sizeof(*w));
	if (w)
		*w = (struct tally_window){t0, t1, counter, count};
}

static bool parse_ledger(struct tally_section *s, const uint8_t *p, size_t len, bool final)
{
	struct tally_ledger l;
	unsigned i;

	if (!tally_ledger_decode(p, len, final, &l))
		return false;
	/* Loss windows: the slices in which a loss counter grew (counters are cumulative). */
	for (i = 0; i < tally_loss_counters_count; i++) {
		unsigned id = tally_loss_counters[i];
		uint64_t before = s->ledgers ? s->ledger.v[id] : 0;

		if (l.v[id] > before && !(s->explicit_windows[id / 64] >> id % 64 & 1))
			add_window(s, s->ledgers ? s->ledger.t_end : l.t_begin, l.t_end, id,
				   l.v[id] - before);
	}
	s->ledger = l;
	s->ledgers++;
	/* The last ledger decides: a final one followed by more is an exec's that failed (the
	 * recording went on), and only a final one at the end closes the section. */
	s->has_final = final;
	return true;
}

static int by_tid_then_order(const void *a, const void *b)
{
	const struct tally_thread *x = *(const struct tally_thread *const *)a;
	const struct tally_thread *y = *(const struct tally_thread *const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x < y ? -1 : x > y; /* file order: the later entry last */
}

const struct tally_thread **tally_section_threads(const struct tally_section *s, size_t *n)
{
	const struct tally_thread **v;
	size_t i, k = 0;

	*n = 0;
	if (!s->nthreads)
		return NULL;
	v = malloc(s->nthreads * sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < s->nthreads; i++)
		v[i] = &s->threads[i];
	qsort(v, s->nthreads, sizeof(*v), by_tid_then_order);
	for (i = 0; i < s->nthreads; i++)
		if (i + 1 == s->nthreads || v[i + 1]->tid != v[i]->tid)
			v[k++] = v[i];
	*n = k;
	return v;
}

const struct tally_thread *tally_section_thread(const struct tally_section *s, uint32_t tid)
{
	size_t i;

	for (i = s->nthreads; i-- > 0;)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* GPU_METRICS (1.3): the last chunk of each device wins; at most TALLY_GPU_METRICS_MAX devices,
 * so a hostile file costs no memory. */
static bool parse_gpu_metrics(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_gpu_metrics g, *slot = NULL;
	bool ok = tally_gpu_metrics_decode(p, len, &g, &s->unknown_keys);
	size_t i;

	for (i = 0; i < s->ngpu_metrics && !slot; i++)
		if (s->gpu_metrics[i].device == g.device)
			slot = &s->gpu_metrics[i];
	if (slot)
		tally_gpu_metrics_fini(slot);
	else if (s->ngpu_metrics < TALLY_GPU_METRICS_MAX)
		slot = tally_array_push(&s->gpu_metrics, &s->ngpu_metrics, sizeof(*slot));
	if (slot)
		*slot = g;
	else
		tally_gpu_metrics_fini(&g);
	return ok;
}

/* A summary's SECTION part fills the section; the other parts are for the caller's chunk_payload
 * (the aggregates of tally stats).  Only a summary's section may carry them. */
static bool parse_summary(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t part = tally_cur_varint(&c);

	if (c.bad || !s->summary)
		return false;
	if (part == TALLY_SUMMARY_SECTION)
		return tally_summary_section_parse(s, c.p, (size_t)(c.end - c.p));
	return true;
}

static int handle_records(struct read_state *st, struct tally_section *s,
			  const struct tally_item *it)
{
	long n = it->nrecs, i;

	s->unknown_columns += it->unknown_columns;
	if (n < 0)
		return (int)n;
	for (i = 0; i < n; i++) {
		const struct tally_record *r = &it->recs[i];

		if (r->flags & TALLY_REC_BAD_TIME)
			continue;
		if (r->start < s->t_min)
			s->t_min = r->start;
		if (r->end > s->t_max)
			s->t_max = r->end;
	}
	if (it->kind < TALLY_KIND_MAX)
		s->records[it->kind] += (uint64_t)n;
	s->records_total += (uint64_t)n;
	st->f->records_total += (uint64_t)n;
	if (st->ops && st->ops->records && n > 0)
		return st->ops->records(st->ops->ctx, s, it->recs, (size_t)n);
	return 0;
}

/* The SYMBOLS chunk read ahead names the section of its session id (a damaged one, found again
 * in its place, is reported there). */
static void symbols_ahead(struct read_state *st, struct tally_section *s)
{
	const struct tally_symbols_info *info = &s->stacks.symbols_info;

	if (!st->ahead || !s->has_session_id ||
	    !tally_symbols_parse(&s->stacks, st->ahead, st->ahead_len))
		return;
	if (!info->has_session_id ||
	    memcmp(info->session_id, s->session_id, sizeof(s->session_id)) != 0) {
		tally_symbols_clear(&s->stacks);
		return;
	}
	free(st->ahead);
	st->ahead = NULL;
}

/* Returns a callback's non-zero value; damage inside a payload is recorded, not returned. */
static int handle_chunk(struct read_state *st, const struct tally_item *it)
{
	const struct tally_chunk_info *c = &it->info;
	const uint8_t *payload = it->payload;
	struct tally_section *s;
	bool ok = true;
	int rc = 0;

	if (c->type == TALLY_CHUNK_SESSION) {
		s = new_section(st, c->offset, false);
		if (!s)
			return -ENOMEM;
		parse_session(s, payload, c->len);
		s->chunks++;
		symbols_ahead(st, s);
		if (st->ops && st->ops->section)
			rc = st->ops->section(st->ops->ctx, st->f, s);
		return rc;
	}
	s = current_section(st);
	if (!s)
		return -ENOMEM;
	s->chunks++;
	switch (c->type) {
	case TALLY_CHUNK_STRINGS:
		ok = parse_strings(s, payload, c->len, &st->id_budget);
		break;
	case TALLY_CHUNK_RECORDS:
		rc = handle_records(st, s, it);
		ok = rc != -EINVAL;
		if (rc == -EINVAL)
			rc = 0;
		break;
	case TALLY_CHUNK_LEDGER:
		ok = parse_ledger(s, payload, c->len, c->flags & TALLY_CHUNK_FLAG_FINAL);
		break;
	case TALLY_CHUNK_DEVICE:
		parse_device(s, payload, c->len);
		break;
	case TALLY_CHUNK_CLOCK:
		parse_clock(s, payload, c->len);
		break;
	case TALLY_CHUNK_NOTE:
		parse_note(s, payload, c->len);
		break;
	case TALLY_CHUNK_LOSS:
		ok = tally_loss_decode(s, payload, c->len);
		break;
	case TALLY_CHUNK_FRAMES:
		ok = tally_frames_parse(&s->stacks, payload, c->len, &st->id_budget);
		break;
	case TALLY_CHUNK_STACKS:
		ok = tally_stacks_parse(&s->stacks, payload, c->len, &st->id_budget);
		break;
	case TALLY_CHUNK_MODULES:
		ok = tally_modules_parse(&s->stacks, payload, c->len);
		break;
	case TALLY_CHUNK_DROPS:
		ok = tally_drops_decode(s, payload, c->len);
		break;
	case TALLY_CHUNK_SUMMARY:
		ok = parse_summary(s, payload, c->len);
		break;
	case TALLY_CHUNK_THREADS:
		ok = tally_threads_decode(s, payload, c->len);
		break;
	case TALLY_CHUNK_GPU_METRICS:
		ok = parse_gpu_metrics(s, payload, c->len);
		break;
	case TALLY_CHUNK_SYMBOLS:
		ok = tally_symbols_parse(&s->stacks, payload, c->len);
		break;
	case TALLY_CHUNK_PROCESSES:
		ok = tally_processes_decode(s, payload, c->len);
		break;
	default:
		s->unknown_chunks++;
	}
	if (!ok) {
		s->bad_chunks++;
		add_damage(st, TALLY_DAMAGE_PAYLOAD, c->offset,
			   c->offset + TALLY_CHUNK_HEADER_LEN + c->len, 0);
	}
	return rc;
}

/* A damage item (the applier files it under the section it is in). */
static int emit_damage(struct tally_framer *fr, tally_item_fn emit, void *ctx, uint64_t at,
		       enum tally_damage_kind kind, uint64_t off, uint64_t end, uint32_t missing)
{
	struct tally_item it = {.type = TALLY_ITEM_DAMAGE,
				.at = at,
				.damage = kind,
				.off = off,
				.end = end,
				.missing = missing};

	(void)fr;
	return emit(ctx, &it);
}

static int check_sequence(struct tally_framer *fr, tally_item_fn emit, void *ctx, uint64_t off,
			  uint32_t seq)
{
	int rc = 0;

	if (fr->have_seq && seq != fr->last_seq + 1 && seq > fr->last_seq)
		rc = emit_damage(fr, emit, ctx, off, TALLY_DAMAGE_SEQ_GAP, off, off,
				 seq - fr->last_seq - 1);
	fr->have_seq = true;
	fr->last_seq = seq;
	return rc;
}

static bool header_ok(const uint8_t *h)
{
	return get_le32(h) == TALLY_CHUNK_SYNC &&
	       get_le32(h + 28) == (uint32_t)tally_checksum(h, 28);
}

/*
 * Up to max bytes from off (max >= a chunk header): the rest of the read buffer when it holds at
 * least a header there, else a fresh window.  Scans go through this so that each byte of the file
 * is read about once however many candidate headers there are.
 */
static const uint8_t *file_window(struct tally_file *f, uint64_t off, size_t max, size_t *got)
{
	if (off >= f->buf_base && off + TALLY_CHUNK_HEADER_LEN <= f->buf_base + f->buf_len) {
		size_t have = (size_t)(f->buf_base + f->buf_len - off);

		*got = have < max ? have : max;
		return f->buf + (off - f->buf_base);
	}
	return file_bytes(f, off, max < READ_WINDOW ? max : READ_WINDOW, got);
}

/* The offset of the first chunk header whose header check holds in [from, limit), or limit. */
static uint64_t next_header(struct tally_file *f, uint64_t from, uint64_t limit)
{
	while (from + TALLY_CHUNK_HEADER_LEN <= limit) {
		size_t n, got;
		const uint8_t *p = file_window(f, from, (size_t)(limit - from), &n);
		const uint8_t *q = p;

		if (!p || n < TALLY_CHUNK_HEADER_LEN)
			return limit;
		while ((q = memmem(q, n - (size_t)(q - p), "CHNK", 4))) {
			if ((size_t)(q - p) + TALLY_CHUNK_HEADER_LEN > n)
				break; /* runs past this window: the next one starts before it */
			if (header_ok(q))
				return from + (uint64_t)(q - p);
			q++;
		}
		/* Windows overlap by a header less one byte, so none is missed at an edge. */
		from += n - (TALLY_CHUNK_HEADER_LEN - 1);
		(void)got;
	}
	return limit;
}

/*
 * Is there an intact chunk at off?  On success fills info and sets *payload; *truncated says the
 * chunk, as declared, runs past the end of the file.  A chunk whose payload holds another valid
 * chunk header is not intact (docs/format.md §3): a partial chunk left by a failed write is
 * followed by intact ones, and stopping at the inner header before hashing anything keeps a
 * resynchronisation over a file of crafted headers linear in its size.
 */
static bool chunk_at(struct tally_file *f, uint64_t off, struct tally_chunk_info *info,
		     const uint8_t **payload, bool *truncated)
{
	const uint8_t *h;
	uint64_t check, end, limit;
	size_t got;

	*truncated = false;
	h = file_bytes(f, off, TALLY_CHUNK_HEADER_LEN, &got);
	if (!h) {
		*truncated = true;
		return false;
	}
	if (!header_ok(h))
		return false;
	info->offset = off;
	info->type = h[4] | h[5] << 8;
	info->flags = h[6] | h[7] << 8;
	info->len = get_le32(h + 8);
	info->seq = get_le32(h + 12);
	check = get_le64(h + 16);
	if (info->len > TALLY_CHUNK_MAX)
		return false;
	end = off + TALLY_CHUNK_HEADER_LEN + info->len;
	limit = end < f->size ? end : f->size;
	if (next_header(f, off + TALLY_CHUNK_HEADER_LEN, limit) < limit)
		return false;
	if (end > f->size) {
		*truncated = true;
		return false;
	}
	*payload = file_bytes(f, off + TALLY_CHUNK_HEADER_LEN, info->len, &got);
	return *payload && tally_checksum(*payload, info->len) == check;
}

/* Scan forward from off for the next intact chunk; returns its offset or f->size. */
static uint64_t resync(struct tally_file *f, uint64_t off)
{
	struct tally_chunk_info info;
	const uint8_t *payload;
	bool truncated;

	for (;;) {
		off = next_header(f, off + 1, f->size);
		if (off >= f->size || chunk_at(f, off, &info, &payload, &truncated))
			return off < f->size ? off : f->size;
	}
}

static void report_progress(struct read_state *st, uint64_t off)
{
	if (st->ops && st->ops->progress && off >= st->next_progress) {
		st->ops->progress(st->ops->ctx, off, st->f->size);
		st->next_progress = off + PROGRESS_INTERVAL;
	}
}

/*
 * tally record appends the names of the native frames (a SYMBOLS chunk, docs/format.md §12) when
 * the program has ended, after the records that use them; readers label frames as the records
 * come.  So the framer reads that chunk first: its payload ends with its own length, which puts
 * its header at a known offset from the file's end.  Nothing is emitted unless an intact
 * SYMBOLS chunk ends the file; it is read again in its place, as every chunk is.
 */
static int emit_ahead(struct tally_framer *fr, tally_item_fn emit, void *ctx)
{
	struct tally_file *f = fr->f;
	struct tally_item it = {.type = TALLY_ITEM_CHUNK, .ahead = true, .at = TALLY_PREAMBLE_LEN};
	const uint8_t *p;
	uint32_t len;
	bool truncated;
	size_t got;

	if (f->size < TALLY_PREAMBLE_LEN + TALLY_CHUNK_HEADER_LEN + 4 ||
	    !(p = file_bytes(f, f->size - 4, 4, &got)))
		return 0;
	len = get_le32(p);
	if (len < 4 || len > f->size - TALLY_PREAMBLE_LEN - TALLY_CHUNK_HEADER_LEN ||
	    !chunk_at(f, f->size - TALLY_CHUNK_HEADER_LEN - len, &it.info, &it.payload,
		      &truncated) ||
	    it.info.type != TALLY_CHUNK_SYMBOLS || it.info.len != len)
		return 0;
	return emit(ctx, &it);
}

int tally_framer_run(struct tally_framer *fr, tally_item_fn emit, void *ctx)
{
	struct tally_file *f = fr->f;
	uint64_t off = TALLY_PREAMBLE_LEN;
	int rc = emit_ahead(fr, emit, ctx);

	while (off < f->size && rc == 0) {
		struct tally_item it = {.type = TALLY_ITEM_CHUNK, .at = off};
		bool truncated;

		it.info.offset = UINT64_MAX; /* chunk_at sets it once the header holds */
		if (!chunk_at(f, off, &it.info, &it.payload, &truncated)) {
			/* Even a chunk that runs past the end may be a partial write with intact
			 * chunks after it: only what no intact chunk follows is a truncation. */
			uint64_t next = resync(f, off);
			/* A good header whose payload runs into the next intact chunk (or past the
			 * end) is a write that stopped part way; a payload that is all there but
			 * fails its check is damage after writing. */
			bool partial = it.info.offset == off && it.info.len <= TALLY_CHUNK_MAX &&
				       off + TALLY_CHUNK_HEADER_LEN + it.info.len > next;

			if (partial) /* its number is accounted for: no "missing chunk" for it */
				rc = check_sequence(fr, emit, ctx, off, it.info.seq);
			if (rc == 0)
				rc = emit_damage(fr, emit, ctx, off,
						 next >= f->size && truncated
						     ? TALLY_DAMAGE_TRUNCATED
						 : partial ? TALLY_DAMAGE_PARTIAL
							   : TALLY_DAMAGE_CORRUPT,
						 off, next, 0);
			off = next;
			continue;
		}
		rc = check_sequence(fr, emit, ctx, off, it.info.seq);
		if (rc == 0 && it.info.type == TALLY_CHUNK_RECORDS) {
			it.nrecs = tally_records_decode(&fr->codec, it.payload, it.info.len,
							&it.kind, &fr->recs, &fr->recs_cap);
			it.recs = fr->recs;
			it.recs_cap = fr->recs_cap;
			it.unknown_columns = fr->codec.unknown_columns;
			fr->codec.unknown_columns = 0;
		}
		if (rc == 0)
			rc = emit(ctx, &it);
		if (it.recs_taken) {
			fr->recs = it.spare;
			fr->recs_cap = it.spare ? it.spare_cap : 0;
		}
		off += TALLY_CHUNK_HEADER_LEN + it.info.len;
	}
	return rc;
}

struct tally_framer *tally_framer_new(struct tally_file *f)
{
	struct tally_framer *fr = calloc(1, sizeof(*fr));

	if (fr)
		fr->f = f;
	return fr;
}

void tally_framer_free(struct tally_framer *fr)
{
	if (!fr)
		return;
	tally_codec_fini(&fr->codec);
	free(fr->recs);
	free(fr);
}

struct tally_reading *tally_reading_new(struct tally_file *f, const struct tally_read_ops *ops)
{
	struct read_state *st = calloc(1, sizeof(*st));

	if (st) {
		st->f = f;
		st->ops = ops;
		st->id_budget = f->size;
	}
	return (struct tally_reading *)st;
}

int tally_reading_apply(struct tally_reading *r, const struct tally_item *it)
{
	struct read_state *st = (struct read_state *)r;
	const struct tally_read_ops *ops = st->ops;
	struct tally_file *f = st->f;
	int rc = 0;

	report_progress(st, it->at);
	if (it->type == TALLY_ITEM_DAMAGE) {
		add_damage(st, it->damage, it->off, it->end, it->missing);
		return 0;
	}
	if (it->ahead) { /* kept for its section's SESSION: not counted, not handed on */
		free(st->ahead);
		st->ahead_len = 0;
		if ((st->ahead = malloc(it->info.len ? it->info.len : 1)) != NULL) {
			memcpy(st->ahead, it->payload, it->info.len);
			st->ahead_len = it->info.len;
		}
		return 0;
	}
	f->chunks++;
	if (ops && ops->chunk)
		rc = ops->chunk(ops->ctx, &it->info);
	if (rc == 0)
		rc = handle_chunk(st, it);
	if (rc == 0 && ops && ops->chunk_payload && st->cur)
		rc = ops->chunk_payload(ops->ctx, st->cur, &it->info, it->payload);
	f->intact_end = it->info.offset + TALLY_CHUNK_HEADER_LEN + it->info.len;
	return rc;
}

void tally_reading_end(struct tally_reading *r)
{
	struct read_state *st = (struct read_state *)r;

	if (!st)
		return;
	if (st->ops && st->ops->progress)
		st->ops->progress(st->ops->ctx, st->f->size, st->f->size);
	free(st->ahead);
	free(st);
}

static int apply_now(void *ctx, struct tally_item *it)
{
	return tally_reading_apply(ctx, it);
}

int tally_file_read(struct tally_file *f, const struct tally_read_ops *ops)
{
	struct tally_framer *fr = tally_framer_new(f);
	struct tally_reading *r = tally_reading_new(f, ops);
	int rc = fr && r ? tally_framer_run(fr, apply_now, r) : -ENOMEM;

	tally_reading_end(r);
	tally_framer_free(fr);
	return rc;
}

int tally_file_load(struct tally_file **ret, const char *path, char *err, size_t errlen)
{
	int rc = tally_file_open(ret, path, err, errlen);

	if (rc < 0)
		return rc;
	rc = tally_file_read(*ret, NULL);
	if (rc < 0) {
		set_err(err, errlen, "%s: %s", path, strerror(-rc));
		tally_file_close(*ret);
		*ret = NULL;
	}
	return rc;
}
