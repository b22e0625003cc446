// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_id.c - tables of unguessable ids
 *
 * An id table maps random 63-bit ids (positive as an xpmem_segid_t or
 * xpmem_apid_t, never 0) to objects that embed a struct xpmem_id, so a
 * process cannot find another user's object by counting.  The table knows
 * nothing of the objects but their reference count: a lookup returns the
 * object's xpmem_id with a new reference taken, or NULL.  The object's
 * owner publishes it (the table's reference is the publisher's to keep)
 * and unpublishes it before dropping that reference.
 */
#include <linux/hashtable.h>
#include <linux/random.h>
#include <linux/spinlock.h>

#include "xpmem_internal.h"

/* Give up after this many collisions in a row (practically impossible). */
#define XPMEM_ID_TRIES		16

/* every table; leaf lock */
static DEFINE_SPINLOCK(xpmem_id_lock);

static struct hlist_head *xpmem_id_bucket(struct xpmem_id_table *table,
					  u64 id)
{
	return &table->buckets[hash_min(id, XPMEM_ID_HASH_BITS)];
}

static struct xpmem_id *xpmem_id_find(struct xpmem_id_table *table, u64 id)
{
	struct xpmem_id *cur;

	hlist_for_each_entry(cur, xpmem_id_bucket(table, id), node)
		if (cur->id == id)
			return cur;
	return NULL;
}

/**
 * xpmem_id_publish - give an object a fresh random id and make it findable
 * @table: the table
 * @id: the object's embedded id
 * @ref: the object's reference count, taken by lookups
 *
 * Return: 0, or -EAGAIN if no free id was found.
 */
int xpmem_id_publish(struct xpmem_id_table *table, struct xpmem_id *id,
		     struct kref *ref)
{
	int tries;
	u64 val;

	for (tries = 0; tries < XPMEM_ID_TRIES; tries++) {
		val = get_random_u64() >> 1;
		if (!val)
			continue;
		spin_lock(&xpmem_id_lock);
		if (!xpmem_id_find(table, val)) {
			id->id = val;
			id->ref = ref;
			hlist_add_head(&id->node, xpmem_id_bucket(table, val));
			spin_unlock(&xpmem_id_lock);
			return 0;
		}
		spin_unlock(&xpmem_id_lock);
	}
	return -EAGAIN;
}

/**
 * xpmem_id_unpublish - make an object unfindable; idempotent
 * @id: the object's embedded id (initialised with INIT_HLIST_NODE)
 */
void xpmem_id_unpublish(struct xpmem_id *id)
{
	spin_lock(&xpmem_id_lock);
	if (!hlist_unhashed(&id->node))
		hlist_del_init(&id->node);
	spin_unlock(&xpmem_id_lock);
}

/**
 * xpmem_id_lookup - find a published object
 * @table: the table
 * @id: its id
 *
 * Return: the object's embedded id with a new reference on the object, or
 * NULL.
 */
struct xpmem_id *xpmem_id_lookup(struct xpmem_id_table *table, u64 id)
{
	struct xpmem_id *found;

	spin_lock(&xpmem_id_lock);
	found = xpmem_id_find(table, id);
	if (found && !kref_get_unless_zero(found->ref))
		found = NULL;
	spin_unlock(&xpmem_id_lock);
	return found;
}
