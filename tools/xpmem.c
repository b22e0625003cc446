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
 *
 * This file is the command line; the commands and what they read are in
 * tools/cli/ (cli.h lists its files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "xpmem.h"
#include "cli/cli.h"

#ifndef XPMEM_PKG_VERSION
#define XPMEM_PKG_VERSION "unknown"
#endif

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
