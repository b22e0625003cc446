// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_perm.c - the one SysV-IPC permission check of the shm backend, as
 * ipcperms() does it: owner bits when the caller's euid is the owner's
 * euid at make time, else group bits when the owner's egid is the
 * caller's egid or a supplementary group, else other bits; CAP_IPC_OWNER
 * bypasses the bits, never a read-only export.  The owner runs it on a
 * peer's connection credentials (no capability: such peers are not root),
 * a peer that reads /proc on its own.
 */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <unistd.h>

#include "shm.h"

/**
 * xpmem_lib_shm_mode_access - what the permit mode of slot @s grants @who.
 * @s:   the segment's registry slot (mode, owner uid and gid, flags)
 * @who: the credentials asking
 *
 * Return: SHM_ACCESS_RDWR (rw bits, not a read-only export),
 * SHM_ACCESS_READ (r bit) or SHM_ACCESS_NONE.
 */
enum shm_access xpmem_lib_shm_mode_access(const struct shm_reg_slot *s,
					  const struct shm_cred *who)
{
	unsigned int bits;
	int i, in = who->gid == s->gid;

	for (i = 0; !in && i < who->ngroups; i++)
		in = who->groups[i] == s->gid;
	if (who->ipc_owner)
		bits = 7;
	else if (who->uid == s->uid)
		bits = s->mode >> 6;
	else
		bits = in ? s->mode >> 3 : s->mode;
	if ((bits & 6) == 6 && !(s->flags & SHM_SLOT_RDONLY))
		return SHM_ACCESS_RDWR;
	return bits & 4 ? SHM_ACCESS_READ : SHM_ACCESS_NONE;
}

/**
 * xpmem_lib_shm_self_cred - this process's credentials for the check.
 * @who: filled in; its groups point into @buf
 * @buf: room for @n supplementary groups (more than that: none counted)
 * @n:   entries of @buf
 */
void xpmem_lib_shm_self_cred(struct shm_cred *who, gid_t *buf, int n)
{
	who->uid = geteuid();
	who->gid = getegid();
	who->ngroups = getgroups(n, buf);
	if (who->ngroups < 0)
		who->ngroups = 0;
	who->groups = buf;
	who->ipc_owner = xpmem_lib_has_cap(CAP_IPC_OWNER);
}
