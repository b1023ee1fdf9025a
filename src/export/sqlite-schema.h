/* SPDX-License-Identifier: MIT */
/*
 * The SQLite export's schema, kept apart from the writer: the CREATE statements (nsys's table and
 * column names, then tally's TALLY_* tables), the indexes, and the rows of nsys's enum tables.
 */
#ifndef TALLY_EXPORT_SQLITE_SCHEMA_H
#define TALLY_EXPORT_SQLITE_SCHEMA_H

#include <stddef.h>

extern const char sqlite_schema[];
extern const char sqlite_indexes[];

/* Rows of an (id, name, label) enum table. */
struct enum_row {
	int id;
	const char *name, *label;
};

#define ENUM_TABLE(n)                                                                              \
	extern const struct enum_row enum_##n[];                                                   \
	extern const size_t enum_##n##_count

ENUM_TABLE(event_type);
ENUM_TABLE(event_class);
ENUM_TABLE(memcpy_oper);
ENUM_TABLE(mem_kind);
ENUM_TABLE(launch_type);
ENUM_TABLE(sync_type);

#endif
