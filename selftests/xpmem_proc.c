// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_proc - the per-thread-group files /proc/xpmem/<tgid> and
 * /proc/xpmem-objects/<tgid> live and die with the thread group that
 * opened /dev/xpmem, never with its pid number.
 *
 * A device file outlives its opener when another process holds it (passed
 * over SCM_RIGHTS, inherited by a fork child, a shared descriptor table):
 * the opener's files go when it exits, and a process of another user that
 * later gets the same pid number gets files of its own, which the first
 * user cannot read.
 *
 * Who may read a <tgid> file is decided at each open and read against
 * the thread group's credentials of the moment (as for /proc/PID/maps):
 * after a set-user-ID exec, which keeps the thread group, the user who ran
 * the program reads nothing of it, not even through a descriptor opened
 * before the exec.
 *
 * Runs as root in the test VM (users alice/bob, uid/gid 1000/1001);
 * skips without the module.  Children are forked, or cloned with clone3()
 * at a chosen pid (set_tid) to reuse a number; everything synchronises
 * over pipes and checks exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#ifndef __NR_clone3
#define __NR_clone3	435
#endif
#ifndef CLONE_FILES
#define CLONE_FILES	0x00000400
#endif

#define ALICE		1000	/* uid and gid */
#define BOB		1001

#define PROC_CLASSIC	"/proc/xpmem"
#define PROC_OBJECTS	"/proc/xpmem-objects"

/* ---- helpers ------------------------------------------------------------ */

/* struct clone_args of <linux/sched.h> (CLONE_ARGS_SIZE_VER2). */
struct xp_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/*
 * fork() with clone flags @flags, as pid @want if not 0 (in this PID
 * namespace, the initial one in the VM): the child's pid, 0 in the child,
 * or -errno (-EEXIST: @want is taken).  The child dies with its parent
 * if @pdeath.  The child must not use glibc functions that rely on the
 * thread id glibc cached (raise, abort, pthreads): only system calls and
 * _exit().
 */
static pid_t clone_at(pid_t want, uint64_t flags, int pdeath)
{
	struct xp_clone_args a = { .flags = flags, .exit_signal = SIGCHLD };
	pid_t tid = want;
	long r;

	if (want) {
		a.set_tid = (uintptr_t)&tid;
		a.set_tid_size = 1;
	}
	r = syscall(__NR_clone3, &a, sizeof(a));
	if (r < 0)
		return -errno;
	if (r == 0 && pdeath)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return r;
}

/* stat() @dir/<pid>; 0 or -errno. */
static int proc_stat(const char *dir, pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "%s/%d", dir, (int)pid);
	return stat(path, st) ? -errno : 0;
}

/* Read @dir/<pid> into @buf (NUL-terminated); 0 or -errno. */
static int proc_read(const char *dir, pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d", dir, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	return 0;
}

/* Does @buf list segment @segid (a "segment 0x<segid> " line)? */
static int lists_segment(const char *buf, xpmem_segid_t segid)
{
	char want[64];

	snprintf(want, sizeof(want), "segment %#llx ",
		 (unsigned long long)segid);
	return strstr(buf, want) != NULL;
}

/*
 * A child as @uid: open the device, export a page of its own 0666, send
 * the segid on @ch, its device descriptor over @sock, wait for a byte and
 * exit.  Returns the exit code.
 */
static int opener(uid_t uid, struct chan *ch, int sock)
{
	xpmem_segid_t segid;
	char *b, m;
	int fd;

	if (switch_user(uid, uid, 0))
		return 1;
	b = map_anon(PAGE);
	if (!b)
		return 2;
	strcpy(b, "alice's secret");
	fd = xp_open();
	if (fd < 0 || xp_make(fd, b, PAGE, 0666, &segid))
		return 3;
	if (send_msg(ch->to_parent[1], &segid, sizeof(segid)))
		return 4;
	if (send_fd(sock, fd))
		return 5;
	recv_msg(ch->to_child[0], &m, 1);
	return 0;
}

/*
 * A child as @uid that opens the device and exports a page 0666: sends
 * the segid on @ch, waits for a byte, exits.  Only system calls (it may
 * come from clone_at()).
 */
static int maker(uid_t uid, struct chan *ch)
{
	xpmem_segid_t segid;
	char *b, m;
	int fd;

	if (switch_user(uid, uid, 0))
		return 1;
	b = map_anon(PAGE);
	if (!b)
		return 2;
	fd = xp_open();
	if (fd < 0 || xp_make(fd, b, PAGE, 0666, &segid))
		return 3;
	if (send_msg(ch->to_parent[1], &segid, sizeof(segid)))
		return 4;
	recv_msg(ch->to_child[0], &m, 1);
	return 0;
}

/* Can @uid open @dir/<pid>?  0 if not (EACCES or ENOENT), else 1. */
static int readable_by(uid_t uid, const char *dir, pid_t pid)
{
	char buf[4096];
	pid_t c = fork_child();
	int r;

	if (c < 0)
		return 1;
	if (c == 0) {
		if (switch_user(uid, uid, 0))
			_exit(1);
		r = proc_read(dir, pid, buf, sizeof(buf));
		_exit(r == -EACCES || r == -ENOENT ? 0 : 2);
	}
	return wait_child(c) ? 1 : 0;
}

/*
 * What a reader found in an objects file: L lists the segment, N readable
 * but does not list it, D denied (EACCES or EPERM), E anything else.
 */
static char classify_read(int fd, xpmem_segid_t segid)
{
	char buf[4096];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return 'E';
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return errno == EACCES || errno == EPERM ? 'D' : 'E';
	buf[n] = 0;
	return lists_segment(buf, segid) ? 'L' : 'N';
}

static char classify_open(const char *dir, pid_t pid, xpmem_segid_t segid)
{
	char path[64], r;
	int fd;

	snprintf(path, sizeof(path), "%s/%d", dir, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? 'D' : 'E';
	r = classify_read(fd, segid);
	close(fd);
	return r;
}

#define SUID_ARG	"--suid-maker"

/*
 * The set-user-ID program the suid test's child execs (this very binary,
 * copied set-user-ID root): argv = SUID_ARG, device fd, write end, read
 * end.  The device file opened before the exec stays open (it serves the
 * old mm only, but keeps the thread group's /proc files); the program
 * opens the device again, exports a page through it, sends its euid and
 * the segid, waits for a byte, exits.
 */
static int suid_maker(char **argv)
{
	int old = atoi(argv[2]), wr = atoi(argv[3]), rd = atoi(argv[4]);
	xpmem_segid_t segid;
	uid_t euid = geteuid();
	char *b, m;
	int fd;

	if (fcntl(old, F_GETFD) < 0)
		return 2;
	b = map_anon(PAGE);
	fd = xp_open();
	if (!b || fd < 0 || xp_make(fd, b, PAGE, 0600, &segid))
		return 3;
	strcpy(b, "root's secret");
	if (send_msg(wr, &euid, sizeof(euid)) ||
	    send_msg(wr, &segid, sizeof(segid)))
		return 4;
	recv_msg(rd, &m, 1);
	return 0;
}

/* Copy /proc/self/exe to @path, set-user-ID root; 0 or -1. */
static int copy_self_suid(const char *path)
{
	char buf[65536];
	int in, out, ret = -1;
	ssize_t n;

	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (out < 0)
		goto close_in;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			goto close_out;
	if (n == 0 && !fchown(out, 0, 0) && !fchmod(out, 04755))
		ret = 0;
close_out:
	close(out);
close_in:
	close(in);
	return ret;
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(proc)
{
	int fd;
	long segs, permits, atts;
};

FIXTURE_SETUP(proc)
{
	if (geteuid() != 0)
		SKIP(return, "needs root (changes uid, chooses pids)");
	XP_FIXTURE_OPEN();
}

FIXTURE_TEARDOWN(proc)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The opener passes its device file over SCM_RIGHTS and exits: its files
 * go with it although this process still holds the file (and the
 * segment made through it still exists until that file's last close).
 */
TEST_F(proc, opener_exit_removes_files_fd_held_over_scm)
{
	xpmem_segid_t segid;
	struct chan ch;
	struct stat st;
	int sv[2], held;
	pid_t a;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, chan_init(&ch));
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		chan_child(&ch);
		close(sv[0]);
		_exit(opener(ALICE, &ch, sv[1]));
	}
	chan_parent(&ch);
	close(sv[1]);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &segid, sizeof(segid)));
	held = recv_fd(sv[0]);
	ASSERT_LE(0, held);

	/* while it lives, its files are there and alice's */
	ASSERT_EQ(0, proc_stat(PROC_CLASSIC, a, &st));
	ASSERT_EQ(ALICE, st.st_uid);
	ASSERT_EQ(0, proc_stat(PROC_OBJECTS, a, &st));
	ASSERT_EQ(ALICE, st.st_uid);

	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(a));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_CLASSIC, a, &st));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_OBJECTS, a, &st));

	close(held);
	close(sv[0]);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Alice's process exits while this process holds its device file; bob's
 * process then gets the same pid number and exports a page 0666.  Its
 * files are bob's own and list only its segment; alice cannot read them;
 * a permit to alice's segment no longer names that number as the owner.
 */
TEST_F(proc, reused_pid_gets_own_files)
{
	xpmem_segid_t sa, sb;
	xpmem_apid_t apid;
	char buf[4096], want[128];
	struct chan ch, cb;
	struct stat st;
	int sv[2], held;
	pid_t a, b;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, chan_init(&ch));
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		chan_child(&ch);
		close(sv[0]);
		_exit(opener(ALICE, &ch, sv[1]));
	}
	chan_parent(&ch);
	close(sv[1]);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &sa, sizeof(sa)));
	held = recv_fd(sv[0]);
	ASSERT_LE(0, held);
	ASSERT_EQ(0, xp_get(self->fd, sa, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(a));

	/* bob's process gets alice's old pid number */
	ASSERT_EQ(0, chan_init(&cb));
	b = clone_at(a, 0, 1);
	if (b == -EEXIST || b == -EPERM || b == -ENOSYS || b == -EINVAL)
		SKIP(goto out, "cannot reuse pid %d: clone3 set_tid: %s",
		     (int)a, strerror(-b));
	ASSERT_LE(0, b);
	if (b == 0) {
		chan_child(&cb);
		_exit(maker(BOB, &cb));
	}
	chan_parent(&cb);
	ASSERT_EQ(a, b);
	ASSERT_EQ(0, recv_msg(cb.to_parent[0], &sb, sizeof(sb)));

	/* its files are bob's (and exist: it has the device open) */
	ASSERT_EQ(0, proc_stat(PROC_CLASSIC, b, &st));
	EXPECT_EQ(BOB, st.st_uid);
	ASSERT_EQ(0, proc_stat(PROC_OBJECTS, b, &st));
	EXPECT_EQ(BOB, st.st_uid);
	/* they list bob's segment and nothing of alice's */
	ASSERT_EQ(0, proc_read(PROC_OBJECTS, b, buf, sizeof(buf)));
	TH_LOG("%s/%d: %s", PROC_OBJECTS, (int)b, buf);
	EXPECT_TRUE(lists_segment(buf, sb));
	EXPECT_FALSE(lists_segment(buf, sa));
	/* alice cannot read them */
	EXPECT_EQ(0, readable_by(ALICE, PROC_OBJECTS, b));
	EXPECT_EQ(0, readable_by(ALICE, PROC_CLASSIC, b));

	/* our permit to alice's segment does not name bob's process */
	ASSERT_EQ(0, proc_read(PROC_OBJECTS, getpid(), buf, sizeof(buf)));
	snprintf(want, sizeof(want), "permit %#llx segment %#llx owner 0 ",
		 (unsigned long long)apid, (unsigned long long)sa);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("no line %s in: %s", want, buf);

	ASSERT_EQ(0, send_msg(cb.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(b));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_CLASSIC, b, &st));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_OBJECTS, b, &st));
out:
	ASSERT_EQ(0, xp_release(self->fd, apid));
	close(held);
	close(sv[0]);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * The classic suite's expectation: a process that opened the device and
 * forked exits; its files are gone although the child still holds the
 * inherited descriptor.
 */
TEST_F(proc, opener_exit_removes_files_fd_inherited)
{
	struct chan ch, cg;
	struct stat st;
	pid_t a, g;
	char m;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, chan_init(&ch));
	ASSERT_EQ(0, chan_init(&cg));
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		int fd = xp_open();

		chan_child(&ch);
		if (fd < 0)
			_exit(1);
		/* the grandchild outlives this process: no PDEATHSIG */
		g = fork();
		if (g < 0)
			_exit(2);
		if (g == 0) {
			chan_child(&cg);
			send_msg(cg.to_parent[1], "r", 1);
			/* a byte, or end of file if the test died */
			recv_msg(cg.to_child[0], &m, 1);
			_exit(fcntl(fd, F_GETFD) < 0 ? 3 : 0);
		}
		if (send_msg(ch.to_parent[1], &g, sizeof(g)))
			_exit(4);
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	chan_parent(&ch);
	chan_parent(&cg);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &g, sizeof(g)));
	ASSERT_EQ(0, recv_msg(cg.to_parent[0], &m, 1));
	ASSERT_EQ(0, proc_stat(PROC_CLASSIC, a, &st));

	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(a));
	/* the grandchild (now ours: subreaper) still holds the file */
	EXPECT_EQ(-ENOENT, proc_stat(PROC_CLASSIC, a, &st));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_OBJECTS, a, &st));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_CLASSIC, g, &st));

	ASSERT_EQ(0, send_msg(cg.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(g));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * A thread group that closes its last descriptor of a device file it
 * opened loses its files at once, while it lives on and another process
 * holds the file; closing one of two descriptors of it does not.
 */
TEST_F(proc, opener_close_removes_files_dup_keeps_them)
{
	struct chan ch;
	struct stat st;
	int sv[2], held;
	pid_t a;
	char m;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, chan_init(&ch));
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		int fd, fd2;

		chan_child(&ch);
		close(sv[0]);
		fd = xp_open();
		if (fd < 0)
			_exit(1);
		fd2 = dup(fd);
		if (fd2 < 0)
			_exit(2);
		close(fd);
		send_msg(ch.to_parent[1], "d", 1);
		recv_msg(ch.to_child[0], &m, 1);
		if (send_fd(sv[1], fd2))
			_exit(3);
		close(fd2);
		send_msg(ch.to_parent[1], "c", 1);
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	chan_parent(&ch);
	close(sv[1]);
	/* one of two descriptors closed: still open there */
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
	EXPECT_EQ(0, proc_stat(PROC_CLASSIC, a, &st));
	EXPECT_EQ(0, proc_stat(PROC_OBJECTS, a, &st));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "s", 1));
	/* the last one closed, the file sent to us: gone, the opener lives */
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
	held = recv_fd(sv[0]);
	ASSERT_LE(0, held);
	EXPECT_EQ(-ENOENT, proc_stat(PROC_CLASSIC, a, &st));
	EXPECT_EQ(-ENOENT, proc_stat(PROC_OBJECTS, a, &st));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(a));
	close(held);
	close(sv[0]);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Alice's process shares its descriptor table with a process that is not
 * of its thread group (CLONE_FILES), so no close of the device file runs
 * in alice's thread group when it exits.  Whatever file is left under its
 * number shows nothing of alice's; bob's process that gets the number has
 * files of its own.
 */
TEST_F(proc, shared_fd_table_dead_opener_shows_nothing)
{
	xpmem_segid_t sa, sb;
	char buf[4096];
	struct chan ch, ch2, cb;
	struct stat st;
	pid_t a, h, b;
	int r;
	char m;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, chan_init(&ch));
	ASSERT_EQ(0, chan_init(&ch2));
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		xpmem_segid_t s;
		char *p;
		int fd;

		if (switch_user(ALICE, ALICE, 0))
			_exit(1);
		p = map_anon(PAGE);
		fd = xp_open();
		if (!p || fd < 0 || xp_make(fd, p, PAGE, 0666, &s))
			_exit(2);
		/* the ends the test process keeps (the table is shared) */
		chan_child(&ch);
		chan_child(&ch2);
		close(ch2.to_parent[1]);
		/* shares this table (and fd) and outlives this process */
		h = clone_at(0, CLONE_FILES, 0);
		if (h < 0)
			_exit(3);
		if (h == 0) {
			/* a byte, or end of file if the test died */
			recv_msg(ch2.to_child[0], &m, 1);
			_exit(0);
		}
		if (send_msg(ch.to_parent[1], &s, sizeof(s)) ||
		    send_msg(ch.to_parent[1], &h, sizeof(h)))
			_exit(4);
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	chan_parent(&ch);
	chan_parent(&ch2);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &sa, sizeof(sa)));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &h, sizeof(h)));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(a));

	/* a file left under alice's old number lists nothing of hers */
	r = proc_read(PROC_OBJECTS, a, buf, sizeof(buf));
	TH_LOG("%s/%d after exit: %s", PROC_OBJECTS, (int)a,
	       r ? strerror(-r) : buf);
	if (r) {
		EXPECT_EQ(-ENOENT, r);
	} else {
		EXPECT_FALSE(lists_segment(buf, sa));
	}

	ASSERT_EQ(0, chan_init(&cb));
	b = clone_at(a, 0, 1);
	if (b == -EEXIST || b == -EPERM || b == -ENOSYS || b == -EINVAL)
		SKIP(goto out, "cannot reuse pid %d: clone3 set_tid: %s",
		     (int)a, strerror(-b));
	ASSERT_LE(0, b);
	if (b == 0) {
		chan_child(&cb);
		_exit(maker(BOB, &cb));
	}
	chan_parent(&cb);
	ASSERT_EQ(a, b);
	ASSERT_EQ(0, recv_msg(cb.to_parent[0], &sb, sizeof(sb)));
	ASSERT_EQ(0, proc_stat(PROC_CLASSIC, b, &st));
	EXPECT_EQ(BOB, st.st_uid);
	ASSERT_EQ(0, proc_stat(PROC_OBJECTS, b, &st));
	EXPECT_EQ(BOB, st.st_uid);
	ASSERT_EQ(0, proc_read(PROC_OBJECTS, b, buf, sizeof(buf)));
	TH_LOG("%s/%d: %s", PROC_OBJECTS, (int)b, buf);
	EXPECT_TRUE(lists_segment(buf, sb));
	EXPECT_FALSE(lists_segment(buf, sa));
	EXPECT_EQ(0, readable_by(ALICE, PROC_OBJECTS, b));
	ASSERT_EQ(0, send_msg(cb.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(b));
out:
	ASSERT_EQ(0, send_msg(ch2.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(h));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Alice runs a set-user-ID root program that uses the device file she
 * opened before the exec (no O_CLOEXEC).  Her reader, which could read
 * her process's objects before the exec, reads nothing of the segment
 * the program exports after it: neither through the descriptor it opened
 * before the exec nor through a new open.
 */
TEST_F(proc, setuid_exec_objects_hidden_from_invoker)
{
	xpmem_segid_t s1, s2;
	struct chan ct, cr;
	char path[64], r[3];
	pid_t t, rd;
	uid_t euid;
	char m;

	snprintf(path, sizeof(path), "/tmp/xpmem_proc-suid.%d", (int)getpid());
	unlink(path);
	ASSERT_EQ(0, copy_self_suid(path));
	ASSERT_EQ(0, chan_init(&ct));
	t = fork_child();
	ASSERT_LE(0, t);
	if (t == 0) {
		char sfd[16], swr[16], srd[16];
		char *av[] = { path, SUID_ARG, sfd, swr, srd, NULL };
		xpmem_segid_t s;
		char *b;
		int fd;

		chan_child(&ct);
		if (switch_user(ALICE, ALICE, 0) || prctl(PR_SET_DUMPABLE, 1))
			_exit(1);
		b = map_anon(PAGE);
		fd = open(XPMEM_DEV_PATH, O_RDWR);
		if (!b || fd < 0 || xp_make(fd, b, PAGE, 0600, &s))
			_exit(2);
		if (send_msg(ct.to_parent[1], &s, sizeof(s)))
			_exit(3);
		if (recv_msg(ct.to_child[0], &m, 1))
			_exit(4);
		snprintf(sfd, sizeof(sfd), "%d", fd);
		snprintf(swr, sizeof(swr), "%d", ct.to_parent[1]);
		snprintf(srd, sizeof(srd), "%d", ct.to_child[0]);
		execv(path, av);
		_exit(5);
	}
	chan_parent(&ct);
	ASSERT_EQ(0, recv_msg(ct.to_parent[0], &s1, sizeof(s1)));

	ASSERT_EQ(0, chan_init(&cr));
	rd = fork_child();
	ASSERT_LE(0, rd);
	if (rd == 0) {
		char dir_fd_path[64];
		xpmem_segid_t s;
		int fd;

		chan_child(&cr);
		if (switch_user(ALICE, ALICE, 0))
			_exit(1);
		snprintf(dir_fd_path, sizeof(dir_fd_path), "%s/%d",
			 PROC_OBJECTS, (int)t);
		fd = open(dir_fd_path, O_RDONLY | O_CLOEXEC);
		if (recv_msg(cr.to_child[0], &s, sizeof(s)))
			_exit(2);
		r[0] = fd < 0 ? 'D' : classify_read(fd, s);
		if (send_msg(cr.to_parent[1], r, 1) ||
		    recv_msg(cr.to_child[0], &s, sizeof(s)))
			_exit(3);
		r[1] = fd < 0 ? 'D' : classify_read(fd, s);
		r[2] = classify_open(PROC_OBJECTS, t, s);
		if (send_msg(cr.to_parent[1], r + 1, 2))
			_exit(4);
		_exit(0);
	}
	chan_parent(&cr);
	/* before the exec, alice reads her own process's objects */
	ASSERT_EQ(0, send_msg(cr.to_child[1], &s1, sizeof(s1)));
	ASSERT_EQ(0, recv_msg(cr.to_parent[0], r, 1));
	EXPECT_EQ('L', r[0]);

	/* the exec; the program exports a segment as root */
	ASSERT_EQ(0, send_msg(ct.to_child[1], "x", 1));
	if (recv_msg(ct.to_parent[0], &euid, sizeof(euid))) {
		close(cr.to_child[1]);
		wait_child(rd);
		unlink(path);
		ASSERT_EQ(0, wait_child(t)) TH_LOG("the set-user-ID program failed");
	}
	ASSERT_EQ(0, recv_msg(ct.to_parent[0], &s2, sizeof(s2)));
	if (euid != 0) {
		close(cr.to_child[1]);
		wait_child(rd);
		send_msg(ct.to_child[1], "x", 1);
		wait_child(t);
		unlink(path);
		SKIP(return, "the exec did not set the user id (nosuid /tmp?)");
	}

	ASSERT_EQ(0, send_msg(cr.to_child[1], &s2, sizeof(s2)));
	ASSERT_EQ(0, recv_msg(cr.to_parent[0], r + 1, 2));
	TH_LOG("alice after the exec: old descriptor %c, new open %c",
	       r[1], r[2]);
	EXPECT_EQ('D', r[1]);
	EXPECT_EQ('D', r[2]);
	ASSERT_EQ(0, wait_child(rd));
	ASSERT_EQ(0, send_msg(ct.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(t));
	unlink(path);
	ASSERT_COUNTERS_AT_BASE();
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], SUID_ARG))
		return suid_maker(argv);
	return test_harness_run(argc, argv);
}
