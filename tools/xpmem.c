// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem - is xpmem in use here, and which backend will my MPI job get?
 *
 * Usage: xpmem [--json] COMMAND [--json]
 *        xpmem --help | --version
 *
 *   status  the module (/sys/module/xpmem: loaded?, version, parameters),
 *           /dev/xpmem (mode, owner, can the caller open it read-write),
 *           xpmem_version(), the backend libxpmem.so.0 gives this process
 *           and why, the backend's feature bits, and the environment
 *           variables that influence the choice.  Exit 0 when a backend is
 *           usable, 1 when none is.
 *   stats   every counter of /sys/class/misc/xpmem/stats/; exit 1 when the
 *           module is not loaded or the caller may not read them (they are
 *           every user's: root only).
 *   list    segments, permits and attachments the caller may see.  Kernel
 *           backend: every readable /proc/xpmem-objects/<tgid> (files of
 *           other users are not readable and are counted as "hidden"; a
 *           module without that directory has /proc/xpmem/<tgid> files,
 *           which are counted the same way but list nothing).  Shm backend:
 *           the registry memfd (lib/shm_wire.h) each owner holds open for
 *           writing, among the descriptors of the processes the caller may
 *           open (peers hold it read-only); attacher counts are not known
 *           there.
 *
 * --json prints one JSON object on one line instead of tables.  Segids,
 * apids and addresses are strings "0x...", modes are strings "0640", pids,
 * sizes and counts are numbers, strings are valid UTF-8 (an invalid byte
 * becomes U+FFFD):
 *   status  {"module":{"loaded":B,"version":S|null,"limits":{NAME:V,...}},
 *            "device":{"path":S,"exists":B,"type":S,"mode":S,"uid":N,
 *                      "user":S|null,"gid":N,"group":S|null,"rdwr":B,
 *                      "error":S|null},
 *            "xpmem_version":{"value":N,"error":S|null},
 *            "backend":{"id":N,"name":S,"reason":S,"usable":B},
 *            "features":{"mask":S,"names":[S,...]},
 *            "environment":{VAR:S,...}}
 *   stats   {NAME:V,...}
 *   list    {"kernel":{"segments":[{"tgid","segid","vaddr","size","mode",
 *                                   "attachments"}],
 *                      "permits":[{"tgid","apid","segid","owner","access",
 *                                  "attachments"}],
 *                      "attachments":[{"tgid","segid","apid","offset",
 *                                      "size","access"}],
 *                      "hidden":N},
 *            "shm":{"segments":[{"pid","segid","size","mode","uid",
 *                                "attachments":null}]}}
 * A sysfs value V is a number when it is a decimal integer, else a string
 * (null when unreadable).
 *
 * Exit status: 0; 1 on a runtime failure (a message on stderr names the
 * file and the error) or, for status, when no backend is usable; 2 on a
 * usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "xpmem.h"
#include "shm_wire.h"

#ifndef XPMEM_PKG_VERSION
#define XPMEM_PKG_VERSION "unknown"
#endif

#define PROG		"xpmem"
#define SYS_MODULE	"/sys/module/xpmem"
#define SYS_VERSION	SYS_MODULE "/version"
#define SYS_PARAMS	SYS_MODULE "/parameters"
#define SYS_STATS	"/sys/class/misc/xpmem/stats"
#define PROC_OBJECTS	"/proc/xpmem-objects"	/* one file per tgid */
#define PROC_XPMEM	"/proc/xpmem"	/* classic files only (older modules) */
#define REG_LINK	"/memfd:" SHM_REG_NAME " (deleted)"
#define VALUE_MAX	256	/* longest sysfs value shown, with its NUL */
#define JSON_DEPTH	8	/* deepest nesting of the JSON we print */
#define ACCESS_RDWR	1	/* struct k*.access: 0 rdonly, 1 rdwr */

/* ---- small helpers -------------------------------------------------------- */

static void report(const char *path, int err)
{
	fprintf(stderr, PROG ": %s: %s\n", path, strerror(err));
}

/* "@dir/@name" in @buf, or NULL if it does not fit. */
static const char *path_join(char *buf, size_t size, const char *dir,
			     const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? NULL : buf;
}

/* Report a failure on @dir/@name. */
static void report_in(const char *dir, const char *name, int err)
{
	char path[PATH_MAX];
	const char *p = path_join(path, sizeof(path), dir, name);

	report(p ? p : dir, err);
}

/* @s is a non-empty string of decimal digits. */
static bool all_digits(const char *s)
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
static bool parse_u64(const char *s, unsigned int base, uint64_t *v)
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
static bool parse_ll(const char *s, long long *v)
{
	bool neg = *s == '-';
	uint64_t u;

	if (!parse_u64(s + neg, 10, &u) || u > (uint64_t)LLONG_MAX + neg)
		return false;
	*v = neg ? (long long)(0 - u) : (long long)u;
	return true;
}

/*
 * read_value - the contents of the small file @name in directory @dirfd,
 * without trailing whitespace, into @buf.  0, or -errno (-EFBIG when it
 * does not fit in @size - 1 bytes).
 */
static int read_value(int dirfd, const char *name, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		char extra;

		if (len < size - 1)
			n = read(fd, buf + len, size - 1 - len);
		else
			n = read(fd, &extra, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = -errno;
		else if (n > 0 && len == size - 1)
			ret = -EFBIG;
		if (n <= 0 || ret)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ' ||
		       buf[len - 1] == '\t'))
		len--;
	buf[len] = '\0';
	return ret;
}

/* pread @len bytes at @off, short only at end of file; 0 or -errno. */
static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
			  off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

/* A growable array of fixed-size records. */
struct vec {
	void *v;
	size_t n, cap, size;
};

/* Append a zeroed record; NULL (errno ENOMEM) if memory runs out. */
static void *vec_push(struct vec *a)
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

static void *vec_at(const struct vec *a, size_t i)
{
	return (char *)a->v + i * a->size;
}

static void vec_sort(struct vec *a, int (*cmp)(const void *, const void *))
{
	if (a->n)
		qsort(a->v, a->n, a->size, cmp);
}

/* ---- output: text escaping and a small JSON writer ------------------------ */

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
static void text_string(FILE *f, const char *str)
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

static void j_open(struct json *j, const char *key, char c)
{
	if (j->depth == JSON_DEPTH)
		abort();	/* deeper than anything this program prints */
	j_key(j, key);
	fputc(c, j->f);
	j->more[j->depth++] = false;
}

static void j_close(struct json *j, char c)
{
	j->depth--;
	fputc(c, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

static void j_str(struct json *j, const char *key, const char *s)
{
	j_key(j, key);
	if (s)
		json_string(j->f, s);
	else
		fputs("null", j->f);
}

static void j_num(struct json *j, const char *key, long long v)
{
	j_key(j, key);
	fprintf(j->f, "%lld", v);
}

static void j_unum(struct json *j, const char *key, uint64_t v)
{
	j_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

static void j_bool(struct json *j, const char *key, bool v)
{
	j_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void j_null(struct json *j, const char *key)
{
	j_key(j, key);
	fputs("null", j->f);
}

static void j_hex(struct json *j, const char *key, uint64_t v)
{
	j_key(j, key);
	fprintf(j->f, "\"0x%llx\"", (unsigned long long)v);
}

static void j_mode(struct json *j, const char *key, uint64_t mode)
{
	j_key(j, key);
	fprintf(j->f, "\"0%03llo\"", (unsigned long long)mode);
}

/* A sysfs value: a number if it is a decimal integer, else a string. */
static void j_value(struct json *j, const char *key, const char *v)
{
	long long n;

	if (v && parse_ll(v, &n))
		j_num(j, key, n);
	else
		j_str(j, key, v);
}

/* ---- sysfs directories of values (parameters, counters) ----------------- */

struct kv {
	char name[NAME_MAX + 1];
	char value[VALUE_MAX];
	int err;		/* 0, or the errno reading it */
};

static int no_dots(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/*
 * read_values - every file of directory @dir, sorted by name, into a new
 * array @kvs of @n entries (a file that cannot be read has its err set).
 * 0, or -errno if the directory cannot be read.
 */
static int read_values(const char *dir, struct kv **kvs, size_t *n)
{
	struct dirent **names;
	int dfd, cnt, i, ret = 0;

	*kvs = NULL;
	*n = 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	cnt = scandirat(dfd, ".", &names, no_dots, alphasort);
	if (cnt < 0) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	*kvs = calloc(cnt ? (size_t)cnt : 1, sizeof(**kvs));
	if (!*kvs)
		ret = -ENOMEM;
	for (i = 0; i < cnt; i++) {
		if (*kvs) {
			struct kv *e = &(*kvs)[i];

			_Static_assert(sizeof(e->name) ==
				       sizeof(names[i]->d_name), "name size");
			memcpy(e->name, names[i]->d_name, sizeof(e->name));
			e->err = -read_value(dfd, e->name, e->value,
					     sizeof(e->value));
		}
		free(names[i]);
	}
	free(names);
	close(dfd);
	if (!ret)
		*n = (size_t)cnt;
	return ret;
}

/* ---- status ----------------------------------------------------------------- */

struct status {
	bool loaded;
	int version_err;		/* reading SYS_VERSION */
	char version[VALUE_MAX];
	struct kv *limits;
	size_t nlimits;
	int limits_err;
	int dev_err;			/* stat(2) of /dev/xpmem */
	struct stat dev;
	int open_err;			/* open(2) O_RDWR of /dev/xpmem */
	int xversion, xversion_err;	/* xpmem_version() */
	int backend;
	const char *reason;
	unsigned long features;
};

static const struct {
	unsigned long bit;
	const char *name;
} feature_names[] = {
	{ XPMEM_EXT_F_WHOLE_AS, "whole_as" },
	{ XPMEM_EXT_F_ANY_MEMORY, "any_memory" },
	{ XPMEM_EXT_F_MIGRATE, "migrate" },
	{ XPMEM_EXT_F_CROSS_USER, "cross_user" },
	{ XPMEM_EXT_F_REVOKE, "revoke" },
	{ XPMEM_EXT_F_COHERENT, "coherent" },
	{ XPMEM_EXT_F_ATTACH_OPTS, "attach_opts" },
	{ XPMEM_EXT_F_HUGE, "huge" },
	{ XPMEM_EXT_F_KEYS, "keys" },
	{ XPMEM_EXT_F_AUTH, "auth" },
};

static const char *const env_names[] = {
	"XPMEM_BACKEND", "XPMEM_SHM_DIR", "XPMEM_DEBUG",
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* The feature bits no name above covers. */
static unsigned long unnamed_features(unsigned long f)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(feature_names); i++)
		f &= ~feature_names[i].bit;
	return f;
}

static void status_module(struct status *st)
{
	struct stat sb;
	int ret;

	st->loaded = stat(SYS_MODULE, &sb) == 0 && S_ISDIR(sb.st_mode);
	st->version_err = ENOENT;
	st->limits_err = ENOENT;
	if (!st->loaded)
		return;
	st->version_err = -read_value(AT_FDCWD, SYS_VERSION, st->version,
				      sizeof(st->version));
	ret = read_values(SYS_PARAMS, &st->limits, &st->nlimits);
	st->limits_err = -ret;
}

static void status_device(struct status *st)
{
	int fd;

	st->dev_err = stat(XPMEM_DEV_PATH, &st->dev) ? errno : 0;
	fd = open(XPMEM_DEV_PATH, O_RDWR | O_CLOEXEC);
	st->open_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

static void status_library(struct status *st)
{
	errno = 0;
	st->backend = xpmem_ext_backend(&st->reason);
	errno = 0;
	st->xversion = xpmem_version();
	st->xversion_err = st->xversion < 0 ? errno : 0;
	st->features = xpmem_ext_features();
}

static const char *user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return pw ? pw->pw_name : NULL;
}

static const char *group_name(gid_t gid)
{
	struct group *gr = getgrgid(gid);

	return gr ? gr->gr_name : NULL;
}

static const char *file_type(mode_t m)
{
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	if (S_ISREG(m))
		return "regular file";
	if (S_ISDIR(m))
		return "directory";
	return "other";
}

static void print_values_text(const struct kv *kvs, size_t n,
			      const char *indent)
{
	size_t i;

	for (i = 0; i < n; i++) {
		printf("%s%-22s ", indent, kvs[i].name);
		if (kvs[i].err)
			printf("? (%s)", strerror(kvs[i].err));
		else
			text_string(stdout, kvs[i].value);
		putchar('\n');
	}
}

static void status_text_module(const struct status *st)
{
	printf("module:         ");
	if (!st->loaded) {
		printf("not loaded (no " SYS_MODULE ")\n");
		return;
	}
	printf("loaded, version ");
	if (st->version_err == ENOENT)
		printf("not given (no " SYS_VERSION ")");
	else if (st->version_err)
		printf("? (" SYS_VERSION ": %s)", strerror(st->version_err));
	else
		text_string(stdout, st->version);
	putchar('\n');
	if (st->limits_err) {
		printf("limits:         ? (" SYS_PARAMS ": %s)\n",
		       strerror(st->limits_err));
		return;
	}
	printf("limits:%s\n", st->nlimits ? "" : "         (none)");
	print_values_text(st->limits, st->nlimits, "  ");
}

static void status_text_device(const struct status *st)
{
	const char *user, *group;

	printf("device:         " XPMEM_DEV_PATH);
	if (st->dev_err) {
		printf(": %s\n", strerror(st->dev_err));
		return;
	}
	user = user_name(st->dev.st_uid);
	group = group_name(st->dev.st_gid);
	printf(", %s, mode 0%03o, owner ", file_type(st->dev.st_mode),
	       (unsigned int)(st->dev.st_mode & 07777));
	if (user)
		text_string(stdout, user);
	else
		printf("%u", (unsigned int)st->dev.st_uid);
	putchar(':');
	if (group)
		text_string(stdout, group);
	else
		printf("%u", (unsigned int)st->dev.st_gid);
	if (st->open_err)
		printf(", read-write open: no (%s)\n", strerror(st->open_err));
	else
		printf(", read-write open: yes\n");
}

/* "" the first time, then " ": separators of a word list. */
static const char *sep(bool *first)
{
	const char *s = *first ? "" : " ";

	*first = false;
	return s;
}

static void status_text_library(const struct status *st)
{
	unsigned long rest = unnamed_features(st->features);
	bool first = true;
	size_t i;

	if (st->xversion >= 0)
		printf("xpmem_version:  0x%08x\n", (unsigned int)st->xversion);
	else
		printf("xpmem_version:  -1 (%s)\n", strerror(st->xversion_err));
	printf("backend:        %s (", xpmem_ext_backend_name(st->backend));
	text_string(stdout, st->reason ? st->reason : "?");
	printf(")\nfeatures:       ");
	if (!st->features)
		printf("(none)");
	for (i = 0; i < ARRAY_SIZE(feature_names); i++)
		if (st->features & feature_names[i].bit)
			printf("%s%s", sep(&first), feature_names[i].name);
	if (rest)
		printf("%s0x%lx", sep(&first), rest);
	putchar('\n');
}

static void status_text_env(void)
{
	bool any = false;
	size_t i;

	printf("environment:");
	for (i = 0; i < ARRAY_SIZE(env_names); i++) {
		const char *v = getenv(env_names[i]);

		if (!v)
			continue;
		printf("\n  %s=", env_names[i]);
		text_string(stdout, v);
		any = true;
	}
	printf("%s\n", any ? "" : "    (none of XPMEM_BACKEND, XPMEM_SHM_DIR, "
	       "XPMEM_DEBUG is set)");
}

static void j_values(struct json *j, const char *key, const struct kv *kvs,
		     size_t n)
{
	size_t i;

	j_open(j, key, '{');
	for (i = 0; i < n; i++)
		j_value(j, kvs[i].name, kvs[i].err ? NULL : kvs[i].value);
	j_close(j, '}');
}

static void status_json_device(struct json *j, const struct status *st)
{
	j_open(j, "device", '{');
	j_str(j, "path", XPMEM_DEV_PATH);
	j_bool(j, "exists", !st->dev_err);
	if (!st->dev_err) {
		j_str(j, "type", file_type(st->dev.st_mode));
		j_mode(j, "mode", st->dev.st_mode & 07777);
		j_unum(j, "uid", st->dev.st_uid);
		j_str(j, "user", user_name(st->dev.st_uid));
		j_unum(j, "gid", st->dev.st_gid);
		j_str(j, "group", group_name(st->dev.st_gid));
	}
	j_bool(j, "rdwr", !st->open_err);
	j_str(j, "error", st->open_err ? strerror(st->open_err) : NULL);
	j_close(j, '}');
}

static void status_json(const struct status *st)
{
	struct json j = { .f = stdout };
	unsigned long rest = unnamed_features(st->features);
	size_t i;

	j_open(&j, NULL, '{');
	j_open(&j, "module", '{');
	j_bool(&j, "loaded", st->loaded);
	j_str(&j, "version", st->version_err ? NULL : st->version);
	j_values(&j, "limits", st->limits, st->nlimits);
	j_close(&j, '}');
	status_json_device(&j, st);
	j_open(&j, "xpmem_version", '{');
	j_num(&j, "value", st->xversion);
	j_str(&j, "error", st->xversion < 0 ? strerror(st->xversion_err) : NULL);
	j_close(&j, '}');
	j_open(&j, "backend", '{');
	j_num(&j, "id", st->backend);
	j_str(&j, "name", xpmem_ext_backend_name(st->backend));
	j_str(&j, "reason", st->reason);
	j_bool(&j, "usable", st->backend != XPMEM_EXT_BACKEND_NONE);
	j_close(&j, '}');
	j_open(&j, "features", '{');
	j_hex(&j, "mask", st->features);
	j_open(&j, "names", '[');
	for (i = 0; i < ARRAY_SIZE(feature_names); i++)
		if (st->features & feature_names[i].bit)
			j_str(&j, NULL, feature_names[i].name);
	if (rest)
		j_hex(&j, NULL, rest);
	j_close(&j, ']');
	j_close(&j, '}');
	j_open(&j, "environment", '{');
	for (i = 0; i < ARRAY_SIZE(env_names); i++)
		if (getenv(env_names[i]))
			j_str(&j, env_names[i], getenv(env_names[i]));
	j_close(&j, '}');
	j_close(&j, '}');
}

static int cmd_status(bool json)
{
	struct status st = { 0 };

	status_module(&st);
	status_device(&st);
	status_library(&st);
	if (json) {
		status_json(&st);
	} else {
		status_text_module(&st);
		status_text_device(&st);
		status_text_library(&st);
		status_text_env();
	}
	free(st.limits);
	return st.backend == XPMEM_EXT_BACKEND_NONE ? 1 : 0;
}

/* ---- stats ------------------------------------------------------------------ */

static int cmd_stats(bool json)
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

/* ---- list: records ---------------------------------------------------------- */

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

/* ---- list: the kernel backend's /proc/xpmem-objects/<tgid> files ---------- */

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
static int list_kernel(struct listing *l)
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

/* ---- list: the shm backend's registries ----------------------------------- */

/* Whether the registry @st is new to @l (then it is remembered). */
static int registry_new(struct listing *l, const struct stat *st)
{
	struct reg_id *r;
	size_t i;

	for (i = 0; i < l->regs.n; i++) {
		r = vec_at(&l->regs, i);
		if (r->dev == st->st_dev && r->ino == st->st_ino)
			return 0;
	}
	r = vec_push(&l->regs);
	if (!r)
		return -ENOMEM;
	r->dev = st->st_dev;
	r->ino = st->st_ino;
	return 1;
}

/* Add the segments of the valid registry image @buf owned by @pid. */
static int registry_segments(const char *buf, uint64_t pid,
			     struct listing *l)
{
	struct shm_reg_slot s;
	struct sseg *out;
	unsigned int i;

	for (i = 0; i < SHM_REG_SLOTS; i++) {
		memcpy(&s, buf + shm_slot_pos(i), sizeof(s));
		/* free, or a slot being rewritten or not of this backend */
		if (!s.segid || s.segid % SHM_REG_SLOTS != i ||
		    (s.segid & ~SHM_ID_RANDOM) != SHM_ID_MARK)
			continue;
		out = vec_push(&l->shm);
		if (!out)
			return -ENOMEM;
		out->pid = pid;
		out->segid = s.segid;
		out->size = s.size;
		out->mode = s.mode & 07777;
		out->uid = s.uid;
	}
	return 0;
}

/*
 * read_registry - list the segments of the registry open at @fd in
 * process @pid, once per registry; files that are not a registry of this
 * library version are ignored.  0 or -errno.
 */
static int read_registry(int fd, uint64_t pid, struct listing *l)
{
	struct shm_reg_header hdr;
	struct stat st;
	char *buf;
	int ret;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)SHM_REG_SIZE)
		return 0;
	buf = malloc(SHM_REG_SIZE);
	if (!buf)
		return -ENOMEM;
	ret = pread_full(fd, buf, SHM_REG_SIZE, 0);
	if (ret) {
		free(buf);
		return ret == -ENODATA ? 0 : ret;	/* truncated meanwhile */
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.magic == SHM_REG_MAGIC && hdr.nslots == SHM_REG_SLOTS) {
		ret = registry_new(l, &st);
		if (ret > 0)
			ret = registry_segments(buf, pid, l);
	}
	free(buf);
	return ret;
}

/*
 * owner_registry - whether descriptor @name of the /proc/<pid>/fd
 * directory @dfd is an owner's registry: a memfd of that name open for
 * writing.  Peers hold registries too, read-only (the link's mode shows
 * how the descriptor is open).
 */
static bool owner_registry(int dfd, const char *name)
{
	char link[sizeof(REG_LINK) + 1];
	struct stat st;
	ssize_t len;

	len = readlinkat(dfd, name, link, sizeof(link));
	return len == (ssize_t)sizeof(REG_LINK) - 1 &&
	       !memcmp(link, REG_LINK, (size_t)len) &&
	       !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       (st.st_mode & S_IWUSR);
}

/*
 * list_shm_pid - the registries among the descriptors of process @name.
 * Processes whose descriptors the caller may not open (other users,
 * non-dumpable ones) and processes that exit meanwhile are skipped.
 * 0, or 1 after a reported failure.
 */
static int list_shm_pid(int procfd, const char *name, struct listing *l)
{
	struct dirent *e;
	char path[64];
	uint64_t pid;
	int dfd, fd, ret = 0;
	DIR *d;

	if (!parse_u64(name, 10, &pid) || pid == (uint64_t)getpid() ||
	    !path_join(path, sizeof(path), name, "fd"))
		return 0;
	dfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d))) {
		if (!owner_registry(dfd, e->d_name))
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ret = read_registry(fd, pid, l);
		close(fd);
		if (ret) {
			fprintf(stderr, PROG ": /proc/%s/fd/%s: %s\n", name,
				e->d_name, strerror(-ret));
			break;
		}
	}
	closedir(d);
	return ret ? 1 : 0;
}

static int list_shm(struct listing *l)
{
	struct dirent *e;
	int rc = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d) {
		report("/proc", errno);
		return 1;
	}
	while ((e = readdir(d)))
		if (all_digits(e->d_name))
			rc |= list_shm_pid(dirfd(d), e->d_name, l);
	closedir(d);
	return rc;
}

/* ---- list: output ------------------------------------------------------------ */

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_kseg(const void *a, const void *b)
{
	const struct kseg *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->segid, y->segid);
}

static int cmp_kpermit(const void *a, const void *b)
{
	const struct kpermit *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->apid, y->apid);
}

static int cmp_katt(const void *a, const void *b)
{
	const struct katt *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->apid, y->apid) ?:
	       cmp_u64(x->offset, y->offset);
}

static int cmp_sseg(const void *a, const void *b)
{
	const struct sseg *x = a, *y = b;

	return cmp_u64(x->pid, y->pid) ?: cmp_u64(x->segid, y->segid);
}

static const char *access_name(uint64_t access)
{
	return access == ACCESS_RDWR ? "rdwr" : "rdonly";
}

static void list_text_kernel(const struct listing *l)
{
	size_t i;

	if (!l->kernel) {
		printf("kernel backend: module not loaded (no " PROC_OBJECTS
		       " or " PROC_XPMEM ")\n");
		return;
	}
	printf("kernel segments (%zu):\n", l->segs.n);
	if (l->segs.n)
		printf("  %-8s %-16s %-18s %20s %-6s %s\n", "TGID", "SEGID",
		       "VADDR", "SIZE", "MODE", "ATTACHMENTS");
	for (i = 0; i < l->segs.n; i++) {
		const struct kseg *s = vec_at(&l->segs, i);

		printf("  %-8llu 0x%-14llx 0x%-16llx %20llu 0%03llo  %llu\n",
		       (unsigned long long)s->tgid, (unsigned long long)s->segid,
		       (unsigned long long)s->vaddr, (unsigned long long)s->size,
		       (unsigned long long)s->mode, (unsigned long long)s->atts);
	}
	printf("kernel permits (%zu):\n", l->permits.n);
	if (l->permits.n)
		printf("  %-8s %-16s %-16s %-8s %-6s %s\n", "TGID", "APID",
		       "SEGID", "OWNER", "ACCESS", "ATTACHMENTS");
	for (i = 0; i < l->permits.n; i++) {
		const struct kpermit *p = vec_at(&l->permits, i);

		printf("  %-8llu 0x%-14llx 0x%-14llx ",
		       (unsigned long long)p->tgid, (unsigned long long)p->apid,
		       (unsigned long long)p->segid);
		if (p->owner)
			printf("%-8llu ", (unsigned long long)p->owner);
		else
			printf("%-8s ", "removed");
		printf("%-6s %llu\n", access_name(p->access),
		       (unsigned long long)p->atts);
	}
	printf("kernel attachments (%zu):\n", l->atts.n);
	if (l->atts.n)
		printf("  %-8s %-16s %-16s %20s %20s %s\n", "TGID", "SEGID",
		       "APID", "OFFSET", "SIZE", "ACCESS");
	for (i = 0; i < l->atts.n; i++) {
		const struct katt *a = vec_at(&l->atts, i);

		printf("  %-8llu 0x%-14llx 0x%-14llx %20llu %20llu %s\n",
		       (unsigned long long)a->tgid, (unsigned long long)a->segid,
		       (unsigned long long)a->apid, (unsigned long long)a->offset,
		       (unsigned long long)a->size, access_name(a->access));
	}
	printf("hidden: %lu process(es) of other users (their %s files are "
	       "not readable)\n", l->hidden, l->kernel);
}

static void list_text_shm(const struct listing *l)
{
	size_t i;

	printf("shm segments (%zu):\n", l->shm.n);
	if (l->shm.n)
		printf("  %-8s %-16s %14s %-6s %-8s %s\n", "PID", "SEGID",
		       "SIZE", "MODE", "UID", "ATTACHMENTS");
	for (i = 0; i < l->shm.n; i++) {
		const struct sseg *s = vec_at(&l->shm, i);

		printf("  %-8llu 0x%-14llx %14llu 0%03llo  %-8llu -\n",
		       (unsigned long long)s->pid, (unsigned long long)s->segid,
		       (unsigned long long)s->size, (unsigned long long)s->mode,
		       (unsigned long long)s->uid);
	}
}

static void list_json_kernel(struct json *j, const struct listing *l)
{
	size_t i;

	j_open(j, "kernel", '{');
	j_open(j, "segments", '[');
	for (i = 0; i < l->segs.n; i++) {
		const struct kseg *s = vec_at(&l->segs, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", s->tgid);
		j_hex(j, "segid", s->segid);
		j_hex(j, "vaddr", s->vaddr);
		j_unum(j, "size", s->size);
		j_mode(j, "mode", s->mode);
		j_unum(j, "attachments", s->atts);
		j_close(j, '}');
	}
	j_close(j, ']');
	j_open(j, "permits", '[');
	for (i = 0; i < l->permits.n; i++) {
		const struct kpermit *p = vec_at(&l->permits, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", p->tgid);
		j_hex(j, "apid", p->apid);
		j_hex(j, "segid", p->segid);
		j_unum(j, "owner", p->owner);
		j_str(j, "access", access_name(p->access));
		j_unum(j, "attachments", p->atts);
		j_close(j, '}');
	}
	j_close(j, ']');
	j_open(j, "attachments", '[');
	for (i = 0; i < l->atts.n; i++) {
		const struct katt *a = vec_at(&l->atts, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", a->tgid);
		j_hex(j, "segid", a->segid);
		j_hex(j, "apid", a->apid);
		j_unum(j, "offset", a->offset);
		j_unum(j, "size", a->size);
		j_str(j, "access", access_name(a->access));
		j_close(j, '}');
	}
	j_close(j, ']');
	j_unum(j, "hidden", l->hidden);
	j_close(j, '}');
}

static void list_json_shm(struct json *j, const struct listing *l)
{
	size_t i;

	j_open(j, "shm", '{');
	j_open(j, "segments", '[');
	for (i = 0; i < l->shm.n; i++) {
		const struct sseg *s = vec_at(&l->shm, i);

		j_open(j, NULL, '{');
		j_unum(j, "pid", s->pid);
		j_hex(j, "segid", s->segid);
		j_unum(j, "size", s->size);
		j_mode(j, "mode", s->mode);
		j_unum(j, "uid", s->uid);
		j_null(j, "attachments");
		j_close(j, '}');
	}
	j_close(j, ']');
	j_close(j, '}');
}

static int cmd_list(bool json)
{
	struct listing l = {
		.segs = { .size = sizeof(struct kseg) },
		.permits = { .size = sizeof(struct kpermit) },
		.atts = { .size = sizeof(struct katt) },
		.shm = { .size = sizeof(struct sseg) },
		.regs = { .size = sizeof(struct reg_id) },
	};
	struct json j = { .f = stdout };
	int rc;

	rc = list_kernel(&l);
	rc |= list_shm(&l);
	vec_sort(&l.segs, cmp_kseg);
	vec_sort(&l.permits, cmp_kpermit);
	vec_sort(&l.atts, cmp_katt);
	vec_sort(&l.shm, cmp_sseg);
	if (json) {
		j_open(&j, NULL, '{');
		list_json_kernel(&j, &l);
		list_json_shm(&j, &l);
		j_close(&j, '}');
	} else {
		list_text_kernel(&l);
		list_text_shm(&l);
	}
	free(l.segs.v);
	free(l.permits.v);
	free(l.atts.v);
	free(l.shm.v);
	free(l.regs.v);
	return rc;
}

/* ---- command line ------------------------------------------------------------ */

struct command {
	const char *name;
	int (*run)(bool json);
	const char *help;
};

static const struct command commands[] = {
	{ "status", cmd_status,
	  "Whether the module is loaded (" SYS_MODULE ") and its version, its\n"
	  "limits (" SYS_PARAMS "), " XPMEM_DEV_PATH " (mode, owner, whether\n"
	  "you can open it read-write), xpmem_version(), the backend\n"
	  "libxpmem.so.0 gives a process here and why, its feature bits, and\n"
	  "XPMEM_BACKEND, XPMEM_SHM_DIR and XPMEM_DEBUG if set.\n"
	  "Exit status 0 when a backend is usable, 1 when none is.\n" },
	{ "stats", cmd_stats,
	  "Every counter of " SYS_STATS "/, one \"name value\" per line\n"
	  "(global counters: root only).\n"
	  "Exit status 1 when the module is not loaded or they cannot be read.\n" },
	{ "list", cmd_list,
	  "Segments, permits and attachments of the processes you may see.\n"
	  "Kernel backend: every readable " PROC_OBJECTS "/<tgid> file; the\n"
	  "files of other users are not readable and are counted as hidden.\n"
	  "Shm backend: the segments in the registry of every process whose\n"
	  "descriptors you may open (attacher counts are not known there).\n" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: " PROG " [--json] COMMAND [--json]\n"
		"       " PROG " --help | --version\n"
		"Is xpmem in use here, and which backend will a program get?\n"
		"commands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-8s %.*s\n", commands[i].name,
			(int)strcspn(commands[i].help, "\n"), commands[i].help);
	fprintf(f, "options:\n"
		"  --json      one JSON object instead of tables\n"
		"  -h, --help  this help; after a command, that command's help\n"
		"  --version   the package version\n"
		"Exit status: 0 success, 1 runtime failure, 2 usage error.\n");
}

static void command_help(const struct command *c)
{
	printf("usage: " PROG " [--json] %s [--json]\n%s", c->name, c->help);
}

static int usage_error(const struct command *c, const char *what,
		       const char *arg)
{
	fprintf(stderr, PROG "%s%s: %s '", c ? " " : "", c ? c->name : "",
		what);
	text_string(stderr, arg);
	fprintf(stderr, "'\nTry '" PROG "%s%s --help'.\n", c ? " " : "",
		c ? c->name : "");
	return 2;
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* Flush stdout; a failed write (e.g. a full disk) is a failure. */
static int finish(int rc)
{
	int err = 0;

	if (fflush(stdout) != 0)
		err = errno;
	else if (ferror(stdout))
		err = EIO;
	if (!err)
		return rc;
	report("standard output", err);
	return 1;
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	bool json = false;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			if (cmd)
				command_help(cmd);
			else
				usage(stdout);
			return finish(0);
		} else if (!cmd && !strcmp(a, "--version")) {
			printf(PROG " " XPMEM_PKG_VERSION "\n");
			return finish(0);
		} else if (a[0] == '-') {
			return usage_error(cmd, "unknown option", a);
		} else if (cmd) {
			return usage_error(cmd, "unexpected argument", a);
		} else if (!(cmd = find_command(a))) {
			return usage_error(NULL, "unknown command", a);
		}
	}
	if (!cmd) {
		fprintf(stderr, PROG ": no command given\n");
		usage(stderr);
		return 2;
	}
	return finish(cmd->run(json));
}
