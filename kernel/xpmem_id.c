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
 * counter and never collide either.
 *
 * A table is an rhashtable: it grows with its objects (and shrinks after
 * them), so a lookup stays O(1) at millions of objects, and a lookup takes
 * no lock: it runs under RCU and returns the object's xpmem_id with a new
 * reference taken by kref_get_unless_zero(), or NULL.  Objects in a table
 * must therefore be freed after an RCU grace period (kfree_rcu()).  The
 * table holds no reference of its own: the publisher holds one across
 * the publication, and its object stays published only while a reference
 * of its owner's keeps it (xpmem_internal.h, "References"); the owner
 * unpublishes it before dropping that one.
 */
#include <linux/once.h>
#include <linux/random.h>
#include <linux/rhashtable.h>
#include <linux/siphash.h>

#include "xpmem_internal.h"

/* Give up after this many used or zero ids in a row (only after a wrap). */
#define XPMEM_ID_TRIES		16
#define XPMEM_ID_HALF_BITS	(XPMEM_ID_BITS / 2)
#define XPMEM_ID_ROUNDS		4

static siphash_key_t xpmem_id_key;
static atomic64_t xpmem_id_counter = ATOMIC64_INIT(0);

/* The ids are random already: the default jhash2 of 8 bytes is plenty. */
static const struct rhashtable_params xpmem_id_params = {
	.head_offset = offsetof(struct xpmem_id, node),
	.key_offset = offsetof(struct xpmem_id, id),
	.key_len = sizeof_field(struct xpmem_id, id),
	.automatic_shrinking = true,
};

/**
 * xpmem_id_table_init - an empty table
 * @table: the table
 *
 * Return: 0 or -ENOMEM.
 */
int xpmem_id_table_init(struct xpmem_id_table *table)
{
	return rhashtable_init(&table->ht, &xpmem_id_params);
}

/**
 * xpmem_id_table_destroy - free an empty table
 * @table: the table (nothing is published: the module is unloading)
 */
void xpmem_id_table_destroy(struct xpmem_id_table *table)
{
	WARN_ON_ONCE(atomic_read(&table->ht.nelems));
	rhashtable_destroy(&table->ht);
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
		next = left ^ (siphash_2u64(right, round,
			       &xpmem_id_key) & mask);
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
 * The caller holds a reference of its own on the object, and reads the
 * new id (@id->id) only under it: from the moment the object is
 * published, another thread that learns or guesses the id can end it.
 *
 * Return: 0, -ENOMEM, or -EAGAIN if no free id was found.
 */
int xpmem_id_publish(struct xpmem_id_table *table, struct xpmem_id *id,
		     struct kref *ref)
{
	int tries, ret;
	u64 val;

	id->ref = ref;
	for (tries = 0; tries < XPMEM_ID_TRIES; tries++) {
		val = xpmem_id_next();
		if (!val)
			continue;
		id->id = val;
		ret = rhashtable_lookup_insert_fast(&table->ht, &id->node,
						    xpmem_id_params);
		if (!ret)
			return 0;
		if (ret == -ENOMEM)
			return ret;
		/* -EEXIST: the id is in use; -EBUSY: its chain is full */
		if (ret != -EEXIST && ret != -EBUSY)
			break;
	}
	return -EAGAIN;
}

/**
 * xpmem_id_unpublish - make an object unfindable; idempotent
 * @table: the table it was published in (or not: then nothing happens)
 * @id: the object's embedded id
 *
 * Lookups that found the object already may still take a reference, as
 * long as it has any.
 */
void xpmem_id_unpublish(struct xpmem_id_table *table, struct xpmem_id *id)
{
	/* -ENOENT: never published, or unpublished already */
	rhashtable_remove_fast(&table->ht, &id->node, xpmem_id_params);
}

/**
 * xpmem_id_lookup - find a published object
 * @table: the table
 * @id: its id
 *
 * Context: any; takes no lock but rcu_read_lock().
 * Return: the object's embedded id with a new reference on the object, or
 * NULL.
 */
struct xpmem_id *xpmem_id_lookup(struct xpmem_id_table *table, u64 id)
{
	struct xpmem_id *found;

	rcu_read_lock();
	found = rhashtable_lookup(&table->ht, &id, xpmem_id_params);
	if (found && !kref_get_unless_zero(found->ref))
		found = NULL;
	rcu_read_unlock();
	return found;
}
