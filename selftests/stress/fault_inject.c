// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fault_inject.c - xpmem_stress's fault injection (see
 * fault_inject.h): the debugfs settings and the worker processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "fault_inject.h"
#include "stress.h"

#define FI_PAGES	32

const char *const fi_names[FI_NOPS] = {
	"open", "make", "get", "attach", "fault", "get(peer)", "attach(peer)",
	"fault(peer)", "owner munmap/mmap", "detach", "release", "remove", "close",
};

struct fi_saved {
	char path[128];
	char val[64];
};

static struct fi_saved fi_saved[32];
static int fi_nsaved;

int fi_write(const char *dir, const char *attr, const char *val)
{
	char path[128], old[64] = "";
	int fd, n;

	snprintf(path, sizeof(path), FI_DEBUGFS "%s/%s", dir, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	n = read(fd, old, sizeof(old) - 1);
	close(fd);
	if (n > 0 && fi_nsaved < 32) {
		old[n] = 0;
		snprintf(fi_saved[fi_nsaved].path, sizeof(fi_saved[0].path), "%s", path);
		snprintf(fi_saved[fi_nsaved].val, sizeof(fi_saved[0].val), "%s", old);
		fi_nsaved++;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	n = write(fd, val, strlen(val));
	close(fd);
	if (n == (int)strlen(val))
		return 0;
fail:
	note("cannot write '%s' to %s: %s", val, path, strerror(errno));
	return -1;
}

void fi_restore(void)
{
	int fd;

	while (fi_nsaved--) {
		fd = open(fi_saved[fi_nsaved].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (write(fd, fi_saved[fi_nsaved].val, strlen(fi_saved[fi_nsaved].val)) < 0)
			note("cannot restore %s", fi_saved[fi_nsaved].path);
		close(fd);
	}
	fi_nsaved = 0;
}

static int set_make_it_fail(int on)
{
	int fd = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -1;
	close(fd);
	return r;
}

/* The module's text range: [.text, .text + size from /proc/modules). */
int module_text(uint64_t *start, uint64_t *end)
{
	char line[256], name[64];
	unsigned long size;
	FILE *f = fopen("/sys/module/xpmem/sections/.text", "re");
	int found = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%" SCNx64, start) != 1)
		*start = 0;
	fclose(f);
	f = fopen("/proc/modules", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu", name, &size) == 2 &&
		    !strcmp(name, "xpmem")) {
			found = 1;
			break;
		}
	fclose(f);
	if (!found || !*start)
		return -1;
	*end = *start + size;
	return 0;
}

static void fi_rec(struct fi_shared *sh, int op, long r)
{
	__atomic_fetch_add(&sh->calls[op], 1, __ATOMIC_RELAXED);
	if (r == -ENOMEM)
		__atomic_fetch_add(&sh->enomem[op], 1, __ATOMIC_RELAXED);
	else if (r < 0)
		__atomic_fetch_add(&sh->fails[op], 1, __ATOMIC_RELAXED);
	if (r < 0 && !clean_errno(r) &&
	    !__atomic_exchange_n(&sh->failed, 1, __ATOMIC_ACQ_REL))
		snprintf(sh->fail, sizeof(sh->fail), "%s: unexpected errno %ld (%s)",
			 fi_names[op], -r, strerror(-r));
}

static void fi_touch(struct fi_shared *sh, int op, void *a, int write)
{
	int i, sig, bad = 0;

	for (i = 0; i < 8; i++) {
		sig = touch((uint8_t *)a + i * PAGE, write, (uint8_t)i);
		bad |= sig;
	}
	/* a fault that cannot allocate is retried or SIGBUS */
	fi_rec(sh, op, bad ? -ENOMEM : 0);
}

/* One round of a worker: what it opened, made, got and attached. */
struct fi_round {
	int fd;
	xpmem_segid_t segid;
	xpmem_apid_t apid, papid;
	void *a, *pa;
};

/*
 * Our segment (@b, or sometimes the whole address space) for the peer to
 * find in @sh, a permit of it, an attachment, and a fault there.
 */
static void fi_own(struct fi_shared *sh, int me, uint8_t *b, struct rng *r,
		   struct fi_round *o)
{
	int whole = chance(r, 30);
	uint64_t off = whole ? (uintptr_t)b : 0;
	long ret;

	ret = xp_make(o->fd, whole ? NULL : b,
		      whole ? XPMEM_MAXADDR_SIZE : FI_PAGES * PAGE, 0666, &o->segid);
	if (ret)
		o->segid = -1;
	fi_rec(sh, FI_MAKE, ret);
	if (ret)
		return;
	sh->off[me] = off;
	sh->segid[me] = o->segid;
	ret = xp_get(o->fd, o->segid, XPMEM_RDWR, &o->apid);
	if (ret)
		o->apid = -1;
	fi_rec(sh, FI_GET, ret);
	if (ret)
		return;
	ret = xp_attach(o->fd, o->apid, off, 16 * PAGE, NULL, &o->a);
	if (ret)
		o->a = NULL;
	fi_rec(sh, FI_ATTACH, ret);
	if (!ret)
		fi_touch(sh, FI_FAULT, o->a, chance(r, 50));
}

/*
 * The peer's current segment, which may be gone already: a permit, an
 * attachment, a fault there, maybe DETACH and RELEASE.
 */
static void fi_peer(struct fi_shared *sh, int me, struct rng *r,
		    struct fi_round *o)
{
	xpmem_segid_t psegid = sh->segid[!me];
	long ret;

	ret = xp_get(o->fd, psegid, XPMEM_RDONLY, &o->papid);
	fi_rec(sh, FI_GET_PEER, ret == -ENOENT || ret == -EINVAL ? 0 : ret);
	if (ret)
		return;
	ret = xp_attach(o->fd, o->papid, sh->off[!me], 8 * PAGE, NULL, &o->pa);
	if (ret)
		o->pa = NULL;
	fi_rec(sh, FI_ATTACH_PEER, ret == -ENOENT ? 0 :
	       ret == -EINVAL ? 0 : ret);
	if (!ret)
		fi_touch(sh, FI_FAULT_PEER, o->pa, 0);
	if (!ret && chance(r, 50)) {
		fi_rec(sh, FI_DETACH, xp_detach(o->fd, o->pa));
		o->pa = NULL;
	}
	if (chance(r, 70))
		fi_rec(sh, FI_RELEASE, xp_release(o->fd, o->papid));
}

/*
 * Owner-side changes under our own attachment; then mostly DETACH,
 * RELEASE and REMOVE of our objects, and the close takes the rest.
 */
static void fi_end(struct fi_shared *sh, uint8_t *b, struct rng *r,
		   struct fi_round *o)
{
	if (munmap(b + 8 * PAGE, 8 * PAGE) ||
	    mmap(b + 8 * PAGE, 8 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != b + 8 * PAGE)
		fi_rec(sh, FI_OWNER_MM, -errno);
	else
		fi_rec(sh, FI_OWNER_MM, 0);
	madvise(b, 4 * PAGE, MADV_DONTNEED);
	if (o->segid > 0 && !chance(r, 20)) {
		if (o->a && chance(r, 50)) {
			fi_rec(sh, FI_DETACH, xp_detach(o->fd, o->a));
			o->a = NULL;
		}
		if (chance(r, 70))
			fi_rec(sh, FI_RELEASE,
			       o->apid > 0 ? xp_release(o->fd, o->apid) : 0);
		fi_rec(sh, FI_REMOVE, xp_remove(o->fd, o->segid));
	}
	/* the rest goes with the close */
	fi_rec(sh, FI_CLOSE, close(o->fd) ? -errno : 0);
	/* attachments outlive the fd: unmap what is left */
	if (o->a)
		munmap(o->a, 16 * PAGE);
	if (o->pa)
		munmap(o->pa, 8 * PAGE);
}

int fi_worker(struct fi_shared *sh, int me, long rounds, uint64_t seed)
{
	uint8_t *b = mmap(NULL, FI_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fi_round o;
	struct rng r;
	long i;

	if (b == MAP_FAILED)
		return 1;
	memset(b, 0x77, FI_PAGES * PAGE);
	rng_init(&r, seed, me);
	probe_install();
	if (set_make_it_fail(1))
		return 2;
	for (i = 0; i < rounds; i++) {
		o = (struct fi_round){ .segid = -1, .apid = -1, .papid = -1 };
		o.fd = xp_open();
		fi_rec(sh, FI_OPEN, o.fd < 0 ? -errno : 0);
		if (o.fd < 0)
			continue;
		fi_own(sh, me, b, &r, &o);
		fi_peer(sh, me, &r, &o);
		fi_end(sh, b, &r, &o);
	}
	set_make_it_fail(0);
	return 0;
}
