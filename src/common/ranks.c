/* SPDX-License-Identifier: MIT */
/* Rank lists; see ranks.h. */
#include "ranks.h"

#include <stdio.h>

/* A decimal number of 1 to 9 digits at *p; advances p.  -1 if there is none. */
static long number(const char **p)
{
	long v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9' && digits < 10) {
		v = v * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	return digits == 0 || digits > 9 ? -1 : v;
}

bool tally_ranks_valid(const char *list, char *err, size_t errlen)
{
	const char *p = list;

	if (!list || !*list) {
		snprintf(err, errlen, "empty rank list");
		return false;
	}
	for (;;) {
		const char *item = p;
		long lo = number(&p), hi = lo;

		if (lo >= 0 && *p == '-') {
			p++;
			hi = number(&p);
		}
		if (lo < 0 || hi < 0 || (*p != ',' && *p != '\0')) {
			snprintf(err, errlen,
				 "'%s': expected N or N-M at '%.20s' (e.g. 0 or 0,4-7)", list,
				 item);
			return false;
		}
		if (hi < lo) {
			snprintf(err, errlen,
				 "'%s': range %ld-%ld is empty (write the low rank first)", list,
				 lo, hi);
			return false;
		}
		if (*p == '\0')
			return true;
		p++;
	}
}
