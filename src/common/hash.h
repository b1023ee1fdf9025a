/* SPDX-License-Identifier: MIT */
/* Hashing integer keys for open addressing tables. */
#ifndef TALLY_COMMON_HASH_H
#define TALLY_COMMON_HASH_H

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

#endif
