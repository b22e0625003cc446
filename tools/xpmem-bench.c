// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-bench - first-touch and copy costs of an attachment, side by side
 * with the alternatives, in one run (under emulation only ratios mean
 * anything).
 *
 * The owner (parent) populates SIZE bytes; the attacher (child) measures:
 *   attach-read    first touch, one read per page, of a fresh attachment
 *   attach-write   first touch, one write per page, of a fresh attachment
 *   memfd-read     first touch, one read per page, of a fresh MAP_SHARED
 *                  mapping of an owner-populated memfd (the shm baseline)
 *   memfd-write    the same, writing
 *   attach-copy    memcpy of the whole attachment once it is mapped
 *   memfd-copy     memcpy of the whole memfd mapping once it is mapped
 *   pvm-copy       process_vm_readv of the owner's range (one syscall copy)
 * and prints each as ns/page and as a ratio to its memfd counterpart.
 * The attacher is forked before the owner touches its memory, so nothing
 * is shared copy-on-write between them (as between unrelated processes).
 *
 * Usage: xpmem-bench [-s MiB] [-r repeats] [-m anon|alloc]
 *   -m anon   owner memory is private anonymous (kernel backend only)
 *   -m alloc  owner memory from xpmem_ext_alloc() (any backend)
 * The backend is libxpmem's choice (XPMEM_BACKEND).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xpmem.h>

#define PAGE 4096UL

enum phase { ATT_READ, MEMFD_READ, ATT_WRITE, MEMFD_WRITE, ATT_COPY,
	     MEMFD_COPY, PVM_COPY, NPHASES };

struct result {
	double ns[NPHASES];	/* per page */
};

static const char *const phase_name[NPHASES] = {
	"attach-read", "memfd-read", "attach-write", "memfd-write",
	"attach-copy", "memfd-copy", "pvm-copy",
};

/* what each phase is compared with */
static const enum phase phase_base[NPHASES] = {
	MEMFD_READ, MEMFD_READ, MEMFD_WRITE, MEMFD_WRITE, MEMFD_COPY,
	MEMFD_COPY, MEMFD_COPY,
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double touch(volatile char *p, size_t len, int write)
{
	double t0 = now_ns();
	size_t i;
	char sum = 0;

	for (i = 0; i < len; i += PAGE) {
		if (write)
			p[i] = (char)i;
		else
			sum += p[i];
	}
	(void)sum;
	return (now_ns() - t0) / (len / PAGE);
}

static int die(const char *what)
{
	fprintf(stderr, "xpmem-bench: %s: %s\n", what, strerror(errno));
	return 1;
}

static void *attach_fresh(xpmem_apid_t apid, size_t len)
{
	struct xpmem_addr addr = { .apid = apid, .offset = 0 };

	return xpmem_attach(addr, len, NULL);
}

/* The attacher: every measurement, written to @out. */
static int attacher(xpmem_segid_t segid, int memfd, const char *owner_buf,
		    pid_t owner, size_t len, struct result *out)
{
	char *local, *a, *m;
	xpmem_apid_t apid;
	struct iovec l, r;
	double t0;

	apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (apid == -1)
		return die("xpmem_get");
	local = mmap(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (local == MAP_FAILED)
		return die("mmap");

	a = attach_fresh(apid, len);
	if (a == (void *)-1)
		return die("xpmem_attach");
	out->ns[ATT_READ] = touch(a, len, 0);
	t0 = now_ns();
	memcpy(local, a, len);
	out->ns[ATT_COPY] = (now_ns() - t0) / (len / PAGE);
	xpmem_detach(a);

	a = attach_fresh(apid, len);
	if (a == (void *)-1)
		return die("xpmem_attach");
	out->ns[ATT_WRITE] = touch(a, len, 1);
	xpmem_detach(a);

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED)
		return die("mmap memfd");
	out->ns[MEMFD_READ] = touch(m, len, 0);
	munmap(m, len);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED)
		return die("mmap memfd");
	out->ns[MEMFD_WRITE] = touch(m, len, 1);
	t0 = now_ns();
	memcpy(local, m, len);
	out->ns[MEMFD_COPY] = (now_ns() - t0) / (len / PAGE);
	munmap(m, len);

	l = (struct iovec){ local, len };
	r = (struct iovec){ (void *)owner_buf, len };
	t0 = now_ns();
	if (process_vm_readv(owner, &l, 1, &r, 1, 0) != (ssize_t)len)
		out->ns[PVM_COPY] = -1;
	else
		out->ns[PVM_COPY] = (now_ns() - t0) / (len / PAGE);

	xpmem_release(apid);
	return 0;
}

#define BENCH_MAX_MIB		65536	/* 64 GiB */
#define BENCH_MAX_REPEATS	1000

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-s MiB] [-r repeats] [-m anon|alloc] [-h]\n"
		"  -s MiB      attachment size, 1..%d (default 64)\n"
		"  -r repeats  runs of each measurement, 1..%d (default 3)\n"
		"  -m anon     owner memory is private anonymous (kernel backend)\n"
		"  -m alloc    owner memory from xpmem_ext_alloc() (both backends)\n",
		prog, BENCH_MAX_MIB, BENCH_MAX_REPEATS);
}

/* A decimal integer in [min, max], or -1 with a message. */
static long parse_count(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "xpmem-bench: %s '%s': want an integer from %ld to %ld\n",
			opt, arg, min, max);
		return -1;
	}
	return v;
}

int main(int argc, char **argv)
{
	size_t mib = 64, len;
	int repeats = 3, opt, rep, memfd, ph, pipefd[2];
	const char *mem = NULL, *reason = "";
	struct result sum = { { 0 } };
	long v;

	while ((opt = getopt(argc, argv, "s:r:m:h")) != -1) {
		switch (opt) {
		case 's':
			v = parse_count("-s", optarg, 1, BENCH_MAX_MIB);
			if (v < 0)
				return 2;
			mib = v;
			break;
		case 'r':
			v = parse_count("-r", optarg, 1, BENCH_MAX_REPEATS);
			if (v < 0)
				return 2;
			repeats = v;
			break;
		case 'm':
			mem = optarg;
			if (strcmp(mem, "anon") && strcmp(mem, "alloc")) {
				fprintf(stderr, "xpmem-bench: -m '%s': want anon or alloc\n",
					mem);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xpmem-bench: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	len = mib << 20;
	ph = xpmem_ext_backend(&reason);
	if (!mem)
		mem = ph == XPMEM_EXT_BACKEND_KERNEL ? "anon" : "alloc";
	printf("xpmem-bench: backend %s (%s), %zu MiB, %s memory, %d repeats\n",
	       xpmem_ext_backend_name(ph), reason, mib, mem, repeats);

	memfd = memfd_create("xpmem-bench", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, len))
		return die("memfd");
	{
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       memfd, 0);

		if (m == MAP_FAILED)
			return die("mmap memfd");
		memset(m, 0x5a, len);
		munmap(m, len);
	}

	for (rep = 0; rep < repeats; rep++) {
		struct { xpmem_segid_t segid; char *buf; } msg;
		int to_child[2], status;
		xpmem_segid_t segid;
		struct result r;
		pid_t pid;
		char *buf;

		if (pipe(pipefd) || pipe(to_child))
			return die("pipe");
		pid = fork();
		if (pid < 0)
			return die("fork");
		if (pid == 0) {
			memset(&r, 0, sizeof(r));
			if (read(to_child[0], &msg, sizeof(msg)) != sizeof(msg))
				_exit(1);
			if (attacher(msg.segid, memfd, msg.buf, getppid(), len,
				     &r))
				_exit(1);
			if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
				_exit(1);
			_exit(0);
		}
		/* the owner's memory, touched only after the fork */
		if (!strcmp(mem, "anon"))
			buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		else
			buf = xpmem_ext_alloc(len, 0);
		if (!buf || buf == MAP_FAILED)
			return die("owner memory");
		memset(buf, 0x5a, len);
		segid = xpmem_make(buf, len, XPMEM_PERMIT_MODE, (void *)0600);
		if (segid == -1)
			return die("xpmem_make");
		msg.segid = segid;
		msg.buf = buf;
		if (write(to_child[1], &msg, sizeof(msg)) != sizeof(msg))
			return die("write");
		close(pipefd[1]);
		if (read(pipefd[0], &r, sizeof(r)) != sizeof(r) ||
		    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "xpmem-bench: attacher failed\n");
			return 1;
		}
		close(pipefd[0]);
		close(to_child[0]);
		close(to_child[1]);
		for (ph = 0; ph < NPHASES; ph++)
			sum.ns[ph] += r.ns[ph] / repeats;
		xpmem_remove(segid);
		if (!strcmp(mem, "anon"))
			munmap(buf, len);
		else
			xpmem_ext_free(buf);
	}

	for (ph = 0; ph < NPHASES; ph++)
		printf("xpmem-bench: %-13s %10.1f ns/page  (%.2fx %s)\n",
		       phase_name[ph], sum.ns[ph],
		       sum.ns[ph] / sum.ns[phase_base[ph]],
		       phase_name[phase_base[ph]]);
	return 0;
}
