// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_id.c - unguessable segment and access-permit ids
 *
 * Ids are 63-bit random numbers (positive as an xpmem_segid_t/apid_t and
 * never 0), so a process cannot find another user's segment by counting.
 * Segments and permits live in separate tables; a lookup returns a new
 * reference or NULL.
 */
#include <linux/hashtable.h>
#include <linux/random.h>
#include <linux/spinlock.h>

#include "xpmem_internal.h"

/* 2^10 buckets: plenty for the thousands of segments an MPI job creates. */
#define XPMEM_ID_HASH_BITS	10
/* Give up after this many collisions in a row (practically impossible). */
#define XPMEM_ID_TRIES		16

static DEFINE_SPINLOCK(xpmem_id_lock);
static DEFINE_HASHTABLE(xpmem_seg_ids, XPMEM_ID_HASH_BITS);
static DEFINE_HASHTABLE(xpmem_permit_ids, XPMEM_ID_HASH_BITS);

static struct xpmem_id *xpmem_id_find(struct hlist_head *table, u64 id)
{
	struct xpmem_id *cur;

	hlist_for_each_entry(cur, &table[hash_min(id, XPMEM_ID_HASH_BITS)],
			     node)
		if (cur->id == id)
			return cur;
	return NULL;
}

/**
 * xpmem_id_publish - give an object a fresh random id and make it findable
 * @id: the id member of a segment or permit
 * @is_seg: which table
 *
 * Return: 0, or -EAGAIN if no free id was found.
 */
int xpmem_id_publish(struct xpmem_id *id, bool is_seg)
{
	struct hlist_head *table = is_seg ? xpmem_seg_ids : xpmem_permit_ids;
	int tries;
	u64 val;

	for (tries = 0; tries < XPMEM_ID_TRIES; tries++) {
		val = get_random_u64() >> 1;
		if (!val)
			continue;
		spin_lock(&xpmem_id_lock);
		if (!xpmem_id_find(table, val)) {
			id->id = val;
			hlist_add_head(&id->node,
				       &table[hash_min(val, XPMEM_ID_HASH_BITS)]);
			spin_unlock(&xpmem_id_lock);
			return 0;
		}
		spin_unlock(&xpmem_id_lock);
	}
	return -EAGAIN;
}

/**
 * xpmem_id_unpublish - make an object unfindable; idempotent
 * @id: the id member of a segment or permit
 */
void xpmem_id_unpublish(struct xpmem_id *id)
{
	spin_lock(&xpmem_id_lock);
	if (!hlist_unhashed(&id->node))
		hlist_del_init(&id->node);
	spin_unlock(&xpmem_id_lock);
}

/**
 * xpmem_seg_lookup - find a published segment
 * @segid: its id
 *
 * Return: the segment with a new reference, or NULL.
 */
struct xpmem_seg *xpmem_seg_lookup(u64 segid)
{
	struct xpmem_seg *seg = NULL;
	struct xpmem_id *id;

	spin_lock(&xpmem_id_lock);
	id = xpmem_id_find(xpmem_seg_ids, segid);
	if (id) {
		seg = container_of(id, struct xpmem_seg, id);
		xpmem_seg_get(seg);
	}
	spin_unlock(&xpmem_id_lock);
	return seg;
}

/**
 * xpmem_permit_lookup - find a published access permit
 * @apid: its id
 *
 * Return: the permit with a new reference, or NULL.
 */
struct xpmem_permit *xpmem_permit_lookup(u64 apid)
{
	struct xpmem_permit *permit = NULL;
	struct xpmem_id *id;

	spin_lock(&xpmem_id_lock);
	id = xpmem_id_find(xpmem_permit_ids, apid);
	if (id) {
		permit = container_of(id, struct xpmem_permit, id);
		xpmem_permit_get(permit);
	}
	spin_unlock(&xpmem_id_lock);
	return permit;
}
