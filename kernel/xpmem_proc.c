// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_proc.c - the classic read-only /proc/xpmem files
 *
 * Test scripts and site health checks written for the classic modules grep
 * "pages pinned" and "pages unpinned" in /proc/xpmem/ to find leaked pins.
 * These files give them honest answers from our own accounting:
 *   /proc/xpmem/global_pages   all pages pinned by XPMEM: N
 *                              all pages unpinned by XPMEM: N
 *   /proc/xpmem/<tgid>         pages pinned by XPMEM: N
 *                              pages unpinned by XPMEM: N
 * one <tgid> file per thread group that has /dev/xpmem open, readable by
 * its owner only (and root), removed when its last device file closes.
 * This module never pins pages (attachments mirror the owner's page
 * tables), so every count is 0; a leak check that compares the two
 * totals passes exactly when nothing is pinned.  The sysfs counters in
 * /sys/class/misc/xpmem/stats/ are the real interface.
 */
#include <linux/cred.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "xpmem_internal.h"

/* One per thread group with an open /dev/xpmem. */
struct xpmem_proc_tg {
	struct list_head node;
	pid_t tgid;			/* in the initial PID namespace */
	unsigned int opens;
	struct proc_dir_entry *pde;
};

static struct proc_dir_entry *xpmem_proc_dir;
static DEFINE_MUTEX(xpmem_proc_lock);	/* protects xpmem_proc_tgs */
static LIST_HEAD(xpmem_proc_tgs);

/* Pages pinned and unpinned, ever: nothing pins, so both stay 0. */
static atomic_long_t xpmem_pages_pinned;
static atomic_long_t xpmem_pages_unpinned;

static int xpmem_proc_global_show(struct seq_file *m, void *v)
{
	seq_printf(m, "all pages pinned by XPMEM: %ld\n"
		   "all pages unpinned by XPMEM: %ld\n",
		   atomic_long_read(&xpmem_pages_pinned),
		   atomic_long_read(&xpmem_pages_unpinned));
	return 0;
}

static int xpmem_proc_tg_show(struct seq_file *m, void *v)
{
	seq_puts(m, "pages pinned by XPMEM: 0\npages unpinned by XPMEM: 0\n");
	return 0;
}

static struct xpmem_proc_tg *xpmem_proc_find(pid_t tgid)
{
	struct xpmem_proc_tg *tg;

	list_for_each_entry(tg, &xpmem_proc_tgs, node)
		if (tg->tgid == tgid)
			return tg;
	return NULL;
}

/**
 * xpmem_proc_open - the current thread group opened /dev/xpmem
 *
 * Creates /proc/xpmem/<tgid> on its first open.  Failing to create it is
 * not an error of the open (the file is informational).
 */
void xpmem_proc_open(void)
{
	pid_t tgid = task_tgid_nr(current);
	struct xpmem_proc_tg *tg;
	char name[16];

	if (!xpmem_proc_dir)
		return;
	mutex_lock(&xpmem_proc_lock);
	tg = xpmem_proc_find(tgid);
	if (tg) {
		tg->opens++;
		goto unlock;
	}
	tg = kzalloc(sizeof(*tg), GFP_KERNEL_ACCOUNT);
	if (!tg)
		goto unlock;
	snprintf(name, sizeof(name), "%d", tgid);
	tg->pde = proc_create_single(name, 0400, xpmem_proc_dir,
				     xpmem_proc_tg_show);
	if (!tg->pde) {
		kfree(tg);
		goto unlock;
	}
	proc_set_user(tg->pde, current_euid(), current_egid());
	tg->tgid = tgid;
	tg->opens = 1;
	list_add(&tg->node, &xpmem_proc_tgs);
unlock:
	mutex_unlock(&xpmem_proc_lock);
}

/**
 * xpmem_proc_close - a device file of thread group @tgid was released
 * @tgid: the opener's tgid (the releaser may be another task)
 */
void xpmem_proc_close(pid_t tgid)
{
	struct xpmem_proc_tg *tg;

	mutex_lock(&xpmem_proc_lock);
	tg = xpmem_proc_find(tgid);
	if (tg && !--tg->opens) {
		list_del(&tg->node);
		proc_remove(tg->pde);
		kfree(tg);
	}
	mutex_unlock(&xpmem_proc_lock);
}

int xpmem_proc_init(void)
{
	xpmem_proc_dir = proc_mkdir("xpmem", NULL);
	if (!xpmem_proc_dir)
		return -ENOMEM;
	if (!proc_create_single("global_pages", 0444, xpmem_proc_dir,
				xpmem_proc_global_show)) {
		proc_remove(xpmem_proc_dir);
		xpmem_proc_dir = NULL;
		return -ENOMEM;
	}
	return 0;
}

void xpmem_proc_exit(void)
{
	/* every device file is closed: no <tgid> entries are left */
	proc_remove(xpmem_proc_dir);
}
