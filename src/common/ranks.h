/* SPDX-License-Identifier: MIT */
/*
 * The grammar of a rank list (--ranks, TALLY_RANKS), checked strictly so that a list that
 * would select nothing ("0..3", "all", "5-1", "0 1") is refused before the run rather than
 * recording nothing:
 *
 *     list  := item ("," item)*
 *     item  := N | N "-" M        (N <= M; N, M decimal, at most 9 digits)
 */
#ifndef TALLY_COMMON_RANKS_H
#define TALLY_COMMON_RANKS_H

#include <stdbool.h>
#include <stddef.h>

/* true when list follows the grammar; else false and err says where it does not. */
bool tally_ranks_valid(const char *list, char *err, size_t errlen);

#endif
