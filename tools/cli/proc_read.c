// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * proc_read.c - the kernel backend's objects for `xpmem list`: every
 * readable /proc/xpmem-objects/<tgid> file (or /proc/xpmem/<tgid> of an
 * older module), parsed line by line with one table per kind of object.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum vfmt { V_HEX, V_DEC, V_OCT, V_ACCESS };

struct field {
	const char *key;
	enum vfmt fmt;
	size_t off;		/* of the uint64_t in the record */
};

/*
 * One kind of object line: "@name" then key/value pairs.  For segment and
 * permit lines the first pair is the kind and the object's id itself
 * ("segment 0x1f vaddr ..."); attachment lines start with the bare word
 * ("attachment segment 0x1f apid ...").
 */
struct line_kind {
	const char *name;
	bool bare;		/* the kind is a word before the pairs */
	const struct field *fields;
	size_t nfields;
	size_t vec_off;		/* of the struct vec in struct listing */
};

#define FIELD(type, key, fmt, member) { key, fmt, offsetof(type, member) }

static const struct field seg_fields[] = {
	FIELD(struct kseg, "segment", V_HEX, segid),
	FIELD(struct kseg, "vaddr", V_HEX, vaddr),
	FIELD(struct kseg, "size", V_DEC, size),
	FIELD(struct kseg, "mode", V_OCT, mode),
	FIELD(struct kseg, "attachments", V_DEC, atts),
};

static const struct field permit_fields[] = {
	FIELD(struct kpermit, "permit", V_HEX, apid),
	FIELD(struct kpermit, "segment", V_HEX, segid),
	FIELD(struct kpermit, "owner", V_DEC, owner),
	FIELD(struct kpermit, "access", V_ACCESS, access),
	FIELD(struct kpermit, "attachments", V_DEC, atts),
};

static const struct field att_fields[] = {
	FIELD(struct katt, "segment", V_HEX, segid),
	FIELD(struct katt, "apid", V_HEX, apid),
	FIELD(struct katt, "offset", V_DEC, offset),
	FIELD(struct katt, "size", V_DEC, size),
	FIELD(struct katt, "access", V_ACCESS, access),
};

static const struct line_kind line_kinds[] = {
	{ "segment", false, seg_fields, ARRAY_SIZE(seg_fields),
	  offsetof(struct listing, segs) },
	{ "permit", false, permit_fields, ARRAY_SIZE(permit_fields),
	  offsetof(struct listing, permits) },
	{ "attachment", true, att_fields, ARRAY_SIZE(att_fields),
	  offsetof(struct listing, atts) },
};

static bool parse_value(const char *s, enum vfmt fmt, uint64_t *v)
{
	switch (fmt) {
	case V_HEX:	/* "%#llx" prints 0 as "0" */
		return parse_u64(s, s[0] == '0' && !s[1] ? 10 : 16, v);
	case V_DEC:
		return parse_u64(s, 10, v);
	case V_OCT:
		return s[0] == '0' && parse_u64(s, 8, v) && *v <= 07777;
	case V_ACCESS:
		if (!strcmp(s, "rdonly"))
			*v = 0;
		else if (!strcmp(s, "rdwr"))
			*v = ACCESS_RDWR;
		else
			return false;
		return true;
	}
	return false;
}

#define WS " \t\r\n"

/*
 * parse_pairs - fill @rec from the key/value pairs of the line being
 * tokenized (@save), the first key being @key.  Unknown keys are skipped
 * (later versions add some), the first of two equal keys counts.  True
 * when every field was given a valid value.
 */
static bool parse_pairs(char *key, char **save, const struct line_kind *k,
			void *rec)
{
	unsigned int seen = 0, all = (1U << k->nfields) - 1;
	char *val;
	size_t i;

	for (; key && (val = strtok_r(NULL, WS, save));
	     key = strtok_r(NULL, WS, save)) {
		for (i = 0; i < k->nfields; i++)
			if (!strcmp(key, k->fields[i].key))
				break;
		if (i == k->nfields || (seen & (1U << i)))
			continue;
		if (!parse_value(val, k->fields[i].fmt,
				 (uint64_t *)((char *)rec + k->fields[i].off)))
			return false;
		seen |= 1U << i;
	}
	return seen == all;
}

/*
 * parse_line - add the object @line of the file of @tgid describes to @l.
 * Lines of other kinds and lines that do not parse are ignored; -ENOMEM
 * is the only error.
 */
static int parse_line(char *line, uint64_t tgid, struct listing *l)
{
	union {
		struct kseg s;
		struct kpermit p;
		struct katt a;
	} rec = { .s = { .tgid = tgid } };
	const struct line_kind *k = NULL;
	char *save, *word;
	struct vec *dst;
	unsigned int i;
	void *slot;

	/* tgid is the first member of every record */
	_Static_assert(offsetof(struct kpermit, tgid) == 0 &&
		       offsetof(struct katt, tgid) == 0, "tgid first");
	word = strtok_r(line, WS, &save);
	for (i = 0; word && i < ARRAY_SIZE(line_kinds); i++)
		if (!strcmp(word, line_kinds[i].name))
			k = &line_kinds[i];
	if (!k)
		return 0;
	/* the pairs start at the kind itself unless it is a bare word */
	if (!parse_pairs(k->bare ? strtok_r(NULL, WS, &save) : word, &save,
			 k, &rec))
		return 0;
	dst = (struct vec *)((char *)l + k->vec_off);
	slot = vec_push(dst);
	if (!slot)
		return -ENOMEM;
	memcpy(slot, &rec, dst->size);
	return 0;
}

/* Read the file of @tgid (open in @f) into @l; 0 or -errno. */
static int read_proc_file(FILE *f, uint64_t tgid, struct listing *l)
{
	size_t cap = 0;
	char *line = NULL;
	int ret = 0;

	errno = 0;
	while (!ret && getline(&line, &cap, f) >= 0)
		ret = parse_line(line, tgid, l);
	if (!ret && ferror(f))
		ret = errno ? -errno : -EIO;
	free(line);
	return ret;
}

/*
 * list_proc_one - the file of thread group @name in directory @dir (open
 * at @dfd); 0, or 1 after a reported failure.  Files of other users are
 * counted, files of groups that went away meanwhile (ENOENT; EIO once the
 * module removed an open file) skipped.
 */
static int list_proc_one(const char *dir, int dfd, const char *name,
			 struct listing *l)
{
	uint64_t tgid;
	FILE *f;
	int fd, ret;

	if (!parse_u64(name, 10, &tgid) || !tgid || tgid > INT_MAX)
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		l->hidden++;
		return 0;
	}
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		report_in(dir, name, errno);
		return 1;
	}
	f = fdopen(fd, "r");
	if (!f) {
		report_in(dir, name, errno);
		close(fd);
		return 1;
	}
	ret = read_proc_file(f, tgid, l);
	fclose(f);
	/* the module decides again at the read: the group changed creds */
	if (ret == -EACCES || ret == -EPERM)
		l->hidden++;
	if (!ret || ret == -ENOENT || ret == -EIO || ret == -EACCES ||
	    ret == -EPERM)
		return 0;
	report_in(dir, name, -ret);
	return 1;
}

/*
 * list_kernel - every <tgid> file of PROC_OBJECTS, or of PROC_XPMEM on a
 * module that predates it; neither exists when the module is not loaded.
 */
int list_kernel(struct listing *l)
{
	static const char *const dirs[] = { PROC_OBJECTS, PROC_XPMEM };
	struct dirent *e;
	DIR *d = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; !d && i < ARRAY_SIZE(dirs); i++) {
		d = opendir(dirs[i]);
		if (!d && errno != ENOENT) {
			report(dirs[i], errno);
			return 1;
		}
		if (d)
			l->kernel = dirs[i];
	}
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (all_digits(e->d_name))
			rc |= list_proc_one(l->kernel, dirfd(d), e->d_name, l);
	closedir(d);
	return rc;
}
