// SPDX-License-Identifier: LGPL-2.1
/*
 * queue.c - the library's completion queue (xpmem_ext_queue_*): copies and
 * populates of either backend, run by an io_uring the queue owns (liburing)
 * and the backend's prep op, or, where there is no io_uring (the kernel
 * refuses io_uring_setup, or the backend cannot prep), run one after the
 * other at submit with their completions kept until reaped.
 *
 * Each operation has a slot holding its argument, which the kernel reads
 * when it issues the operation; the slot's index is the SQE's user_data.
 * Slots are free, queued (prepared, not submitted), or in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpmem_lib.h"

union queue_arg {
	struct xpmem_ext_copy copy;
	struct xpmem_ext_populate populate;
};

struct queue_slot {
	union queue_arg arg;
	unsigned int op;		/* XPMEM_CMD_EXT_COPY or _POPULATE */
	unsigned long long tag;
	long long result;		/* known before the ring: done[] */
	unsigned int next;		/* free list, or the pending list */
};

#define QUEUE_NONE	(~0U)

struct xpmem_ext_queue {
	const struct xpmem_lib_backend *be;
	struct io_uring ring;
	int have_ring;
	pid_t pid;			/* the ring is this process's */
	unsigned int depth;
	struct queue_slot *slots;
	unsigned int free;		/* first free slot */
	unsigned int queued;		/* SQEs prepared, or pending */
	unsigned int inflight;		/* submitted, not reaped */
	/* without a ring: the pending list, run at submit */
	unsigned int pend_head, pend_tail;
	/*
	 * Slots whose result is known without the ring: those run at
	 * submit, and those the backend's prep refused (the refusal is
	 * their completion, as the kernel's would be in a CQE); the latter
	 * wait in early[] for the next submit.
	 */
	unsigned int *done, ndone;
	unsigned int *early, nearly;
};

struct xpmem_ext_queue *xpmem_lib_queue_create(
	const struct xpmem_lib_backend *be, unsigned int depth)
{
	struct xpmem_ext_queue *q = calloc(1, sizeof(*q));
	unsigned int i;
	int ret;

	if (!q)
		return NULL;
	q->be = be;
	q->depth = depth;
	q->pid = getpid();
	q->slots = calloc(depth, sizeof(*q->slots));
	q->done = calloc(depth, sizeof(*q->done));
	q->early = calloc(depth, sizeof(*q->early));
	if (!q->slots || !q->done || !q->early) {
		xpmem_lib_queue_destroy(q);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < depth; i++)
		q->slots[i].next = i + 1 < depth ? i + 1 : QUEUE_NONE;
	q->pend_head = q->pend_tail = QUEUE_NONE;
	if (be->prep && (xpmem_lib_features(be) & XPMEM_EXT_F_URING)) {
		ret = io_uring_queue_init(depth, &q->ring, 0);
		if (!ret)
			q->have_ring = 1;
		else
			xpmem_lib_log("queue: io_uring_queue_init: %s; "
				      "operations run at submit",
				      strerror(-ret));
	}
	return q;
}

static void slot_free(struct xpmem_ext_queue *q, unsigned int i)
{
	q->slots[i].next = q->free;
	q->free = i;
}

int xpmem_lib_queue_add(struct xpmem_ext_queue *q, unsigned int op,
			const void *arg, size_t arg_len,
			unsigned long long tag)
{
	struct io_uring_sqe tmp, *sqe = NULL;
	unsigned int i = q->free;
	struct queue_slot *s;
	int ret = 0;

	if (q->pid != getpid())
		return -EINVAL;		/* not inherited over fork() */
	if (i == QUEUE_NONE)
		return -EBUSY;
	s = &q->slots[i];
	memcpy(&s->arg, arg, arg_len);
	if (q->have_ring) {
		/* prepared aside: a refused operation takes no SQE */
		memset(&tmp, 0, sizeof(tmp));
		ret = q->be->prep(&tmp, op, &s->arg, -1);
		if (!ret) {
			sqe = io_uring_get_sqe(&q->ring);
			if (!sqe)
				return -EBUSY;
			tmp.user_data = i;
			*sqe = tmp;
		}
	}
	q->free = s->next;
	s->op = op;
	s->tag = tag;
	s->next = QUEUE_NONE;
	if (ret) {
		s->result = ret;
		q->early[q->nearly++] = i;
		return 0;
	}
	if (!q->have_ring) {
		if (q->pend_tail == QUEUE_NONE)
			q->pend_head = i;
		else
			q->slots[q->pend_tail].next = i;
		q->pend_tail = i;
	}
	q->queued++;
	return 0;
}

/* Without a ring: run one operation now, as the ring would have. */
static long long queue_run(struct xpmem_ext_queue *q, struct queue_slot *s)
{
	const struct xpmem_ext_populate *p = &s->arg.populate;

	if (s->op == XPMEM_CMD_EXT_POPULATE)
		return q->be->populate((void *)(uintptr_t)p->vaddr, p->len,
				       p->flags);
	return q->be->copy(&s->arg.copy);
}

int xpmem_lib_queue_submit(struct xpmem_ext_queue *q)
{
	unsigned int n = q->queued, i, early = q->nearly;
	int ret;

	if (q->pid != getpid())
		return -EINVAL;
	if (q->have_ring && n) {
		ret = io_uring_submit(&q->ring);
		if (ret < 0)
			return ret;
		/* what the kernel did not take stays queued for next time */
		if ((unsigned int)ret < n)
			n = (unsigned int)ret;
	}
	while (!q->have_ring && (i = q->pend_head) != QUEUE_NONE) {
		struct queue_slot *s = &q->slots[i];

		q->pend_head = s->next;
		s->result = queue_run(q, s);
		q->done[q->ndone++] = i;
	}
	q->pend_tail = QUEUE_NONE;
	for (i = 0; i < early; i++)
		q->done[q->ndone++] = q->early[i];
	q->nearly = 0;
	q->queued -= n;
	q->inflight += n + early;
	return (int)(n + early);
}

/* One completion out of a slot, which is free again. */
static void queue_complete(struct xpmem_ext_queue *q, unsigned int i,
			   long long result, struct xpmem_ext_completion *c)
{
	c->tag = q->slots[i].tag;
	c->result = result;
	slot_free(q, i);
	q->inflight--;
}

int xpmem_lib_queue_reap(struct xpmem_ext_queue *q,
			 struct xpmem_ext_completion *c, unsigned int max,
			 int wait)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0, i;
	int ret;

	if (q->pid != getpid())
		return -EINVAL;
	for (; n < max && q->ndone; n++) {
		i = q->done[--q->ndone];
		queue_complete(q, i, q->slots[i].result, &c[n]);
	}
	while (q->have_ring && n < max && q->inflight) {
		if (n || !wait)
			ret = io_uring_peek_cqe(&q->ring, &cqe);
		else
			ret = io_uring_wait_cqe(&q->ring, &cqe);
		if (ret == -EAGAIN)
			break;
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return n ? (int)n : ret;
		i = (unsigned int)cqe->user_data;
		if (i < q->depth)
			queue_complete(q, i, cqe->res, &c[n++]);
		io_uring_cqe_seen(&q->ring, cqe);
	}
	return (int)n;
}

void xpmem_lib_queue_destroy(struct xpmem_ext_queue *q)
{
	struct xpmem_ext_completion c[16];

	if (!q)
		return;
	if (q->have_ring) {
		/* the kernel may still write into the caller's buffers */
		if (q->pid == getpid()) {
			xpmem_lib_queue_submit(q);
			while (q->inflight &&
			       xpmem_lib_queue_reap(q, c, 16, 1) > 0)
				;
		}
		io_uring_queue_exit(&q->ring);
	}
	free(q->slots);
	free(q->done);
	free(q->early);
	free(q);
}
