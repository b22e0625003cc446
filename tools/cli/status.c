// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * status.c - `xpmem status`: the module, /dev/xpmem, the library's
 * backend and its features, the environment; as text or JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpmem.h"
#include "cli.h"

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

int cmd_status(bool json)
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
