/* SPDX-License-Identifier: MIT */
/*
 * Call stacks in the file (docs/format.md §12): FRAMES (one entry per distinct frame), STACKS
 * (one entry per distinct stack: frame ids, innermost first), MODULES (the loaded objects
 * that native frames' addresses fall in, with their build IDs from 1.4) and SYMBOLS (1.4: the
 * native frames' names, resolved on the recording machine by tally record).  Both tables are dense
 * and 1-based, like the string table, so a record's STACK column is a small number and a loop's
 * thousands of launches share one entry.
 *
 * Writers append entries to a pending table and take it as a chunk payload before the RECORDS
 * chunk that uses the ids; readers keep the tables in the section.
 */
#ifndef TALLY_FORMAT_STACKS_H
#define TALLY_FORMAT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "buildid.h"

enum tally_frame_type {
	TALLY_FRAME_PYTHON = 1,	   /* file, function, line */
	TALLY_FRAME_NATIVE = 2,	   /* a return address (pc), symbolized at read time */
	TALLY_FRAME_NATIVE_PC = 3, /* 1.3: the instruction itself (a sample's innermost frame) */
};

/* Native frames of either kind: a return address, or an exact instruction address. */
static inline int tally_frame_is_native(unsigned type)
{
	return type == TALLY_FRAME_NATIVE || type == TALLY_FRAME_NATIVE_PC;
}

struct tally_frame {
	uint8_t type;
	uint32_t line;
	uint64_t pc;
	char *file, *func; /* owned; "" when absent */
};

struct tally_stack {
	uint32_t nframes;
	uint32_t *frames; /* owned; innermost first */
};

/* One loaded object: addresses in [lo, hi) belong to path, at ELF address (pc - base). */
struct tally_module {
	uint64_t base, lo, hi;
	char *path; /* owned */
	/* 1.4: what the writer knew of the file.  described false: an older writer's entry, which
	 * says nothing of the build; true with build_id_len 0: the module has no build ID. */
	bool described;
	uint8_t build_id_len;
	uint8_t build_id[TALLY_BUILD_ID_MAX];
	uint64_t file_size; /* bytes; 0 unknown */
};

/* What a 1.4 writer says of a module's file (MODULES keys, after the path's NUL). */
enum tally_module_key {
	TALLY_MK_BUILD_ID = 1,	/* bytes: the GNU build ID */
	TALLY_MK_FILE_SIZE = 2, /* uint: the file's size in bytes */
};

struct tally_module_facts {
	const uint8_t *build_id; /* NULL or build_id_len 0: none */
	size_t build_id_len;
	uint64_t file_size; /* 0: unknown */
};

/* Entries waiting for their chunk: ids next_id - count .. next_id - 1.  Zero-initialise. */
struct tally_pending_table {
	struct tally_buf entries;
	uint32_t next_id, count; /* next_id 0 means 1: ids start at 1 */
};

/* Append an entry; returns its id. */
uint32_t tally_frame_put(struct tally_pending_table *t, unsigned type, uint32_t line, uint64_t pc,
			 const char *file, size_t file_len, const char *func, size_t func_len);
uint32_t tally_stack_put(struct tally_pending_table *t, const uint32_t *frames, uint32_t n);
/* MODULES entries carry no ids: a MODULES payload is just a sequence of them.  facts NULL
 * writes a 1.3 entry (the path alone), as older writers did. */
void tally_module_put(struct tally_buf *b, uint64_t base, uint64_t lo, uint64_t hi,
		      const char *path, const struct tally_module_facts *facts);

/* The FRAMES or STACKS payload of what is pending, then empty the table (false: none pending). */
bool tally_pending_take(struct tally_pending_table *t, struct tally_buf *payload);
void tally_pending_fini(struct tally_pending_table *t);

/* Modules a section may describe (the collector's own cap); a MODULES chunk past it is damage. */
#define TALLY_MODULES_MAX 4096

/* ---- SYMBOLS (1.4): native frames named where they were recorded ------------------------ */

/* SYMBOLS keys: how the naming went (docs/format.md §12). */
enum tally_symbols_key {
	TALLY_YK_SESSION_ID = 1,  /* bytes: the session id of the section it names */
	TALLY_YK_STATE = 2,	  /* uint: enum tally_symbols_state */
	TALLY_YK_FRAMES = 3,	  /* uint: native frames in the section */
	TALLY_YK_NAMED = 4,	  /* uint: entries (frames named) */
	TALLY_YK_SPENT_NS = 5,	  /* uint: how long the naming took */
	TALLY_YK_BOUND_NS = 6,	  /* uint: the time it was given */
	TALLY_YK_OTHER_BUILD = 7, /* uint: modules whose file was another build by then */
	TALLY_YK_NO_FILE = 8,	  /* uint: modules with no readable file */
	TALLY_YK_HOW = 9,	  /* bytes: "libdw" or "ELF symbol tables" */
};

enum tally_symbols_state {
	TALLY_SYMBOLS_COMPLETE = 1, /* every native frame was looked up */
	TALLY_SYMBOLS_CUT = 2,	    /* the time bound ran out first: the rest were not */
	TALLY_SYMBOLS_STOPPED = 3,  /* tally record was told to stop (a signal) first */
};

/* SYMBOLS entry flags. */
enum tally_symbol_flag {
	/* the module has no build ID: its file was taken for the recorded one by its size alone */
	TALLY_SYMF_UNVERIFIED = 1u << 0,
};

struct tally_symbols_info {
	bool present; /* a SYMBOLS chunk was read for the section */
	uint8_t session_id[16];
	bool has_session_id;
	unsigned state; /* enum tally_symbols_state; 0 unknown */
	uint64_t frames, named, spent_ns, bound_ns, other_build, no_file;
	char how[32];
};

struct tally_symbol {
	uint32_t frame; /* the frame id it names */
	uint32_t line;	/* 0 unknown */
	uint8_t flags;	/* enum tally_symbol_flag */
	char *func;	/* owned: the symbol as the file has it (mangled) */
	char *file;	/* owned: source file, "" unknown */
};

/* An entry into entries (frames in increasing order; *prev the last frame put, 0 at first). */
void tally_symbol_put(struct tally_buf *entries, uint32_t *prev, uint32_t frame, unsigned flags,
		      uint32_t line, const char *func, const char *file);
/* The SYMBOLS payload: count entries, then info, then the payload's own length (u32), by which a
 * reader finds a SYMBOLS chunk from the file's end. */
void tally_symbols_payload(struct tally_buf *payload, uint32_t count,
			   const struct tally_buf *entries, const struct tally_symbols_info *info);

/* Reader side: a section's tables (index = id; entry 0 unused). */
struct tally_stack_tables {
	struct tally_frame *frames;
	uint32_t nframes;
	struct tally_stack *stacks;
	uint32_t nstacks;
	struct tally_module *modules;
	size_t nmodules;
	/* The address map, rebuilt after each MODULES chunk: boundaries at[0..nsegs) in order, and
	 * for [at[i], at[i + 1]) the module (index + 1; 0 none) that wins there, the latest one. */
	uint64_t *seg_at;
	uint32_t *seg_module;
	size_t nsegs;
	/* the section's last SYMBOLS chunk (1.4), by frame id */
	struct tally_symbol *symbols;
	size_t nsymbols;
	struct tally_symbols_info symbols_info;
};

/*
 * FRAMES and STACKS payloads into the tables.  *budget is what the file may still define, in
 * payload bytes (the reader starts it at the file's size, shared by every section and table):
 * ids beyond it are damage (false), and memory stays a small multiple of the file.
 */
bool tally_frames_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget);
bool tally_stacks_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget);
bool tally_modules_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len);
/* A SYMBOLS payload replaces the tables' names; false (and none kept) when it is damaged. */
bool tally_symbols_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len);
void tally_symbols_clear(struct tally_stack_tables *t);
/* The tables' names as a SYMBOLS payload again (tally merge moves them ahead of the records). */
void tally_symbols_encode(struct tally_buf *payload, const struct tally_stack_tables *t);
void tally_stack_tables_fini(struct tally_stack_tables *t);

/* Lookups that tolerate lost chunks: NULL for an id never defined. */
const struct tally_stack *tally_stack_get(const struct tally_stack_tables *t, uint32_t id);
const struct tally_frame *tally_frame_get(const struct tally_stack_tables *t, uint32_t id);
const struct tally_module *tally_module_of(const struct tally_stack_tables *t, uint64_t pc);
/* The name SYMBOLS gave frame_id, or NULL. */
const struct tally_symbol *tally_symbol_of(const struct tally_stack_tables *t, uint32_t frame_id);

#endif
