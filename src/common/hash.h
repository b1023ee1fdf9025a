/* SPDX-License-Identifier: MIT */
/* The hashes of every table: integer keys (splitmix64's finalizer) and bytes (FNV-1a). */
#ifndef TALLY_COMMON_HASH_H
#define TALLY_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every bit of k moves every bit of the result (splitmix64's finalizer), so any bits of it can
 * pick a slot: a plain multiplication lets the low bits of a product depend only on the low bits
 * of the key, and keys that differ in their high half (a group << 32 | index) then all collide.
 */
static inline uint64_t tally_hash_u64(uint64_t k)
{
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebull;
	return k ^ (k >> 31);
}

/* FNV-1a, 64 bits: the one hash of strings and byte keys.  tally_hash_bytes_from goes on from
 * h (TALLY_FNV_START to begin), so a key of several parts is hashed part by part. */
#define TALLY_FNV_START 0xcbf29ce484222325ull
#define TALLY_FNV_PRIME 0x100000001b3ull

static inline uint64_t tally_hash_bytes_from(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n--)
		h = (h ^ *s++) * TALLY_FNV_PRIME;
	return h;
}

static inline uint64_t tally_hash_bytes(const void *p, size_t n)
{
	return tally_hash_bytes_from(TALLY_FNV_START, p, n);
}

static inline uint64_t tally_hash_str(const char *s)
{
	uint64_t h = TALLY_FNV_START;

	while (*s)
		h = (h ^ (unsigned char)*s++) * TALLY_FNV_PRIME;
	return h;
}

#endif
