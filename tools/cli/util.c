// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * util.c - small helpers of the xpmem tool: error messages, paths,
 * numbers parsed strictly, and growable arrays of records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void report(const char *path, int err)
{
	fprintf(stderr, PROG ": %s: %s\n", path, strerror(err));
}

/* "@dir/@name" in @buf, or NULL if it does not fit. */
const char *path_join(char *buf, size_t size, const char *dir,
			     const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? NULL : buf;
}

/* Report a failure on @dir/@name. */
void report_in(const char *dir, const char *name, int err)
{
	char path[PATH_MAX];
	const char *p = path_join(path, sizeof(path), dir, name);

	report(p ? p : dir, err);
}

/* @s is a non-empty string of decimal digits. */
bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/*
 * parse_u64 - the whole of @s as an unsigned number in @base (8, 10 or
 * 16), no sign, no spaces, no overflow.  A hexadecimal number must start
 * with "0x".  Returns true and sets @v on success.
 */
bool parse_u64(const char *s, unsigned int base, uint64_t *v)
{
	uint64_t x = 0;
	int d;

	if (base == 16) {
		if (s[0] != '0' || s[1] != 'x')
			return false;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		d = digit_value(*s);
		if (d >= (int)base || x > (UINT64_MAX - (unsigned int)d) / base)
			return false;
		x = x * base + (unsigned int)d;
	}
	*v = x;
	return true;
}

/* @s is an optionally negative decimal integer that fits a long long. */
bool parse_ll(const char *s, long long *v)
{
	bool neg = *s == '-';
	uint64_t u;

	if (!parse_u64(s + neg, 10, &u) || u > (uint64_t)LLONG_MAX + neg)
		return false;
	*v = neg ? (long long)(0 - u) : (long long)u;
	return true;
}

/* Append a zeroed record; NULL (errno ENOMEM) if memory runs out. */
void *vec_push(struct vec *a)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		void *v = reallocarray(a->v, cap, a->size);

		if (!v)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	return memset((char *)a->v + a->n++ * a->size, 0, a->size);
}

void *vec_at(const struct vec *a, size_t i)
{
	return (char *)a->v + i * a->size;
}

void vec_sort(struct vec *a, int (*cmp)(const void *, const void *))
{
	if (a->n)
		qsort(a->v, a->n, a->size, cmp);
}
