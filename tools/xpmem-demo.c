// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-demo - an owner process and an attacher process sharing memory.
 *
 * The owner allocates a page, writes a message into it and exports it with
 * xpmem_make().  It forks; the child (the attacher) receives the segid
 * through a pipe, gets a permit (xpmem_get), attaches (xpmem_attach), prints
 * what it reads, writes a reply into the same memory and detaches.  The owner
 * then prints the reply it sees in its own page, proving both directions.
 *
 * The page comes from xpmem_ext_alloc() so that the same program works on
 * both backends (the POSIX shm fallback can only export memory from its own
 * allocator); everything else is the classic libxpmem API.
 *
 * Usage: xpmem-demo   (XPMEM_BACKEND=kernel|shm|auto selects the backend)
 * Exit status 0 when the reply came back, 1 otherwise.
 *
 * Across containers, in two commands: "xpmem-demo share SECRET" exports
 * a page that GET finds from any IPC namespace of the host when SECRET is
 * presented (XPMEM_EXT_MAKE_ANY_NS), prints its segid and waits for a line
 * (or EOF) on standard input; "xpmem-demo join SEGID [SECRET]", run in
 * another container, attaches it and replies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xpmem.h"

/* One page (the kernel's size: 4 KiB on x86_64, up to 64 KiB on arm64). */
#define DEMO_SIZE ((size_t)sysconf(_SC_PAGESIZE))

/*
 * Get @segid (presenting @secret, if not NULL), attach it, print the
 * owner's message, write the reply, detach and release.  0 or 1.
 */
static int join(xpmem_segid_t segid, const char *secret)
{
	struct xpmem_addr addr;
	char *p;

	if (secret)
		addr.apid = xpmem_ext_get(segid, XPMEM_RDWR, secret,
					  strlen(secret));
	else
		addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE,
				      (void *)0600);
	if (addr.apid == -1) {
		perror(secret ? "attacher: xpmem_ext_get" :
				"attacher: xpmem_get");
		return 1;
	}
	addr.offset = 0;
	p = xpmem_attach(addr, DEMO_SIZE, NULL);
	if (p == (void *)-1) {
		perror("attacher: xpmem_attach");
		xpmem_release(addr.apid);
		return 1;
	}
	printf("attacher (pid %d): attached segid 0x%llx at %p, reads: \"%s\"\n",
	       (int)getpid(), (unsigned long long)segid, (void *)p, p);
	snprintf(p + DEMO_SIZE / 2, DEMO_SIZE / 2, "hello back from attacher pid %d",
		 (int)getpid());
	if (xpmem_detach(p) != 0)
		perror("attacher: xpmem_detach");
	if (xpmem_release(addr.apid) != 0)
		perror("attacher: xpmem_release");
	return 0;
}

static int attacher(int rfd)
{
	xpmem_segid_t segid;

	if (read(rfd, &segid, sizeof(segid)) != (ssize_t)sizeof(segid)) {
		perror("attacher: read segid");
		return 1;
	}
	return join(segid, NULL);
}

/* The backend, its reason and the module version, on one line. */
static void say_backend(void)
{
	const char *reason = NULL;
	int backend = xpmem_ext_backend(&reason);
	int version = xpmem_version();	/* -1 (ENODEV) on the shm backend */

	if (version >= 0)
		printf("xpmem-demo: backend %s (%s), module version 0x%x\n",
		       xpmem_ext_backend_name(backend), reason ? reason : "?", version);
	else
		printf("xpmem-demo: backend %s (%s), no module version\n",
		       xpmem_ext_backend_name(backend), reason ? reason : "?");
}

/* The owner's page after the attacher: 1 if it holds the reply. */
static int owner_sees_reply(const char *buf)
{
	printf("owner (pid %d): my page now says: \"%s\"\n", (int)getpid(),
	       buf + DEMO_SIZE / 2);
	return strncmp(buf + DEMO_SIZE / 2, "hello back", 10) == 0;
}

/*
 * "share SECRET": export a page to any IPC namespace of the host for
 * holders of SECRET, print the segid, wait for a line or EOF on standard
 * input, then show the page and remove the segment.
 */
static int share(const char *secret)
{
	xpmem_segid_t segid;
	char *buf, line[64];
	int ok;

	buf = xpmem_ext_alloc(DEMO_SIZE, 0);
	if (!buf) {
		perror("owner: xpmem_ext_alloc");
		return 1;
	}
	snprintf(buf, DEMO_SIZE / 2, "hello from owner pid %d", (int)getpid());
	segid = xpmem_ext_make(buf, DEMO_SIZE, 0600, XPMEM_EXT_MAKE_ANY_NS,
			       NULL, 0, secret, strlen(secret));
	if (segid == -1) {
		perror("owner: xpmem_ext_make(XPMEM_EXT_MAKE_ANY_NS)");
		xpmem_ext_free(buf);
		return 1;
	}
	printf("owner (pid %d): exported %d bytes to every IPC namespace, with a secret, as segid 0x%llx\n",
	       (int)getpid(), (int)DEMO_SIZE, (unsigned long long)segid);
	printf("segid 0x%llx\n", (unsigned long long)segid);
	/* until told (a line) or the writer goes (EOF) */
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		perror("owner: read standard input");
	ok = owner_sees_reply(buf);
	if (xpmem_remove(segid) != 0)
		perror("owner: xpmem_remove");
	xpmem_ext_free(buf);
	printf("xpmem-demo: %s\n", ok ? "SUCCESS: memory shared both ways" : "FAILED");
	return ok ? 0 : 1;
}

static int usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s\n"
		"       %s share SECRET\n"
		"       %s join SEGID [SECRET]\n"
		"  Without a command: an owner process exports a page, a child\n"
		"  attaches it, reads the owner's message and writes a reply the\n"
		"  owner then reads.\n"
		"  share: export a page that any IPC namespace (container) of this\n"
		"  host may attach with SECRET; print \"segid 0x...\"; wait for a line\n"
		"  or EOF on standard input; show the reply (kernel backend only).\n"
		"  join: attach segment SEGID (with SECRET, if given), print the\n"
		"  owner's message and write the reply.\n"
		"  XPMEM_BACKEND=kernel|shm|auto selects the backend.\n"
		"  Exit status 0 when the reply came back (join: was written),\n"
		"  1 otherwise, 2 for a usage error.\n",
		argv0, argv0, argv0);
	return f == stdout ? 0 : 2;
}

/*
 * The default mode: export a page, fork a process that attaches it and
 * replies in it, check the reply.  Exit status 0 when it came back.
 */
static int demo(void)
{
	int status, pfd[2], ok;
	xpmem_segid_t segid;
	char *buf;
	pid_t pid;

	buf = xpmem_ext_alloc(DEMO_SIZE, 0);
	if (!buf) {
		perror("owner: xpmem_ext_alloc");
		return 1;
	}
	snprintf(buf, DEMO_SIZE / 2, "hello from owner pid %d", (int)getpid());
	segid = xpmem_make(buf, DEMO_SIZE, XPMEM_PERMIT_MODE, (void *)0600);
	if (segid == -1) {
		perror("owner: xpmem_make");
		return 1;
	}
	printf("owner (pid %d): exported %d bytes at %p as segid 0x%llx\n",
	       (int)getpid(), (int)DEMO_SIZE, (void *)buf, (unsigned long long)segid);

	if (pipe(pfd) != 0) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(pfd[1]);
		_exit(attacher(pfd[0]));
	}
	close(pfd[0]);
	if (write(pfd[1], &segid, sizeof(segid)) != (ssize_t)sizeof(segid))
		perror("owner: write segid");
	close(pfd[1]);
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 1;
	}
	ok = owner_sees_reply(buf) && WIFEXITED(status) &&
	     WEXITSTATUS(status) == 0;
	if (xpmem_remove(segid) != 0)
		perror("owner: xpmem_remove");
	xpmem_ext_free(buf);
	printf("xpmem-demo: %s\n", ok ? "SUCCESS: memory shared both ways" : "FAILED");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	xpmem_segid_t segid;
	char *end;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "share") && argv[2][0]) {
		say_backend();
		return share(argv[2]);
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "join")) {
		errno = 0;
		segid = (xpmem_segid_t)strtoll(argv[2], &end, 0);
		if (errno || *end || segid <= 0) {
			fprintf(stderr, "xpmem-demo: '%s' is not a segid\n",
				argv[2]);
			return usage(stderr, argv[0]);
		}
		say_backend();
		return join(segid, argc == 4 ? argv[3] : NULL);
	}
	if (argc > 1) {
		fprintf(stderr, "xpmem-demo: unexpected argument '%s'\n",
			argv[1]);
		return usage(stderr, argv[0]);
	}
	say_backend();
	return demo();
}
