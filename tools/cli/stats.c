// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stats.c - `xpmem stats`: the module's counters, one per line or as
 * one JSON object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_stats(bool json)
{
	struct json j = { .f = stdout };
	struct kv *kvs;
	size_t n, i;
	int ret, rc = 0;

	ret = read_values(SYS_STATS, &kvs, &n);
	if (ret) {
		fprintf(stderr, PROG ": " SYS_STATS ": %s%s\n", strerror(-ret),
			ret == -ENOENT ? " (the xpmem module is not loaded)" : "");
		return 1;
	}
	/* the counters are global: the module lets root only read them */
	for (i = 0; i < n && (kvs[i].err == EACCES || kvs[i].err == EPERM); i++)
		;
	if (n && i == n) {
		fprintf(stderr, PROG ": " SYS_STATS ": %s (the counters are "
			"every user's, readable by root only)\n",
			strerror(kvs[0].err));
		free(kvs);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (kvs[i].err) {
			report_in(SYS_STATS, kvs[i].name, kvs[i].err);
			rc = 1;
		}
	}
	if (json) {
		j_values(&j, NULL, kvs, n);
	} else {
		for (i = 0; i < n; i++) {
			if (kvs[i].err)
				continue;
			printf("%s ", kvs[i].name);
			text_string(stdout, kvs[i].value);
			putchar('\n');
		}
	}
	free(kvs);
	return rc;
}
