// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * json.c - the xpmem tool's output primitives: strings escaped for a
 * terminal (text_string) and a small JSON writer (struct json, cli.h)
 * whose strings are always valid UTF-8.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at @s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	/* stops at the first non-continuation byte, e.g. the NUL */
	for (i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* @s as a JSON string literal. */
static void json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	fputc('"', f);
	while (*s) {
		n = utf8_len(s);
		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s++);
		} else if (*s == '\n') {
			fputs("\\n", f);
			s++;
		} else if (*s == '\t') {
			fputs("\\t", f);
			s++;
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	fputc('"', f);
}

/* @s for a terminal: control characters and invalid UTF-8 as \xNN. */
void text_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	while (*s) {
		n = utf8_len(s);
		if (n == 0 || *s < 0x20 || *s == 0x7f || *s == '\\') {
			fprintf(f, "\\x%02x", *s++);
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
}

static void j_key(struct json *j, const char *key)
{
	if (j->depth) {
		if (j->more[j->depth - 1])
			fputc(',', j->f);
		j->more[j->depth - 1] = true;
	}
	if (key) {
		json_string(j->f, key);
		fputc(':', j->f);
	}
}

void j_open(struct json *j, const char *key, char c)
{
	if (j->depth == JSON_DEPTH)
		abort();	/* deeper than anything this program prints */
	j_key(j, key);
	fputc(c, j->f);
	j->more[j->depth++] = false;
}

void j_close(struct json *j, char c)
{
	j->depth--;
	fputc(c, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

void j_str(struct json *j, const char *key, const char *s)
{
	j_key(j, key);
	if (s)
		json_string(j->f, s);
	else
		fputs("null", j->f);
}

void j_num(struct json *j, const char *key, long long v)
{
	j_key(j, key);
	fprintf(j->f, "%lld", v);
}

void j_unum(struct json *j, const char *key, uint64_t v)
{
	j_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void j_bool(struct json *j, const char *key, bool v)
{
	j_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

void j_null(struct json *j, const char *key)
{
	j_key(j, key);
	fputs("null", j->f);
}

void j_hex(struct json *j, const char *key, uint64_t v)
{
	j_key(j, key);
	fprintf(j->f, "\"0x%llx\"", (unsigned long long)v);
}

void j_mode(struct json *j, const char *key, uint64_t mode)
{
	j_key(j, key);
	fprintf(j->f, "\"0%03llo\"", (unsigned long long)mode);
}

/* A sysfs value: a number if it is a decimal integer, else a string. */
void j_value(struct json *j, const char *key, const char *v)
{
	long long n;

	if (v && parse_ll(v, &n))
		j_num(j, key, n);
	else
		j_str(j, key, v);
}

void j_values(struct json *j, const char *key, const struct kv *kvs,
		     size_t n)
{
	size_t i;

	j_open(j, key, '{');
	for (i = 0; i < n; i++)
		j_value(j, kvs[i].name, kvs[i].err ? NULL : kvs[i].value);
	j_close(j, '}');
}
