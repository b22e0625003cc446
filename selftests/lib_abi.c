// SPDX-License-Identifier: GPL-2.0
/*
 * lib_abi.c - use libxpmem the way Open MPI (smsc/xpmem) and UCX
 * (uct/sm/mm/xpmem) do, through the public header only.
 *
 * Both export their whole address space once per process with
 * xpmem_make(0, XPMEM_MAXADDR_SIZE, ...), hand the segid to peers, and the
 * peers attach page-aligned windows at offsets equal to the owner's virtual
 * addresses, caching the attachments.  Open MPI passes (void *)0666 as
 * xpmem_get's permit value, UCX passes NULL.  On the shm backend the
 * whole-address-space export must fail cleanly (that is how those runtimes
 * learn to fall back) and the rest is skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"

/* The classic ABI, as compiled into existing binaries. */
_Static_assert(sizeof(xpmem_segid_t) == 8, "segid is 64-bit");
_Static_assert(sizeof(xpmem_apid_t) == 8, "apid is 64-bit");
_Static_assert(sizeof(struct xpmem_addr) == 16, "struct xpmem_addr");
_Static_assert(offsetof(struct xpmem_addr, offset) == 8, "xpmem_addr.offset");
_Static_assert(XPMEM_RDONLY == 0x1 && XPMEM_RDWR == 0x2, "get flags");
_Static_assert(XPMEM_PERMIT_MODE == 0x1, "permit type");
_Static_assert(XPMEM_ERRNO_NOPROC == 2004, "NOPROC errno");
_Static_assert(XPMEM_MAXADDR_SIZE == (size_t)-1, "MAXADDR");

#define WINDOWS		4	/* windows the peer attaches */
#define CACHE_SLOTS	8

/* An attachment cache like the runtimes keep: page-aligned window base. */
struct att_cache {
	uintptr_t base[CACHE_SLOTS];
	size_t len[CACHE_SLOTS];
	unsigned char *at[CACHE_SLOTS];
	int n;
	int attaches;		/* xpmem_attach calls made */
};

/* Return the local address of the owner's [addr, addr + len). */
static unsigned char *cache_map(struct att_cache *c, xpmem_apid_t apid,
				uintptr_t addr, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = addr & ~(uintptr_t)(page - 1);
	size_t wlen = ((addr + len - base) + page - 1) & ~(page - 1);
	struct xpmem_addr xa;
	void *p;
	int i;

	for (i = 0; i < c->n; i++)
		if (base >= c->base[i] && base + wlen <= c->base[i] + c->len[i])
			return c->at[i] + (addr - c->base[i]);
	if (c->n == CACHE_SLOTS)
		return NULL;
	xa.apid = apid;
	xa.offset = (off_t)base;
	p = xpmem_attach(xa, wlen, NULL);
	if (p == (void *)-1)
		return NULL;
	c->attaches++;
	c->base[c->n] = base;
	c->len[c->n] = wlen;
	c->at[c->n] = p;
	c->n++;
	return (unsigned char *)p + (addr - base);
}

static int cache_flush(struct att_cache *c)
{
	int i, ret = 0;

	for (i = 0; i < c->n; i++)
		ret |= xpmem_detach(c->at[i]);
	c->n = 0;
	return ret;
}

FIXTURE(abi)
{
	xpmem_segid_t segid;
	size_t page;
};

FIXTURE_SETUP(abi)
{
	const char *why;
	int backend = xpmem_ext_backend(&why);

	self->page = (size_t)sysconf(_SC_PAGESIZE);
	if (backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return, "no backend: %s", why);
	/* UCX's configure requires xpmem_init; it returns 0. */
	ASSERT_EQ(0, xpmem_init());

	errno = 0;
	self->segid = xpmem_make(0, XPMEM_MAXADDR_SIZE, XPMEM_PERMIT_MODE,
				 (void *)0666);
	if (backend == XPMEM_EXT_BACKEND_SHM) {
		/* Both runtime signals must say "not usable". */
		ASSERT_EQ(-1, self->segid);
		ASSERT_EQ(EOPNOTSUPP, errno);
		ASSERT_EQ(-1, xpmem_version());
		SKIP(return, "shm backend: whole address space export "
		     "unsupported (expected; runtimes fall back)");
	}
	ASSERT_LE(0, xpmem_version());
	ASSERT_LT(0, self->segid);
}

FIXTURE_TEARDOWN(abi)
{
	if (self->segid > 0)
		xpmem_remove(self->segid);
}

/*
 * The peer maps windows of the owner's heap and mmap areas at their
 * virtual addresses and reads and writes through them.
 */
static void peer_windows(struct __test_metadata *_metadata,
			 xpmem_segid_t segid, void *permit_value)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = WINDOWS * 4 * page;
	unsigned char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *small = malloc(100);
	int to_peer[2], st;
	pid_t pid;
	size_t i;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_NE(NULL, small);
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 13);
	strcpy(small, "owner's heap string");
	ASSERT_EQ(0, pipe(to_peer));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct att_cache c = { .n = 0 };
		xpmem_apid_t apid;
		unsigned char *p;
		char *s;
		int w;

		close(to_peer[1]);
		apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE,
				 permit_value);
		if (apid <= 0)
			_exit(10);
		/* Unaligned heap object: attach rounds to the page. */
		s = (char *)cache_map(&c, apid, (uintptr_t)small, 100);
		if (!s || strcmp(s, "owner's heap string"))
			_exit(11);
		for (w = 0; w < WINDOWS; w++) {
			uintptr_t a = (uintptr_t)buf + (size_t)w * 4 * page;

			p = cache_map(&c, apid, a, 2 * page);
			if (!p)
				_exit(12);
			for (i = 0; i < 2 * page; i++)
				if (p[i] != (unsigned char)((a - (uintptr_t)buf
							     + i) * 13))
					_exit(13);
			p[0] = 0xee;
			/* Same window again: served by the cache. */
			if (cache_map(&c, apid, a + page, page) != p + page)
				_exit(14);
		}
		if (c.attaches != WINDOWS + 1)
			_exit(15);
		if (cache_flush(&c) || xpmem_release(apid))
			_exit(16);
		_exit(0);
	}
	close(to_peer[0]);
	close(to_peer[1]);
	st = 0;
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	for (i = 0; i < WINDOWS; i++)
		ASSERT_EQ(0xee, buf[i * 4 * page]);
	free(small);
	munmap(buf, len);
}

/* Open MPI and libfabric: non-NULL permit value in xpmem_get. */
TEST_F(abi, openmpi_style)
{
	peer_windows(_metadata, self->segid, (void *)0666);
}

/* UCX and MPICH: NULL permit value. */
TEST_F(abi, ucx_style)
{
	peer_windows(_metadata, self->segid, NULL);
}

TEST_HARNESS_MAIN
