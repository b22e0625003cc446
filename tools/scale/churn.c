// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * churn.c - xpmem-scale's churn mode: two processes attach each other's
 * buffer read-write; in each, one thread writes the peer's buffer page by
 * page while another discards pieces of its own (and, "mutual", maps and
 * unmaps memory elsewhere).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <xpmem.h>

#include "scale.h"

#define CHURN_BUF	(8UL << 20)
#define CHURN_PIECE	(64UL << 10)

struct churn_shared {
	pthread_barrier_t bar;
	atomic_int stop;
	atomic_int failed;
	xpmem_segid_t segid[2];
	uintptr_t buf[2];
	unsigned long passes[2];	/* write passes over the peer */
	unsigned long discards[2];	/* MADV_DONTNEED of own pieces */
	unsigned long cycles[2];	/* mmap+munmap elsewhere */
};

struct churn_side {
	struct churn_shared *sh;
	int me;
	int mutual;
	char *own, *peer;
};

static void *churn_writer(void *arg)
{
	struct churn_side *s = arg;
	unsigned long v = 0;

	while (!atomic_load(&s->sh->stop)) {
		size_t i;

		for (i = 0; i < CHURN_BUF && !atomic_load(&s->sh->stop);
		     i += PAGE)
			s->peer[i] = (char)++v;
		s->sh->passes[s->me]++;
	}
	return NULL;
}

/* Discard pieces of the own buffer in turn; maps and unmaps elsewhere. */
static void *churn_owner(void *arg)
{
	struct churn_side *s = arg;
	size_t off = 0;

	while (!atomic_load(&s->sh->stop)) {
		madvise(s->own + off, CHURN_PIECE, MADV_DONTNEED);
		s->sh->discards[s->me]++;
		off = (off + CHURN_PIECE) % CHURN_BUF;
		if (s->mutual) {
			void *p = mmap(NULL, CHURN_PIECE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED) {
				((char *)p)[0] = 1;
				munmap(p, CHURN_PIECE);
				s->sh->cycles[s->me]++;
			}
		}
		usleep(100);
	}
	return NULL;
}

static int churn_side_main(struct churn_shared *sh, int me, int mutual)
{
	struct churn_side s = { .sh = sh, .me = me, .mutual = mutual };
	struct xpmem_addr a;
	pthread_t w, ow;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	s.own = map_anon(CHURN_BUF);
	if (!s.own)
		goto fail;
	sh->buf[me] = (uintptr_t)s.own;
	sh->segid[me] = xpmem_make(NULL, XPMEM_MAXADDR_SIZE, XPMEM_PERMIT_MODE,
				   (void *)0600);
	if (sh->segid[me] == -1)
		goto fail;
	pthread_barrier_wait(&sh->bar);
	a.apid = xpmem_get(sh->segid[!me], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (a.apid == -1)
		goto fail;
	a.offset = sh->buf[!me];
	s.peer = xpmem_attach(a, CHURN_BUF, NULL);
	if (s.peer == (void *)-1)
		goto fail;
	pthread_barrier_wait(&sh->bar);
	if (pthread_create(&w, NULL, churn_writer, &s) ||
	    pthread_create(&ow, NULL, churn_owner, &s))
		goto fail;
	pthread_join(w, NULL);
	pthread_join(ow, NULL);
	pthread_barrier_wait(&sh->bar);	/* the peer is done writing */
	xpmem_detach(s.peer);
	return 0;
fail:
	fprintf(stderr, "xpmem-scale: churn side %d: %s\n", me, strerror(errno));
	atomic_store(&sh->failed, 1);
	atomic_store(&sh->stop, 1);
	return 1;
}

/* The module's counters churn mode reports, before and after. */
static const char *const churn_counters[4] = {
	"faults", "fault_retries", "fault_seq_retries", "fault_owner_waits",
};

/*
 * The two sides, for o->churn_secs seconds; @d: the counters' change (-1
 * where unknown).  0, or 1 if a side failed.
 */
static int churn_sides(struct churn_shared *sh, const struct opts *o,
		       int mutual, long *d)
{
	long before[4], after[4];
	pid_t pid[2];
	int i, bad = 0;

	for (i = 0; i < 4; i++)
		before[i] = stat_read(churn_counters[i]);
	fflush(NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(churn_side_main(sh, i, mutual));
		if (pid[i] < 0)
			bad = 1;
	}
	if (!bad)
		sleep(o->churn_secs);
	atomic_store(&sh->stop, 1);
	bad |= reap(pid, 2, 60);
	for (i = 0; i < 4; i++) {
		after[i] = stat_read(churn_counters[i]);
		d[i] = before[i] < 0 || after[i] < 0 ? -1 : after[i] - before[i];
	}
	return bad;
}

/* What both sides did and the counters' change @d, as text and CSV. */
static void churn_print(const struct churn_shared *sh, const struct opts *o,
			int mutual, const long *d, FILE *csv)
{
	const char *name = mutual ? "churn-mutual" : "churn-plain";
	int i;

	printf("== %s, %d s: two processes write each other's %lu MiB page by page, discarding 64 KiB of their own every 100 us%s ==\n",
	       name, o->churn_secs, CHURN_BUF / MIB,
	       mutual ? ", mmap+munmap elsewhere" : "");
	printf("passes (A, B)           %lu, %lu\n", sh->passes[0], sh->passes[1]);
	printf("discards (A, B)         %lu, %lu\n", sh->discards[0],
	       sh->discards[1]);
	if (mutual)
		printf("mmap cycles (A, B)      %lu, %lu\n", sh->cycles[0],
		       sh->cycles[1]);
	for (i = 0; i < 4; i++)
		printf("%-23s %ld\n", churn_counters[i], d[i]);
	/*
	 * A contended owner mmap_lock is waited for (fault_owner_waits) or
	 * makes the access repeat; a seq retry always restarts the fault.
	 */
	if (d[0] > 0)
		printf("per 100 faults          %.1f restarts (%.1f seq, %.1f lock), %.1f owner lock waits\n",
		       100.0 * (d[2] + d[1] - d[3]) / d[0],
		       100.0 * d[2] / d[0], 100.0 * (d[1] - d[3]) / d[0],
		       100.0 * d[3] / d[0]);
	if (!csv)
		return;
	for (i = 0; i < 2; i++)
		fprintf(csv, "%s,%d,passes_%c,%lu,%lu,%lu,count\n", name,
			o->churn_secs, 'a' + i, sh->passes[i], sh->passes[i],
			sh->passes[i]);
	for (i = 0; i < 4; i++)
		fprintf(csv, "%s,%d,%s,%ld,%ld,%ld,count\n", name,
			o->churn_secs, churn_counters[i], d[i], d[i], d[i]);
}

/* One churn run, mutual or plain: 0, or 1 after a message. */
int churn_run(const struct opts *o, int mutual, FILE *csv)
{
	pthread_barrierattr_t ba;
	struct churn_shared *sh;
	long d[4];
	int bad;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, 2);
	bad = churn_sides(sh, o, mutual, d);
	if (bad || atomic_load(&sh->failed)) {
		fprintf(stderr, "xpmem-scale: %s failed\n",
			mutual ? "churn-mutual" : "churn-plain");
		munmap(sh, sizeof(*sh));
		return 1;
	}
	churn_print(sh, o, mutual, d, csv);
	munmap(sh, sizeof(*sh));
	return 0;
}
