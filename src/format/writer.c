/* SPDX-License-Identifier: MIT */
/* Chunk framing and the buffered, loss-counting writer; see writer.h. */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* header-only: the collector links no libxxhash */
#include <xxhash.h>

#define DEFAULT_FLUSH_AT (1u << 20)

uint64_t tally_checksum(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

void tally_chunk_header(uint8_t *hdr, unsigned type, unsigned flags, uint32_t seq,
			const void *payload, size_t len)
{
	put_le32(hdr + 0, TALLY_CHUNK_SYNC);
	put_le16(hdr + 4, (uint16_t)type);
	put_le16(hdr + 6, (uint16_t)flags);
	put_le32(hdr + 8, (uint32_t)len);
	put_le32(hdr + 12, seq);
	put_le64(hdr + 16, tally_checksum(payload, len));
	put_le32(hdr + 24, 0);
	put_le32(hdr + 28, (uint32_t)tally_checksum(hdr, 28));
}

ssize_t tally_fd_write(void *ctx, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = write((int)(intptr_t)ctx, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

bool tally_room_path(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	int n =
	    slash ? snprintf(out, len, "%.*s/.%s.tally-room", (int)(slash - path), path, slash + 1)
		  : snprintf(out, len, ".%s.tally-room", path);

	return n > 0 && (size_t)n < len;
}

int tally_room_keep(struct tally_room *room, const char *trace_path)
{
	struct stat st;
	int rc;

	room->fd = -1;
	if (!tally_room_path(trace_path, room->path, sizeof(room->path)))
		return -ENAMETOOLONG;
	/* A room left by a process killed before its close is taken over: it is only room. */
	room->fd = open(room->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (room->fd < 0)
		return -errno;
	do
		rc = fallocate(room->fd, 0, 0, TALLY_CLOSE_RESERVE);
	while (rc < 0 && errno == EINTR);
	if (rc == 0 && fstat(room->fd, &st) == 0) {
		room->dev = st.st_dev;
		room->ino = st.st_ino;
		return 0;
	}
	rc = -errno;
	close(room->fd);
	unlink(room->path);
	room->fd = -1;
	return rc;
}

/* Does the room's descriptor still name the room? */
static bool room_ours(const struct tally_room *room)
{
	struct stat st;

	return room->fd >= 0 && fstat(room->fd, &st) == 0 && st.st_dev == room->dev &&
	       st.st_ino == room->ino;
}

void tally_room_forget(struct tally_room *room)
{
	if (room_ours(room))
		close(room->fd);
	room->fd = -1;
}

int tally_room_release(void *ctx)
{
	struct tally_room *room = ctx;
	int rc = 0;

	if (room->fd < 0)
		return 0;
	if (!room_ours(room)) { /* closed by the program: the file is still there, emptied by
				   its removal below (no descriptor of ours holds it) */
		room->fd = -1;
		return unlink(room->path) < 0 ? -errno : 0;
	}
	if (ftruncate(room->fd, 0) < 0)
		rc = -errno;
	/* ext4 reuses freed blocks once the journal has committed their freeing: commit it */
	(void)fsync(room->fd);
	close(room->fd);
	room->fd = -1;
	if (unlink(room->path) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int tally_writer_init(struct tally_writer *w, const struct tally_sink *sink, size_t flush_at)
{
	memset(w, 0, sizeof(*w));
	w->sink = *sink;
	w->flush_at = flush_at ? flush_at : DEFAULT_FLUSH_AT;
	if (!tally_buf_grow(&w->out, w->flush_at + TALLY_CHUNK_HEADER_LEN))
		return -ENOMEM;
	return 0;
}

void tally_writer_fini(struct tally_writer *w)
{
	tally_buf_fini(&w->out);
	free(w->pending);
	w->pending = NULL;
	w->npending = w->pending_cap = 0;
}

static int pending_push(struct tally_writer *w, uint64_t records, bool is_chunk)
{
	if (!tally_grow_in(&w->pending, &w->pending_cap, w->npending + 1, sizeof(*w->pending)))
		return -ENOMEM;
	w->pending[w->npending].end = w->out.len;
	w->pending[w->npending].records = records;
	w->pending[w->npending].is_chunk = is_chunk;
	w->npending++;
	return 0;
}

int tally_writer_preamble(struct tally_writer *w)
{
	uint8_t pre[TALLY_PREAMBLE_LEN];

	memcpy(pre, TALLY_MAGIC, TALLY_MAGIC_LEN);
	put_le16(pre + 8, TALLY_FORMAT_MAJOR);
	put_le16(pre + 10, TALLY_FORMAT_MINOR);
	put_le32(pre + 12, 0);
	tally_buf_put(&w->out, pre, sizeof(pre));
	if (w->out.failed || pending_push(w, 0, false) < 0)
		return -ENOMEM;
	return 0;
}

int tally_writer_chunk(struct tally_writer *w, unsigned type, unsigned flags, const void *payload,
		       size_t len, uint64_t records)
{
	uint8_t hdr[TALLY_CHUNK_HEADER_LEN];
	size_t before = w->out.len;

	if (len > TALLY_CHUNK_MAX)
		goto lost;
	tally_chunk_header(hdr, type, flags, w->seq, payload, len);
	tally_buf_put(&w->out, hdr, sizeof(hdr));
	tally_buf_put(&w->out, payload, len);
	if (w->out.failed || pending_push(w, records, true) < 0) {
		w->out.len = before;
		w->out.failed = false;
		goto lost;
	}
	/* The sequence number advances only for chunks that reach the buffer: a gap means loss. */
	w->seq++;
	if (w->out.len >= w->flush_at)
		return tally_writer_flush(w);
	return 0;
lost:
	w->seq++;
	w->stats.chunks_lost++;
	w->stats.records_lost += records;
	w->stats.bytes_lost += len + TALLY_CHUNK_HEADER_LEN;
	return -ENOMEM;
}

/* Count what a failed or partial write cost, by whole chunks; done is the bytes that landed. */
static void account_chunks(struct tally_writer *w, size_t done)
{
	size_t i;

	for (i = 0; i < w->npending; i++) {
		if (!w->pending[i].is_chunk)
			continue;
		if (w->pending[i].end <= done) {
			w->stats.chunks_written++;
		} else {
			w->stats.chunks_lost++;
			w->stats.records_lost += w->pending[i].records;
		}
	}
}

int tally_writer_flush(struct tally_writer *w)
{
	size_t done = 0;
	int err = 0;

	while (done < w->out.len) {
		ssize_t n = w->sink.write(w->sink.ctx, w->out.data + done, w->out.len - done);

		if (n < 0) {
			err = (int)n;
			w->stats.write_failures++;
			w->stats.last_errno = (int)-n;
			break;
		}
		if (n == 0) { /* a sink that takes nothing would loop forever: treat as full */
			err = -ENOSPC;
			w->stats.write_failures++;
			w->stats.last_errno = ENOSPC;
			break;
		}
		if ((size_t)n < w->out.len - done)
			w->stats.short_writes++;
		done += (size_t)n;
	}
	w->stats.bytes_written += done;
	w->stats.bytes_lost += w->out.len - done;
	account_chunks(w, done);
	w->out.len = 0;
	w->npending = 0;
	return err;
}
