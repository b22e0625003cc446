/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cli.h - declarations shared by the files of the xpmem tool.
 *
 * Files, each using only those listed before it:
 *
 *   util.c       error messages, paths, strict number parsing, arrays
 *   sysfs.c      small value files and directories of them
 *   json.c       terminal-safe strings and the JSON writer
 *   status.c     `xpmem status`
 *   stats.c      `xpmem stats`
 *   proc_read.c  `xpmem list`: the kernel backend's /proc files
 *   registry.c   `xpmem list`: the shm backend's registries
 *   list.c       `xpmem list`: sorting and output
 *   ../xpmem.c   the command line
 */
#ifndef _XPMEM_CLI_H
#define _XPMEM_CLI_H

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PROG		"xpmem"
#define SYS_MODULE	"/sys/module/xpmem"
#define SYS_VERSION	SYS_MODULE "/version"
#define SYS_PARAMS	SYS_MODULE "/parameters"
#define SYS_STATS	"/sys/class/misc/xpmem/stats"
#define PROC_OBJECTS	"/proc/xpmem-objects"	/* one file per tgid */
#define PROC_XPMEM	"/proc/xpmem"	/* classic files only (older modules) */
#define VALUE_MAX	256	/* longest sysfs value shown, with its NUL */
#define JSON_DEPTH	8	/* deepest nesting of the JSON we print */
#define ACCESS_RDWR	1	/* struct k*.access: 0 rdonly, 1 rdwr */

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- util.c -------------------------------------------------------------- */

/* A growable array of fixed-size records. */
struct vec {
	void *v;
	size_t n, cap, size;
};

void report(const char *path, int err);
const char *path_join(char *buf, size_t size, const char *dir,
		      const char *name);
void report_in(const char *dir, const char *name, int err);
bool all_digits(const char *s);
bool parse_u64(const char *s, unsigned int base, uint64_t *v);
bool parse_ll(const char *s, long long *v);
void *vec_push(struct vec *a);
void *vec_at(const struct vec *a, size_t i);
void vec_sort(struct vec *a, int (*cmp)(const void *, const void *));

/* ---- sysfs.c ------------------------------------------------------------- */

/* A sysfs value file: its name, its contents or why they are missing. */
struct kv {
	char name[NAME_MAX + 1];
	char value[VALUE_MAX];
	int err;		/* 0, or the errno reading it */
};

int read_value(int dirfd, const char *name, char *buf, size_t size);
int read_values(const char *dir, struct kv **kvs, size_t *n);

/* ---- json.c -------------------------------------------------------------- */

/*
 * The JSON writer: j_open/j_close nest objects and arrays, the j_* value
 * functions write one member (@key, in an object) or one element (@key
 * NULL, in an array) and put the commas in.
 */
struct json {
	FILE *f;
	unsigned int depth;
	bool more[JSON_DEPTH];	/* something was written at this level */
};

void text_string(FILE *f, const char *str);
void j_open(struct json *j, const char *key, char c);
void j_close(struct json *j, char c);
void j_str(struct json *j, const char *key, const char *s);
void j_num(struct json *j, const char *key, long long v);
void j_unum(struct json *j, const char *key, uint64_t v);
void j_bool(struct json *j, const char *key, bool v);
void j_null(struct json *j, const char *key);
void j_hex(struct json *j, const char *key, uint64_t v);
void j_mode(struct json *j, const char *key, uint64_t mode);
void j_value(struct json *j, const char *key, const char *v);
void j_values(struct json *j, const char *key, const struct kv *kvs,
	      size_t n);

/* ---- list: the records both backends' readers fill ----------------------- */

/* Every field is a uint64_t, so that one table-driven parser fills them. */
struct kseg {
	uint64_t tgid, segid, vaddr, size, mode, atts;
};

struct kpermit {
	uint64_t tgid, apid, segid, owner, access, atts;
};

struct katt {
	uint64_t tgid, segid, apid, offset, size, access;
};

struct sseg {
	uint64_t pid, segid, size, mode, uid;
};

struct listing {
	struct vec segs, permits, atts;	/* kernel backend */
	const char *kernel;		/* the directory read, or NULL */
	unsigned long hidden;		/* unreadable <tgid> files in it */
	struct vec shm;			/* shm backend segments */
	struct vec regs;		/* registries seen: struct reg_id */
};

struct reg_id {
	dev_t dev;
	ino_t ino;
};

/* proc_read.c */
int list_kernel(struct listing *l);

/* registry.c */
int list_shm(struct listing *l);

/* ---- the commands: exit status 0, 1 ------------------------------------- */

int cmd_status(bool json);
int cmd_stats(bool json);
int cmd_list(bool json);

#endif /* _XPMEM_CLI_H */
