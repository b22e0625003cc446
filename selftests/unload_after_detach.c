// SPDX-License-Identifier: GPL-2.0
/*
 * unload_after_detach - the VM rig's check that the module unloads at
 * once after the last attachment is gone, and leaves nothing running.
 *
 * Not a suite: selftests/vm/init.sh runs it after the suites, as root,
 * with the module loaded and unused.  A child makes a segment of its own
 * buffer, attaches it, reads it, detaches and exits; as soon as the child
 * is reaped (its files released), the module is removed (delete_module(2),
 * O_NONBLOCK, as rmmod does).  The end of the child's attachment runs in a
 * worker, queued at once when the child's /dev/xpmem closes, and holds the
 * module until it has run: the removal is retried while it says EAGAIN,
 * for at most 5 s (a batch of ends left waiting for good would hold the
 * module for good).  Exit status 0 if the module was removed, 1 otherwise;
 * the tries are printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#define BUF_SIZE	(64UL << 10)
#define RETRY_US	10000
#define MAX_TRIES	500		/* 5 s */

/* The child: one attachment of its own buffer, made and ended. */
static int attach_and_detach(void)
{
	struct xpmem_addr addr;
	xpmem_segid_t segid;
	char *buf, *att;

	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 0x5a, BUF_SIZE);
	segid = xpmem_make(buf, BUF_SIZE, XPMEM_PERMIT_MODE, (void *)0600);
	if (segid == -1) {
		perror("unload_after_detach: xpmem_make");
		return 1;
	}
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid == -1) {
		perror("unload_after_detach: xpmem_get");
		return 1;
	}
	addr.offset = 0;
	att = xpmem_attach(addr, BUF_SIZE, NULL);
	if (att == (void *)-1) {
		perror("unload_after_detach: xpmem_attach");
		return 1;
	}
	if (att[BUF_SIZE - 1] != 0x5a) {
		fprintf(stderr, "unload_after_detach: attachment reads %#x\n",
			att[BUF_SIZE - 1]);
		return 1;
	}
	if (xpmem_detach(att) || xpmem_release(addr.apid) ||
	    xpmem_remove(segid)) {
		perror("unload_after_detach: detach, release or remove");
		return 1;
	}
	return 0;
}

int main(void)
{
	int status, tries;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		perror("unload_after_detach: fork");
		return 1;
	}
	if (pid == 0)
		_exit(attach_and_detach());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "unload_after_detach: the child failed\n");
		return 1;
	}
	for (tries = 1; syscall(SYS_delete_module, "xpmem", O_NONBLOCK);
	     tries++) {
		if (errno != EAGAIN || tries == MAX_TRIES) {
			fprintf(stderr, "unload_after_detach: delete_module (try %d): %s\n",
				tries, strerror(errno));
			return 1;
		}
		usleep(RETRY_US);
	}
	printf("unload_after_detach: module removed at try %d\n", tries);
	return 0;
}
