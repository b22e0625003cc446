// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_id.c - tables of unguessable ids
 *
 * An id table maps ids to objects that embed a struct xpmem_id.  Ids are
 * 1 .. 2^46 - 1: positive as an xpmem_segid_t or xpmem_apid_t, at most 12
 * hex digits as classic clients print them, never 0 or -1.  Each is a
 * counter run through a keyed permutation of the 46-bit space (a 4-round
 * Feistel network with SipHash rounds under a random key chosen at load
 * time): no id repeats until 2^46 have been issued, and without the key
 * the next id cannot be told from a random one, so a process cannot find
 * another user's object by counting.  Segment and permit ids come from one
 * counter and never collide either.  The table knows
 * nothing of the objects but their reference count: a lookup returns the
 * object's xpmem_id with a new reference taken, or NULL.  The object's
 * owner publishes it (the table's reference is the publisher's to keep)
 * and unpublishes it before dropping that reference.
 */
#include <linux/hashtable.h>
#include <linux/once.h>
#include <linux/random.h>
#include <linux/siphash.h>
#include <linux/spinlock.h>

#include "xpmem_internal.h"

/* Give up after this many used or zero ids in a row (only after a wrap). */
#define XPMEM_ID_TRIES		16
#define XPMEM_ID_HALF_BITS	(XPMEM_ID_BITS / 2)
#define XPMEM_ID_ROUNDS		4

static siphash_key_t xpmem_id_key;
static atomic64_t xpmem_id_counter = ATOMIC64_INIT(0);

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

/* A keyed bijection of [0, 2^XPMEM_ID_BITS). */
static u64 xpmem_id_permute(u64 x)
{
	const u64 mask = BIT_ULL(XPMEM_ID_HALF_BITS) - 1;
	u64 left = (x >> XPMEM_ID_HALF_BITS) & mask;
	u64 right = x & mask;
	u64 next;
	int round;

	for (round = 0; round < XPMEM_ID_ROUNDS; round++) {
		next = left ^ (siphash_2u64(right, round, &xpmem_id_key) & mask);
		left = right;
		right = next;
	}
	return (left << XPMEM_ID_HALF_BITS) | right;
}

/* The next id: never 0, unique until the counter wraps at 2^46. */
static u64 xpmem_id_next(void)
{
	get_random_once(&xpmem_id_key, sizeof(xpmem_id_key));
	return xpmem_id_permute(atomic64_inc_return(&xpmem_id_counter) &
				XPMEM_ID_MAX);
}

/**
 * xpmem_id_publish - give an object a fresh id and make it findable
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
		val = xpmem_id_next();
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
