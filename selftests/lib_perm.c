// SPDX-License-Identifier: GPL-2.0
/*
 * lib_perm.c - the permit modes of libxpmem's segments across users, on
 * both backends: an owner of one uid, peers of its uid, of its group (as
 * a primary and as a supplementary group), of neither, and root, each
 * asking for a read-only and a read-write permit, for each mode of the
 * variants.  Needs root (skips without): the children drop to alice, bob
 * and carol (uid/gid 1000/1001/1002).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"

FIXTURE(perm)
{
	int backend;
};

FIXTURE_VARIANT(perm)
{
	unsigned int mode;
};

FIXTURE_VARIANT_ADD(perm, m0600) { .mode = 0600 };
FIXTURE_VARIANT_ADD(perm, m0640) { .mode = 0640 };
FIXTURE_VARIANT_ADD(perm, m0660) { .mode = 0660 };
FIXTURE_VARIANT_ADD(perm, m0666) { .mode = 0666 };
FIXTURE_VARIANT_ADD(perm, m0400) { .mode = 0400 };
FIXTURE_VARIANT_ADD(perm, m0066) { .mode = 0066 };
FIXTURE_VARIANT_ADD(perm, m0604) { .mode = 0604 };

FIXTURE_SETUP(perm)
{
	const char *why;

	page = (size_t)sysconf(_SC_PAGESIZE);
	self->backend = xpmem_ext_backend(&why);
	if (self->backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return, "no backend: %s", why);
	if (geteuid() != 0)
		SKIP(return, "needs root to switch uid/gid");
}

FIXTURE_TEARDOWN(perm)
{
}

/*
 * The owner is alice (1000:1000).  Peers: alice, bob in alice's group (as
 * his primary group), carol with alice's group as a supplementary group,
 * carol alone, root.
 */
enum { WHO_OWNER, WHO_GROUP, WHO_SUPP, WHO_OTHER, WHO_ROOT, WHO_N };
static const uid_t who_uid[WHO_N] = { 1000, 1001, 1002, 1002, 0 };
static const gid_t who_gid[WHO_N] = { 1000, 1000, 1002, 1002, 0 };
static const gid_t who_supp[WHO_N] = { 0, 0, 1000, 0, 0 };
static const char *const who_name[WHO_N] = {
	"owner", "group (primary)", "group (supplementary)", "other", "root"
};

/* What both backends answer: 1 = permit granted. */
static int perm_expect(unsigned int mode, int who, int flags)
{
	unsigned int need = flags == XPMEM_RDONLY ? 4 : 6, bits;

	if (who == WHO_ROOT)
		return 1;		/* CAP_IPC_OWNER */
	bits = who == WHO_OWNER ? mode >> 6 :
	       who == WHO_GROUP || who == WHO_SUPP ? mode >> 3 : mode;
	return (bits & need) == need;
}

/*
 * perm_peer - in a child: become @who, get @segid with @flags, attach it
 * and check what a permit gives: the owner's bytes, a writable mapping
 * for RDWR, one that cannot be made writable for RDONLY.  Exits CHILD_OK,
 * CHILD_EACCES or a step number.
 */
static void perm_peer(xpmem_segid_t segid, int who, int flags, int shm)
{
	struct xpmem_addr addr = { .offset = 0 };
	volatile unsigned char *at;

	if (who != WHO_ROOT &&
	    become(who_uid[who], who_gid[who], who_supp[who]))
		_exit(10);
	addr.apid = xpmem_get(segid, flags, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid == -1)
		_exit(errno == EACCES ? CHILD_EACCES : 20);
	at = xpmem_attach(addr, page, NULL);
	if (at == (void *)-1)
		_exit(21);
	if (check((unsigned char *)at, page, 51))
		_exit(22);
	if (flags == XPMEM_RDWR) {
		at[page - 1] = at[page - 1];	/* others check the value */
	} else if (!mprotect((void *)at, page, PROT_READ | PROT_WRITE) ||
		   (shm && errno != EACCES)) {
		_exit(23);
	}
	if (xpmem_detach((void *)at) || xpmem_release(addr.apid))
		_exit(24);
	_exit(CHILD_OK);
}

TEST_F(perm, matrix)
{
	int seg_pipe[2], hold[2];
	xpmem_segid_t segid;
	pid_t owner;
	int who, fl, st;

	if (self->backend == XPMEM_EXT_BACKEND_NONE || geteuid() != 0)
		return;
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s;

		close(hold[1]);
		if (become(who_uid[WHO_OWNER], who_gid[WHO_OWNER], 0))
			_exit(10);
		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 51);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE,
			       (void *)(uintptr_t)variant->mode);
		if (s <= 0)
			_exit(12);
		if (write_all(seg_pipe[1], &s, sizeof(s)))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	ASSERT_EQ(0, read_all(seg_pipe[0], &segid, sizeof(segid)));

	for (who = 0; who < WHO_N; who++) {
		for (fl = XPMEM_RDONLY; fl <= XPMEM_RDWR; fl++) {
			pid_t pid = fork();

			ASSERT_LE(0, pid);
			if (pid == 0) {
				close(hold[1]);
				perm_peer(segid, who, fl, self->backend ==
					  XPMEM_EXT_BACKEND_SHM);
			}
			st = wait_status(pid);
			ASSERT_TRUE(WIFEXITED(st));
			ASSERT_EQ(perm_expect(variant->mode, who, fl) ?
				  CHILD_OK : CHILD_EACCES, WEXITSTATUS(st))
				TH_LOG("mode %#o, %s (uid %d gid %d), %s",
				       variant->mode, who_name[who],
				       (int)who_uid[who], (int)who_gid[who],
				       fl == XPMEM_RDONLY ? "RDONLY" : "RDWR");
		}
	}
	close(hold[1]);
	st = wait_status(owner);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
}

TEST_HARNESS_MAIN
