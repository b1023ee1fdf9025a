/* SPDX-License-Identifier: MIT */
/* Replays the fuzz corpus (and any files given) through the fuzz target: a regression test that
 * runs in every build, with or without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len)
		LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	int i, n = 0;

	for (i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;

		if (!d) {
			n += replay(argv[i]) == 0;
			continue;
		}
		while ((e = readdir(d))) {
			char p[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			n += replay(p) == 0;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", n);
	return n > 0 ? 0 : 1;
}
