/* SPDX-License-Identifier: MIT */
/* GNU build IDs from ELF notes; see buildid.h. */
#include "buildid.h"

#include <elf.h>
#include <string.h>

size_t tally_build_id_parse(const void *notes, uint64_t size, uint8_t out[TALLY_BUILD_ID_MAX])
{
	const unsigned char *n = notes;
	uint64_t at = 0;

	while (at <= size && size - at >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t name = at + sizeof(nh), desc, next;

		memcpy(&nh, n + at, sizeof(nh));
		desc = name + ((nh.n_namesz + 3ull) & ~3ull);
		next = desc + ((nh.n_descsz + 3ull) & ~3ull);
		if (desc > size || nh.n_descsz > size - desc)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(n + name, "GNU", 4) == 0 && nh.n_descsz >= 2 &&
		    nh.n_descsz <= TALLY_BUILD_ID_MAX) {
			memcpy(out, n + desc, nh.n_descsz);
			return nh.n_descsz;
		}
		if (next > size)
			return 0;
		at = next;
	}
	return 0;
}

void tally_build_id_hex(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = 0;
}
