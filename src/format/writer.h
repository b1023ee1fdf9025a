/* SPDX-License-Identifier: MIT */
/*
 * The .tally writer: frames payloads as checksummed chunks (docs/format.md §3) and appends them to
 * a sink through an output buffer, counting every byte that could not be written.
 *
 * The writer never stops on a write error: it counts the failure (errno, bytes and chunks lost,
 * records lost) and carries on with the next batch, so that a disk that fills and frees again loses
 * only what it could not take, and the loss is in the ledger.
 */
#ifndef TALLY_FORMAT_WRITER_H
#define TALLY_FORMAT_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "tally-format.h"

/*
 * Where bytes go.  write() returns the number of bytes taken (possibly fewer than len) or -errno;
 * tests put failing and short-writing sinks here.
 */
struct tally_sink {
	ssize_t (*write)(void *ctx, const void *buf, size_t len);
	void *ctx;
	/* optional: give back the room kept for the closing chunks (tally_room_release, with
	 * release_ctx); 0 or -errno */
	int (*release)(void *release_ctx);
	void *release_ctx;
};

/* A sink on a file descriptor (ctx is the fd cast to a pointer). */
ssize_t tally_fd_write(void *ctx, const void *buf, size_t len);

/*
 * Room for the closing chunks, so that a full disk still ends the trace with the final ledger that
 * says so (docs/format.md §15): TALLY_CLOSE_RESERVE bytes allocated in a file of their own beside
 * the trace, ".NAME.tally-room", which no append can take (blocks kept past a file's end would
 * not do: ext4 frees them at the first write that fails).  tally_room_keep makes it: 0, or
 * -errno (-EOPNOTSUPP where the file system cannot allocate ahead; then a full disk may end the
 * trace without its final ledger, as before) and room->fd is -1.  tally_room_release gives the
 * room back (empties, syncs, so that ext4 may reuse the blocks at once, and removes the file):
 * the writer's owner calls it when a write failed, just before the closing chunks, and at the
 * close; 0 or -errno.  Calling it again does nothing.  Both touch the room's descriptor only
 * while it still names the room (device, inode): in the collector the program may have closed
 * it and taken its number for a file of its own.  tally_room_forget closes it (if it is still
 * the room's) and leaves the file: a fork child's copy of its parent's room.
 */
#define TALLY_CLOSE_RESERVE (64u << 10)
struct tally_room {
	int fd;
	dev_t dev;
	ino_t ino;
	char path[4096];
};
int tally_room_keep(struct tally_room *room, const char *trace_path);
int tally_room_release(void *room);
void tally_room_forget(struct tally_room *room);
/* ".NAME.tally-room" beside path, into out (len bytes); false when it does not fit. */
bool tally_room_path(const char *path, char *out, size_t len);

struct tally_writer_stats {
	uint64_t bytes_written;
	uint64_t bytes_lost;
	uint64_t chunks_written;
	uint64_t chunks_lost;
	uint64_t records_lost; /* records inside chunks that were lost */
	uint64_t write_failures;
	uint64_t short_writes;
	int last_errno;
};

struct pending_chunk {
	size_t end; /* offset in out just past this chunk */
	uint64_t records;
	bool is_chunk; /* false for the preamble */
};

struct tally_writer {
	struct tally_sink sink;
	struct tally_buf out;	       /* framed chunks not yet handed to the sink */
	struct pending_chunk *pending; /* one entry per chunk in out, to count losses by chunk */
	size_t npending, pending_cap;
	size_t flush_at; /* flush when out holds this many bytes */
	uint32_t seq;	 /* next chunk sequence number */
	struct tally_writer_stats stats;
};

/* flush_at: bytes to gather before writing (0: a default of 1 MiB). */
int tally_writer_init(struct tally_writer *w, const struct tally_sink *sink, size_t flush_at);
void tally_writer_fini(struct tally_writer *w); /* flushes nothing: call tally_writer_flush first */

/* Append the file preamble (the first bytes of a file). */
int tally_writer_preamble(struct tally_writer *w);

/*
 * Frame payload as one chunk.  records is how many records it carries (for the loss count).
 * Returns 0, or -ENOMEM if it could not even be buffered (counted as a lost chunk).
 */
int tally_writer_chunk(struct tally_writer *w, unsigned type, unsigned flags, const void *payload,
		       size_t len, uint64_t records);

/* Hand everything buffered to the sink.  Returns 0, or the -errno of the last failure. */
int tally_writer_flush(struct tally_writer *w);

/* Frame a chunk header for payload into hdr (TALLY_CHUNK_HEADER_LEN bytes). */
void tally_chunk_header(uint8_t *hdr, unsigned type, unsigned flags, uint32_t seq,
			const void *payload, size_t len);

uint64_t tally_checksum(const void *p, size_t len);

#endif
