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

#define DEMO_SIZE 4096

static int attacher(int rfd)
{
	struct xpmem_addr addr;
	xpmem_segid_t segid;
	char *p;

	if (read(rfd, &segid, sizeof(segid)) != (ssize_t)sizeof(segid)) {
		perror("attacher: read segid");
		return 1;
	}
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, (void *)0600);
	if (addr.apid == -1) {
		perror("attacher: xpmem_get");
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

int main(int argc, char **argv)
{
	const char *reason = NULL;
	int backend, status, pfd[2], ok, version;
	xpmem_segid_t segid;
	char *buf;
	pid_t pid;

	if (argc > 1) {
		bool help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");

		if (!help)
			fprintf(stderr, "xpmem-demo: unexpected argument '%s'\n",
				argv[1]);
		fprintf(help ? stdout : stderr,
			"usage: %s\n"
			"  An owner process exports a page, a child attaches it, reads the\n"
			"  owner's message and writes a reply the owner then reads.\n"
			"  XPMEM_BACKEND=kernel|shm|auto selects the backend.\n"
			"  Exit status 0 when the reply came back, 1 otherwise.\n",
			argv[0]);
		return help ? 0 : 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	backend = xpmem_ext_backend(&reason);
	version = xpmem_version();	/* -1 (ENODEV) on the shm backend */
	if (version >= 0)
		printf("xpmem-demo: backend %s (%s), module version 0x%x\n",
		       xpmem_ext_backend_name(backend), reason ? reason : "?", version);
	else
		printf("xpmem-demo: backend %s (%s), no module version\n",
		       xpmem_ext_backend_name(backend), reason ? reason : "?");

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
	       (int)getpid(), DEMO_SIZE, (void *)buf, (unsigned long long)segid);

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
	ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	     strncmp(buf + DEMO_SIZE / 2, "hello back", 10) == 0;
	printf("owner (pid %d): my page now says: \"%s\"\n", (int)getpid(),
	       buf + DEMO_SIZE / 2);
	if (xpmem_remove(segid) != 0)
		perror("owner: xpmem_remove");
	xpmem_ext_free(buf);
	printf("xpmem-demo: %s\n", ok ? "SUCCESS: memory shared both ways" : "FAILED");
	return ok ? 0 : 1;
}
