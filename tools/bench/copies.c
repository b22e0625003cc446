// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * copies.c - the attacher's copies through a permit, no attachment:
 * xpmem_ext_copy, the library's queue at several depths, and the
 * caller's own io_uring into a registered buffer; beside them memcpy out
 * of a warm attachment, what they compete with.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include <liburing.h>

#include "bench.h"

/*
 * Copies of @size bytes from segment offset 0 into @dst with at most
 * @depth in flight through the library's queue, @n in all.  The time per
 * copy in ns, or a negative number on error.
 */
static double queued_copies(struct xpmem_ext_queue *q, xpmem_apid_t apid,
			    char *dst, size_t size, size_t n,
			    unsigned int depth)
{
	struct xpmem_ext_completion c[16];
	size_t issued = 0, done = 0;
	double t0 = now_ns();
	int got, i;

	while (done < n) {
		while (issued < n && issued - done < depth) {
			if (xpmem_ext_queue_copy(q, apid, 0, dst, size, 0,
						 issued))
				return -1;
			issued++;
		}
		if (xpmem_ext_queue_submit(q) < 0)
			return -1;
		got = xpmem_ext_queue_reap(q, c, 16, 1);
		if (got <= 0)
			return -1;
		for (i = 0; i < got; i++)
			if (c[i].result != (long long)size) {
				errno = c[i].result < 0 ? (int)-c[i].result : EIO;
				return -1;
			}
		done += (size_t)got;
	}
	return (now_ns() - t0) / n;
}

/*
 * The same copies from the caller's own ring into a buffer registered
 * with it (xpmem_ext_prep_copy_fixed), 16 in flight, @n in all: the time
 * per copy in ns; NaN where there is no such ring; negative on error.
 */
static double fixed_copies(xpmem_apid_t apid, char *dst, size_t size,
			   size_t n)
{
	struct iovec reg = { dst, size };
	struct xpmem_ext_copy arg = {
		.apid = apid, .addr = (uintptr_t)dst, .len = size,
	};
	size_t issued = 0, done = 0;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	double t0, t = -1;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_URING_FIXED) ||
	    io_uring_queue_init(16, &ring, 0))
		return NaN;
	if (io_uring_register_buffers(&ring, &reg, 1)) {
		io_uring_queue_exit(&ring);
		return NaN;
	}
	t0 = now_ns();
	while (done < n) {
		for (; issued < n && issued - done < 16; issued++)
			if (xpmem_ext_prep_copy_fixed(io_uring_get_sqe(&ring),
						      &arg, 0))
				goto out;
		if (io_uring_submit_and_wait(&ring, 1) < 0)
			goto out;
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			if (cqe->res != (int)size) {
				errno = cqe->res < 0 ? -cqe->res : EIO;
				t = -1;
				goto out;
			}
			io_uring_cqe_seen(&ring, cqe);
			done++;
		}
	}
	t = (now_ns() - t0) / n;
out:
	io_uring_queue_exit(&ring);
	return t;
}


/*
 * What a copy competes with: memcpy out of a warm attachment of @apid,
 * its bytes checked first, into AV(M_XMCPY2).  0, or 1 with a message.
 */
static int warm_memcpy(const struct attacher_ctx *a, int rep, size_t inner,
		       xpmem_apid_t apid)
{
	struct xpmem_addr addr = { .apid = apid, .offset = 0 };
	size_t size = a->bc->size, k;
	char *m = xpmem_attach(addr, size, NULL);
	double t0;

	if (m == (void *)-1)
		return afail("xpmem_attach");
	if (read_pass(m, size) != expected_sum(size)) {
		fprintf(stderr, "xpmem-bench: attacher: attachment data differs\n");
		return 1;
	}
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		memcpy(a->dst, m, size);
	AV(a, M_XMCPY2, rep) = mibps(size, (now_ns() - t0) / inner);
	if (xpmem_detach(m))
		return afail("xpmem_detach");
	return 0;
}

/* xpmem_ext_copy, synchronous, @inner times; the bytes checked. */
static int sync_copies(const struct attacher_ctx *a, int rep, size_t inner,
		       xpmem_apid_t apid)
{
	size_t size = a->bc->size, k;
	double t0, t;

	memset(a->dst, 0, size);
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		if (xpmem_ext_copy(apid, 0, a->dst, size, 0) != (ssize_t)size)
			return afail("xpmem_ext_copy");
	t = now_ns() - t0;
	if (read_pass(a->dst, size) != expected_sum(size)) {
		fprintf(stderr, "xpmem-bench: attacher: xpmem_ext_copy %s %zu bytes: data differs from what the owner wrote\n",
			kind_name[a->bc->kind], size);
		return 1;
	}
	AV(a, M_XCOPY, rep) = mibps(size, t / inner);
	return 0;
}

/*
 * The library's queue with 1, 4 and 16 copies in flight, then the
 * caller's own ring with 16: at least as many copies as are in flight,
 * and at most @cap.
 */
static int ring_copies(const struct attacher_ctx *a, int rep, size_t inner,
		       size_t cap, xpmem_apid_t apid)
{
	static const unsigned int depth[3] = { 1, 4, 16 };
	static const int metric[3] = { M_ACOPY1, M_ACOPY4, M_ACOPY16 };
	size_t size = a->bc->size, n;
	struct xpmem_ext_queue *q;
	double t;
	int d;

	q = xpmem_ext_queue_create(16);
	if (!q)
		return afail("xpmem_ext_queue_create");
	for (d = 0; d < 3; d++) {
		n = inner > depth[d] ? inner : depth[d];
		if (n > cap)
			n = cap;
		t = queued_copies(q, apid, a->dst, size, n, depth[d]);
		if (t < 0) {
			xpmem_ext_queue_destroy(q);
			return afail("queued xpmem_ext_copy");
		}
		AV(a, metric[d], rep) = mibps(size, t);
	}
	xpmem_ext_queue_destroy(q);
	n = inner > 16 ? inner : 16;
	t = fixed_copies(apid, a->dst, size, n > cap ? cap : n);
	if (t < 0)
		return afail("xpmem_ext_prep_copy_fixed copies");
	AV(a, M_FCOPY16, rep) = mibps(size, t);
	return 0;
}

/*
 * memcpy out of a warm attachment, xpmem_ext_copy (synchronous) and the
 * queue with 1, 4 and 16 copies in flight, each copy the whole segment;
 * at least as many copies as are in flight, and at most 256 MiB per
 * measurement.  Checked: the bytes the attachment and a synchronous copy
 * bring.
 */
int async_copies(const struct attacher_ctx *a, int rep, size_t inner)
{
	size_t size = a->bc->size;
	size_t cap = size >= 256 * MIB ? 1 : 256 * MIB / size;
	xpmem_apid_t apid;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_COPY)) {
		AV(a, M_ACOPY1, rep) = AV(a, M_ACOPY4, rep) = NaN;
		AV(a, M_ACOPY16, rep) = NaN;
		AV(a, M_XMCPY2, rep) = AV(a, M_XCOPY, rep) = NaN;
		AV(a, M_FCOPY16, rep) = NaN;
		AV(a, M_ACOPY16_PVM, rep) = AV(a, M_ACOPY16_XMC2, rep) = NaN;
		return 0;
	}
	apid = xpmem_get(a->job->segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	if (apid == -1)
		return afail("xpmem_get");
	if (warm_memcpy(a, rep, inner, apid) ||
	    sync_copies(a, rep, inner, apid) ||
	    ring_copies(a, rep, inner, cap, apid))
		return 1;
	if (xpmem_release(apid))
		return afail("xpmem_release");
	return 0;
}
