// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_revoke.c - the revocation barrier between copies and REMOVE/RELEASE
 */
#include <linux/rwsem.h>

#include "xpmem_internal.h"

/*
 * Copies (xpmem_copy.c) move bytes between pinned owner pages and the
 * caller's buffers one batch at a time, each batch inside a read section
 * that checks the segment and permit first and never faults.  REMOVE and
 * RELEASE mark their object, then xpmem_revoke_sync() waits for the
 * batches in progress: once it returns, no copy moves another byte.  A
 * read section is a bounded memcpy, so the wait is bounded and nothing an
 * attacher does can prolong it.
 */
static DECLARE_RWSEM(xpmem_revoke_rwsem);

/** xpmem_revoke_read_lock - begin a batch that reads revocable state */
void xpmem_revoke_read_lock(void)
{
	down_read(&xpmem_revoke_rwsem);
}

/** xpmem_revoke_read_unlock - end it */
void xpmem_revoke_read_unlock(void)
{
	up_read(&xpmem_revoke_rwsem);
}

/**
 * xpmem_revoke_sync - wait for the copy batches in progress
 *
 * Called after a segment or permit is marked removed or released.
 */
void xpmem_revoke_sync(void)
{
	down_write(&xpmem_revoke_rwsem);
	up_write(&xpmem_revoke_rwsem);
}
