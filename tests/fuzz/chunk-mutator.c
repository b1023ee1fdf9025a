/* SPDX-License-Identifier: MIT */
/*
 * A structure-aware mutator for both fuzz targets (libFuzzer's LLVMFuzzerCustomMutator).  Bytes
 * mutated at random almost never keep a chunk's XXH3 checks, so the reader would skip them as
 * damage and the decoders behind it (records, strings, ledger, key/value) would never see a
 * mutated payload.  Most of the time this mutates one chunk's payload and frames it again with
 * good checks; sometimes it copies or drops a whole chunk; sometimes it lets libFuzzer mutate the
 * raw bytes, for the damage paths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally-format.h"
#include "writer.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#define MAX_CHUNKS 512

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offsets of the chunks that follow one another from the preamble on (framing only). */
static size_t find_chunks(const uint8_t *d, size_t size, size_t *off)
{
	size_t n = 0, at = TALLY_PREAMBLE_LEN;

	while (n < MAX_CHUNKS && at + TALLY_CHUNK_HEADER_LEN <= size &&
	       le32(d + at) == TALLY_CHUNK_SYNC &&
	       le32(d + at + 8) <= size - at - TALLY_CHUNK_HEADER_LEN) {
		off[n++] = at;
		at += TALLY_CHUNK_HEADER_LEN + le32(d + at + 8);
	}
	return n;
}

/* Replace chunk [at, at + old) by a chunk of payload p[0..len), header fields kept. */
static size_t reframe(uint8_t *d, size_t size, size_t max, size_t at, size_t old, const uint8_t *p,
		      size_t len)
{
	uint8_t hdr[TALLY_CHUNK_HEADER_LEN];
	size_t tail = size - at - old, need = at + TALLY_CHUNK_HEADER_LEN + len + tail;

	if (need > max)
		return 0;
	tally_chunk_header(hdr, d[at + 4] | d[at + 5] << 8, d[at + 6] | d[at + 7] << 8,
			   le32(d + at + 12), p, len);
	memmove(d + at + TALLY_CHUNK_HEADER_LEN + len, d + at + old, tail);
	memcpy(d + at, hdr, sizeof(hdr));
	memcpy(d + at + TALLY_CHUNK_HEADER_LEN, p, len);
	return need;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	size_t off[MAX_CHUNKS], n = find_chunks(data, size, off), i, len, whole, out;
	uint8_t *tmp;

	srand(seed);
	if (n == 0 || rand() % 8 == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	i = (size_t)rand() % n;
	len = le32(data + off[i] + 8);
	whole = TALLY_CHUNK_HEADER_LEN + len;
	if (rand() % 8 == 0) { /* drop it: a chunk lost */
		memmove(data + off[i], data + off[i] + whole, size - off[i] - whole);
		return size - whole;
	}
	if (rand() % 8 == 0 && size + whole <= max_size) { /* copy it to the end */
		memcpy(data + size, data + off[i], whole);
		return size + whole;
	}
	tmp = malloc(max_size);
	if (!tmp)
		return size;
	memcpy(tmp, data + off[i] + TALLY_CHUNK_HEADER_LEN, len);
	len = LLVMFuzzerMutate(tmp, len, max_size - (size - whole) - TALLY_CHUNK_HEADER_LEN);
	out = reframe(data, size, max_size, off[i], whole, tmp, len);
	free(tmp);
	return out ? out : size;
}
