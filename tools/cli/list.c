// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * list.c - `xpmem list`: the objects of both backends (proc_read.c,
 * registry.c), sorted, as tables or JSON.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_kseg(const void *a, const void *b)
{
	const struct kseg *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->segid, y->segid);
}

static int cmp_kpermit(const void *a, const void *b)
{
	const struct kpermit *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->apid, y->apid);
}

static int cmp_katt(const void *a, const void *b)
{
	const struct katt *x = a, *y = b;

	return cmp_u64(x->tgid, y->tgid) ?: cmp_u64(x->apid, y->apid) ?:
	       cmp_u64(x->offset, y->offset);
}

static int cmp_sseg(const void *a, const void *b)
{
	const struct sseg *x = a, *y = b;

	return cmp_u64(x->pid, y->pid) ?: cmp_u64(x->segid, y->segid);
}

static const char *access_name(uint64_t access)
{
	return access == ACCESS_RDWR ? "rdwr" : "rdonly";
}

static void list_text_kernel(const struct listing *l)
{
	size_t i;

	if (!l->kernel) {
		printf("kernel backend: module not loaded (no " PROC_OBJECTS
		       " or " PROC_XPMEM ")\n");
		return;
	}
	printf("kernel segments (%zu):\n", l->segs.n);
	if (l->segs.n)
		printf("  %-8s %-16s %-18s %20s %-6s %s\n", "TGID", "SEGID",
		       "VADDR", "SIZE", "MODE", "ATTACHMENTS");
	for (i = 0; i < l->segs.n; i++) {
		const struct kseg *s = vec_at(&l->segs, i);

		printf("  %-8llu 0x%-14llx 0x%-16llx %20llu 0%03llo  %llu\n",
		       (unsigned long long)s->tgid, (unsigned long long)s->segid,
		       (unsigned long long)s->vaddr, (unsigned long long)s->size,
		       (unsigned long long)s->mode, (unsigned long long)s->atts);
	}
	printf("kernel permits (%zu):\n", l->permits.n);
	if (l->permits.n)
		printf("  %-8s %-16s %-16s %-8s %-6s %s\n", "TGID", "APID",
		       "SEGID", "OWNER", "ACCESS", "ATTACHMENTS");
	for (i = 0; i < l->permits.n; i++) {
		const struct kpermit *p = vec_at(&l->permits, i);

		printf("  %-8llu 0x%-14llx 0x%-14llx ",
		       (unsigned long long)p->tgid, (unsigned long long)p->apid,
		       (unsigned long long)p->segid);
		if (p->owner)
			printf("%-8llu ", (unsigned long long)p->owner);
		else
			printf("%-8s ", "removed");
		printf("%-6s %llu\n", access_name(p->access),
		       (unsigned long long)p->atts);
	}
	printf("kernel attachments (%zu):\n", l->atts.n);
	if (l->atts.n)
		printf("  %-8s %-16s %-16s %20s %20s %s\n", "TGID", "SEGID",
		       "APID", "OFFSET", "SIZE", "ACCESS");
	for (i = 0; i < l->atts.n; i++) {
		const struct katt *a = vec_at(&l->atts, i);

		printf("  %-8llu 0x%-14llx 0x%-14llx %20llu %20llu %s\n",
		       (unsigned long long)a->tgid, (unsigned long long)a->segid,
		       (unsigned long long)a->apid, (unsigned long long)a->offset,
		       (unsigned long long)a->size, access_name(a->access));
	}
	printf("hidden: %lu process(es) of other users (their %s files are "
	       "not readable)\n", l->hidden, l->kernel);
}

static void list_text_shm(const struct listing *l)
{
	size_t i;

	printf("shm segments (%zu):\n", l->shm.n);
	if (l->shm.n)
		printf("  %-8s %-16s %14s %-6s %-8s %s\n", "PID", "SEGID",
		       "SIZE", "MODE", "UID", "ATTACHMENTS");
	for (i = 0; i < l->shm.n; i++) {
		const struct sseg *s = vec_at(&l->shm, i);

		printf("  %-8llu 0x%-14llx %14llu 0%03llo  %-8llu -\n",
		       (unsigned long long)s->pid, (unsigned long long)s->segid,
		       (unsigned long long)s->size, (unsigned long long)s->mode,
		       (unsigned long long)s->uid);
	}
}

static void list_json_kernel(struct json *j, const struct listing *l)
{
	size_t i;

	j_open(j, "kernel", '{');
	j_open(j, "segments", '[');
	for (i = 0; i < l->segs.n; i++) {
		const struct kseg *s = vec_at(&l->segs, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", s->tgid);
		j_hex(j, "segid", s->segid);
		j_hex(j, "vaddr", s->vaddr);
		j_unum(j, "size", s->size);
		j_mode(j, "mode", s->mode);
		j_unum(j, "attachments", s->atts);
		j_close(j, '}');
	}
	j_close(j, ']');
	j_open(j, "permits", '[');
	for (i = 0; i < l->permits.n; i++) {
		const struct kpermit *p = vec_at(&l->permits, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", p->tgid);
		j_hex(j, "apid", p->apid);
		j_hex(j, "segid", p->segid);
		j_unum(j, "owner", p->owner);
		j_str(j, "access", access_name(p->access));
		j_unum(j, "attachments", p->atts);
		j_close(j, '}');
	}
	j_close(j, ']');
	j_open(j, "attachments", '[');
	for (i = 0; i < l->atts.n; i++) {
		const struct katt *a = vec_at(&l->atts, i);

		j_open(j, NULL, '{');
		j_unum(j, "tgid", a->tgid);
		j_hex(j, "segid", a->segid);
		j_hex(j, "apid", a->apid);
		j_unum(j, "offset", a->offset);
		j_unum(j, "size", a->size);
		j_str(j, "access", access_name(a->access));
		j_close(j, '}');
	}
	j_close(j, ']');
	j_unum(j, "hidden", l->hidden);
	j_close(j, '}');
}

static void list_json_shm(struct json *j, const struct listing *l)
{
	size_t i;

	j_open(j, "shm", '{');
	j_open(j, "segments", '[');
	for (i = 0; i < l->shm.n; i++) {
		const struct sseg *s = vec_at(&l->shm, i);

		j_open(j, NULL, '{');
		j_unum(j, "pid", s->pid);
		j_hex(j, "segid", s->segid);
		j_unum(j, "size", s->size);
		j_mode(j, "mode", s->mode);
		j_unum(j, "uid", s->uid);
		j_null(j, "attachments");
		j_close(j, '}');
	}
	j_close(j, ']');
	j_close(j, '}');
}

int cmd_list(bool json)
{
	struct listing l = {
		.segs = { .size = sizeof(struct kseg) },
		.permits = { .size = sizeof(struct kpermit) },
		.atts = { .size = sizeof(struct katt) },
		.shm = { .size = sizeof(struct sseg) },
		.regs = { .size = sizeof(struct reg_id) },
	};
	struct json j = { .f = stdout };
	int rc;

	rc = list_kernel(&l);
	rc |= list_shm(&l);
	vec_sort(&l.segs, cmp_kseg);
	vec_sort(&l.permits, cmp_kpermit);
	vec_sort(&l.atts, cmp_katt);
	vec_sort(&l.shm, cmp_sseg);
	if (json) {
		j_open(&j, NULL, '{');
		list_json_kernel(&j, &l);
		list_json_shm(&j, &l);
		j_close(&j, '}');
	} else {
		list_text_kernel(&l);
		list_text_shm(&l);
	}
	free(l.segs.v);
	free(l.permits.v);
	free(l.atts.v);
	free(l.shm.v);
	free(l.regs.v);
	return rc;
}
