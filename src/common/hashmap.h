/* SPDX-License-Identifier: MIT */
/*
 * The one hash table of tally: a key of two 64-bit words (a section, a device, a stream, an address
 * packed by the caller) to a non-zero 32-bit value (the caller's index + 1); or, for a key the
 * caller keeps itself (a string), the key's hash to the indexes of the items of that hash
 * (tally_map_find, tally_map_add).
 *
 * The keys a trace hands us are anything but random: stream ids count up from 7, addresses are
 * 2 MiB-aligned, section indexes are small.  A table that takes such a key modulo a power of two
 * sends them all to a few slots.  Every key therefore goes through splitmix64's finalizer, whose
 * output bits each depend on all the input bits, before the table takes its top bits; a million
 * aligned addresses cost what a million random ones do.  Open addressing, linear probing, at
 * most half full: a lookup is O(1) expected whatever the ids.
 */
#ifndef TALLY_COMMON_HASHMAP_H
#define TALLY_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h" /* tally_hash_u64: splitmix64's finalizer */

/* Two words into one hash (the second is mixed before it is folded in, so (a, b) != (b, a)). */
static inline uint64_t tally_hash_pair(uint64_t a, uint64_t b)
{
	return tally_hash_u64(a ^ tally_hash_u64(b + 0x9e3779b97f4a7c15ull));
}

/* Pack two 32-bit ids into one key word. */
static inline uint64_t tally_key32(uint32_t hi, uint32_t lo)
{
	return (uint64_t)hi << 32 | lo;
}

struct tally_map_slot {
	uint64_t k0, k1;
	uint32_t value; /* 0: empty */
};

struct tally_map {
	struct tally_map_slot *slot;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	unsigned shift; /* 64 - log2(cap): the hash's top bits pick the slot */
};

/* The value of (k0, k1), or 0 when absent. */
uint32_t tally_map_get(const struct tally_map *m, uint64_t k0, uint64_t k1);
/*
 * Set (k0, k1) to value (non-zero), inserting it when absent.  0, or -ENOMEM (the table is then
 * unchanged).
 */
int tally_map_put(struct tally_map *m, uint64_t k0, uint64_t k1, uint32_t value);
/* Remove (k0, k1) (the entries after it in its run move back: lookups still find them); its
 * value, or 0 when it was absent. */
uint32_t tally_map_del(struct tally_map *m, uint64_t k0, uint64_t k1);
void tally_map_fini(struct tally_map *m);

/*
 * Keys the map cannot hold whole (a string, a name with its kind, a stack): the caller keeps its
 * items in an array of its own and the map their hash, with the item's index + 1 as the value.
 * tally_map_find walks the items of that hash, asking same(ctx, value) whether the item is the
 * one looked for (so two keys of one hash stay apart); 0 when none is.  tally_map_add adds an item
 * the caller found absent (a hash may then stand for several).  0, or -ENOMEM (unchanged).
 */
uint32_t tally_map_find(const struct tally_map *m, uint64_t hash,
			bool (*same)(void *ctx, uint32_t value), void *ctx);
int tally_map_add(struct tally_map *m, uint64_t hash, uint32_t value);

#endif
