/* SPDX-License-Identifier: MIT */
/* Paths as people give them; see path.c. */
#ifndef TALLY_COMMON_PATH_H
#define TALLY_COMMON_PATH_H

/* dir/name, with one slash between them however many dir ends with ("runs/" and "runs" give
 * "runs/x.tally", "/" gives "/x.tally").  malloc'd; NULL on ENOMEM. */
char *tally_path_join(const char *dir, const char *name);

#endif
