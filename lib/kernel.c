// SPDX-License-Identifier: LGPL-2.1
/*
 * kernel.c - the kernel backend: the classic ioctls on /dev/xpmem.
 *
 * The device is opened lazily with O_RDWR|O_CLOEXEC, once per process.
 * The module ties a device file to the process that opened it; a child
 * after fork() that still uses its parent's descriptor gets
 * XPMEM_ERRNO_NOPROC.  We reopen as soon as getpid() changes, and in any
 * case retry an ioctl once after reopening when it fails with NOPROC.
 * Every call issues its command exactly once (the classic library sends
 * MAKE twice).  Events are the device's own: it polls readable while the
 * module has queued one, and a read with RWF_NOWAIT takes them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "xpmem_lib.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_fd = -1;		/* protected by dev_lock */
static pid_t dev_pid;		/* process that opened dev_fd */

/*
 * dev_reopen_locked - (re)open the device for the calling process.
 * @stale: descriptor known to be unusable (answered NOPROC), or -1
 *
 * A descriptor inherited over fork() is the child's own copy of the
 * parent's file; closing it only drops the child's reference.  If the
 * child cannot open the device itself (e.g. it dropped privileges and the
 * node is not world-accessible), it keeps the inherited descriptor and lets
 * the module decide.
 */
static int dev_reopen_locked(int stale)
{
	int fd, err;

	if (dev_fd >= 0 && dev_fd != stale && dev_pid == getpid())
		return dev_fd;
	fd = open(XPMEM_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (dev_fd >= 0 && dev_fd != stale) {
			xpmem_lib_log("cannot reopen " XPMEM_DEV_PATH " (%s), "
				      "keeping the inherited descriptor",
				      strerror(-err));
			dev_pid = getpid();
			return dev_fd;
		}
		return err;
	}
	if (dev_fd >= 0)
		close(dev_fd);
	dev_fd = fd;
	dev_pid = getpid();
	return fd;
}

static int dev_get(int stale)
{
	int fd;

	pthread_mutex_lock(&dev_lock);
	fd = dev_reopen_locked(stale);
	pthread_mutex_unlock(&dev_lock);
	return fd;
}

/**
 * xpmem_lib_kernel_probe - open /dev/xpmem to see whether the module is there.
 *
 * Return: 0, or the negative errno of open(2).
 */
int xpmem_lib_kernel_probe(void)
{
	int fd = dev_get(-1);

	return fd < 0 ? fd : 0;
}

/*
 * dev_ioctl - issue one command, retrying once on a fresh descriptor when
 * the module answers XPMEM_ERRNO_NOPROC.  Fills in the descriptor for
 * commands that carry it (ATTACH) through @fd_out before each try.
 */
static int dev_ioctl(unsigned long cmd, void *arg, int *fd_out)
{
	int fd = dev_get(-1);
	int ret, try;

	for (try = 0; try < 2; try++) {
		if (fd < 0)
			return fd;
		if (fd_out)
			*fd_out = fd;
		ret = ioctl(fd, cmd, arg);
		if (ret >= 0)
			return ret;
		if (errno != XPMEM_ERRNO_NOPROC)
			return -errno;
		xpmem_lib_log("ioctl %#lx: XPMEM_ERRNO_NOPROC, reopening "
			      XPMEM_DEV_PATH, cmd);
		fd = dev_get(fd);
	}
	return -XPMEM_ERRNO_NOPROC;
}

static int kernel_version(void)
{
	return dev_ioctl(XPMEM_CMD_VERSION, NULL, NULL);
}

/* The classic MAKE: one buffer, a mode, nothing else. */
static int kernel_make_classic(const struct xpmem_lib_make_req *req,
			       xpmem_segid_t *segid)
{
	struct xpmem_cmd_make cmd = {
		.vaddr = (__u64)(uintptr_t)req->iov[0].iov_base,
		.size = req->iov[0].iov_len,
		.permit_type = XPMEM_PERMIT_MODE,
		.permit_value = (__u64)req->mode,
	};
	int ret = dev_ioctl(XPMEM_CMD_MAKE, &cmd, NULL);

	if (ret < 0)
		return ret;
	*segid = cmd.segid;
	return 0;
}

static int kernel_remove(xpmem_segid_t segid)
{
	struct xpmem_cmd_remove cmd = { .segid = segid };
	int ret = dev_ioctl(XPMEM_CMD_REMOVE, &cmd, NULL);

	return ret < 0 ? ret : 0;
}

/* The classic GET: a segid and flags. */
static int kernel_get_classic(const struct xpmem_lib_get_req *req,
			      xpmem_apid_t *apid, xpmem_segid_t *segid)
{
	/* The permit value is never passed on, as in the classic library. */
	struct xpmem_cmd_get cmd = {
		.segid = req->segid,
		.flags = req->flags,
		.permit_type = XPMEM_PERMIT_MODE,
		.permit_value = 0,
	};
	int ret = dev_ioctl(XPMEM_CMD_GET, &cmd, NULL);

	if (ret < 0)
		return ret;
	*apid = cmd.apid;
	*segid = req->segid;
	return 0;
}

static int kernel_release(xpmem_apid_t apid)
{
	struct xpmem_cmd_release cmd = { .apid = apid };
	int ret = dev_ioctl(XPMEM_CMD_RELEASE, &cmd, NULL);

	return ret < 0 ? ret : 0;
}

/*
 * XPMEM_CMD_EXT_QUERY once per process: the module's extension features,
 * or 0 for a module that predates the command (ENOTTY).
 */
static pthread_once_t query_once = PTHREAD_ONCE_INIT;
static __u64 query_features;

static void kernel_query(void)
{
	struct xpmem_ext_query q = { .flags = 0 };
	int ret = dev_ioctl(XPMEM_CMD_EXT_QUERY, &q, NULL);

	if (ret < 0) {
		xpmem_lib_log("XPMEM_CMD_EXT_QUERY: %s (a module without "
			      "extensions)", strerror(-ret));
		return;
	}
	xpmem_lib_log("module ext ABI %u, features %#llx, commands %#llx",
		      q.abi_version, (unsigned long long)q.features,
		      (unsigned long long)q.commands);
	query_features = q.features;
}

static unsigned long kernel_more_features(void)
{
	unsigned long f = 0;

	pthread_once(&query_once, kernel_query);
	if (query_features & XPMEM_EXT_KF_ATTACH)
		f |= XPMEM_EXT_F_ATTACH_OPTS;
	if (query_features & XPMEM_EXT_KF_KEYS)
		f |= XPMEM_EXT_F_KEYS | XPMEM_EXT_F_AUTH;
	if (query_features & XPMEM_EXT_KF_HUGE_PMD)
		f |= XPMEM_EXT_F_HUGE;
	if (query_features & XPMEM_EXT_KF_COPY)
		f |= XPMEM_EXT_F_COPY;
	if (query_features & XPMEM_EXT_KF_URING)
		f |= XPMEM_EXT_F_URING;
	if (query_features & XPMEM_EXT_KF_MAKE_IOV)
		f |= XPMEM_EXT_F_MAKEV;
	if (query_features & XPMEM_EXT_KF_URING_FIXED)
		f |= XPMEM_EXT_F_URING_FIXED;
	if (query_features & XPMEM_EXT_KF_ANY_NS)
		f |= XPMEM_EXT_F_ANY_NS;
	if (query_features & XPMEM_EXT_KF_ZERO_REVOKED)
		f |= XPMEM_EXT_F_ZERO_REVOKED;
	if (query_features & XPMEM_EXT_KF_EVENTS)
		f |= XPMEM_EXT_F_EVENTS;
	return f;
}

/*
 * EXT_MAKE and EXT_GET: copy the key and the authorization key (lengths
 * checked by api.c) into @cmd's zeroed fields, issue it, wipe the secret.
 */
static int keyed_ioctl(unsigned long nr, void *cmd, __u8 *kdst,
		       const void *key, size_t key_len, __u8 *adst,
		       const void *auth, size_t auth_len)
{
	int ret;

	if (!(kernel_more_features() & XPMEM_EXT_F_KEYS))
		return -EOPNOTSUPP;
	if (key)
		memcpy(kdst, key, key_len);
	if (auth)
		memcpy(adst, auth, auth_len);
	ret = dev_ioctl(nr, cmd, NULL);
	explicit_bzero(adst, XPMEM_EXT_AUTH_MAX);
	return ret;
}

/*
 * EXT_MAKE: one buffer is the classic (vaddr, size); several the IOV form,
 * whose array is the caller's struct iovec (the same layout, xpmem_lib.h).
 */
static int kernel_make_ext(const struct xpmem_lib_make_req *req,
			   xpmem_segid_t *segid)
{
	struct xpmem_ext_make cmd = {
		.vaddr = (__u64)(uintptr_t)req->iov[0].iov_base,
		.size = req->iov[0].iov_len,
		.flags = req->flags | (req->key ? XPMEM_EXT_MAKE_KEY : 0) |
			 (req->auth ? XPMEM_EXT_MAKE_AUTH : 0),
		.mode = (__u32)req->mode,
		.key_len = (__u32)req->key_len,
		.auth_len = (__u32)req->auth_len,
	};
	int ret;

	if (req->iovcnt > 1) {
		if (!(kernel_more_features() & XPMEM_EXT_F_MAKEV))
			return -EOPNOTSUPP;
		cmd.vaddr = (__u64)(uintptr_t)req->iov;
		cmd.size = (__u64)req->iovcnt;
		cmd.flags |= XPMEM_EXT_MAKE_IOV;
	}

	ret = keyed_ioctl(XPMEM_CMD_EXT_MAKE, &cmd, cmd.key, req->key,
			  req->key_len, cmd.auth, req->auth, req->auth_len);
	if (ret < 0)
		return ret;
	*segid = cmd.segid;
	return 0;
}

/* A classic make (xpmem_make) issues MAKE, an extended one EXT_MAKE. */
static int kernel_make(const struct xpmem_lib_make_req *req,
		       xpmem_segid_t *segid)
{
	return req->ext ? kernel_make_ext(req, segid) :
	       kernel_make_classic(req, segid);
}

/* EXT_GET: by segid or by key, with or without an authorization key. */
static int kernel_get_ext(const struct xpmem_lib_get_req *req,
			  xpmem_apid_t *apid, xpmem_segid_t *segid)
{
	struct xpmem_ext_get cmd = {
		.segid = req->key ? 0 : req->segid,
		.flags = (__u32)req->flags |
			 (req->key ? XPMEM_EXT_GET_BY_KEY : 0) |
			 (req->auth ? XPMEM_EXT_GET_AUTH : 0),
		.key_len = req->key ? (__u32)req->key_len : 0,
		.auth_len = (__u32)req->auth_len,
	};
	int ret;

	ret = keyed_ioctl(XPMEM_CMD_EXT_GET, &cmd, cmd.key, req->key,
			  req->key_len, cmd.auth, req->auth, req->auth_len);
	if (ret < 0)
		return ret;
	*apid = cmd.apid;
	*segid = cmd.segid;
	return 0;
}

/* A classic get (xpmem_get) issues GET, an extended one EXT_GET. */
static int kernel_get(const struct xpmem_lib_get_req *req,
		      xpmem_apid_t *apid, xpmem_segid_t *segid)
{
	return req->ext ? kernel_get_ext(req, apid, segid) :
	       kernel_get_classic(req, apid, segid);
}

/* EXT_ATTACH: flags for a module that has them (checked by the caller). */
static int kernel_attach_ext(xpmem_apid_t apid, off_t offset, size_t size,
			     void *vaddr, unsigned int flags, void **addr)
{
	struct xpmem_ext_attach cmd = {
		.apid = apid,
		.offset = (__u64)offset,
		.size = size,
		.vaddr = (__u64)(uintptr_t)vaddr,
		.flags = flags | (vaddr ? XPMEM_EXT_ATTACH_FIXED : 0),
	};
	int ret;

	if (!(kernel_more_features() & XPMEM_EXT_F_ATTACH_OPTS))
		return -EOPNOTSUPP;
	ret = dev_ioctl(XPMEM_CMD_EXT_ATTACH, &cmd, NULL);
	if (ret < 0)
		return ret;
	*addr = (void *)(uintptr_t)cmd.vaddr;
	return 0;
}

static int kernel_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, unsigned int flags, void **addr)
{
	struct xpmem_cmd_attach cmd = {
		.apid = apid,
		.offset = offset,
		.size = size,
		.vaddr = (__u64)(uintptr_t)vaddr,
		.flags = 0,
	};
	int ret;

	/* the classic command whenever it will do: old modules have it */
	if (flags)
		return kernel_attach_ext(apid, offset, size, vaddr, flags,
					 addr);
	ret = dev_ioctl(XPMEM_CMD_ATTACH, &cmd, &cmd.fd);
	if (ret < 0)
		return ret;
	*addr = (void *)(uintptr_t)cmd.vaddr;
	return 0;
}

static int kernel_detach(void *vaddr)
{
	struct xpmem_cmd_detach cmd = { .vaddr = (__u64)(uintptr_t)vaddr };
	int ret = dev_ioctl(XPMEM_CMD_DETACH, &cmd, NULL);

	return ret < 0 ? ret : 0;
}

/* ---- allocator: shared anonymous memory, any range exports ------------- */

struct kalloc {
	struct kalloc *next;
	void *addr;
	size_t size;
};

static pthread_mutex_t kalloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kalloc *kallocs;	/* protected by kalloc_lock */

/*
 * kernel_alloc - shared anonymous (shmem-backed) memory, so that futexes
 * on it work across processes and it behaves like the shm backend's
 * allocator across fork.
 */
static int kernel_alloc(size_t size, unsigned int flags, void **addr)
{
	struct kalloc *ka = malloc(sizeof(*ka));
	size_t page = xpmem_lib_page_size();
	void *p = MAP_FAILED;

	if (!ka)
		return -ENOMEM;
	if (size > SIZE_MAX - (2UL << 20)) {
		free(ka);
		return -ENOMEM;
	}
	if (flags & XPMEM_EXT_ALLOC_HUGETLB) {
		size_t hsize = (size + (2UL << 20) - 1) & ~((2UL << 20) - 1);

		p = mmap(NULL, hsize, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB |
			 XPMEM_LIB_HUGE_2MB_FLAG, -1, 0);
		if (p != MAP_FAILED)
			size = hsize;
		else
			xpmem_lib_log("alloc: no huge pages (%s), using base pages",
				      strerror(errno));
	}
	if (p == MAP_FAILED) {
		size = (size + page - 1) & ~(page - 1);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED) {
		free(ka);
		return -errno;
	}
	ka->addr = p;
	ka->size = size;
	pthread_mutex_lock(&kalloc_lock);
	ka->next = kallocs;
	kallocs = ka;
	pthread_mutex_unlock(&kalloc_lock);
	*addr = p;
	return 0;
}

static int kernel_free(void *addr)
{
	struct kalloc **pp, *ka = NULL;

	pthread_mutex_lock(&kalloc_lock);
	for (pp = &kallocs; *pp; pp = &(*pp)->next) {
		if ((*pp)->addr == addr) {
			ka = *pp;
			*pp = ka->next;
			break;
		}
	}
	pthread_mutex_unlock(&kalloc_lock);
	if (!ka)
		return -EINVAL;
	/* Segments on it stay valid in the module; attachers see a hole. */
	munmap(ka->addr, ka->size);
	free(ka);
	return 0;
}

/* EXT_COPY: the argument goes to the module as it is. */
static ssize_t kernel_copy(const struct xpmem_ext_copy *arg)
{
	struct xpmem_ext_copy cmd = *arg;

	if (!(kernel_more_features() & XPMEM_EXT_F_COPY))
		return -EOPNOTSUPP;
	return dev_ioctl(XPMEM_CMD_EXT_COPY, &cmd, NULL);
}

static int kernel_populate(void *addr, size_t len, unsigned int flags)
{
	struct xpmem_ext_populate cmd = {
		.vaddr = (__u64)(uintptr_t)addr, .len = len, .flags = flags,
	};

	if (!(kernel_more_features() & XPMEM_EXT_F_COPY))
		return -EOPNOTSUPP;
	return dev_ioctl(XPMEM_CMD_EXT_POPULATE, &cmd, NULL);
}

/*
 * The module's io_uring command: IORING_OP_URING_CMD on this process's
 * descriptor of the device, the argument's address in the command area.
 */
static int kernel_prep(struct io_uring_sqe *sqe, unsigned int op,
		       const void *arg, int buf_index)
{
	int fd;

	if (!(kernel_more_features() & XPMEM_EXT_F_URING) ||
	    (buf_index >= 0 &&
	     !(kernel_more_features() & XPMEM_EXT_F_URING_FIXED)))
		return -EOPNOTSUPP;
	fd = dev_get(-1);
	if (fd < 0)
		return fd;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->addr3 = (__u64)(uintptr_t)arg;
	if (buf_index >= 0) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = (__u16)buf_index;
	}
	return 0;
}

/* Events: the process's device descriptor (the module's poll). */
static int kernel_event_fd(void)
{
	if (!(kernel_more_features() & XPMEM_EXT_F_EVENTS))
		return -EOPNOTSUPP;
	return dev_get(-1);
}

/* Records asked of the module per read (it hands out 8 at most). */
#define KERNEL_EVENTS_READ	64

/*
 * Read up to @max records without blocking (RWF_NOWAIT: the descriptor
 * itself stays blocking for ioctls and io_uring commands), read after
 * read until @max or none is left, so that fewer than @max means none
 * is queued now.  A descriptor inherited over fork() is answered NOPROC:
 * the child's own, reopened, has no events yet.
 */
static int kernel_events(struct xpmem_ext_event *ev, unsigned int max)
{
	int fd = kernel_event_fd();
	unsigned int got = 0;
	struct iovec iov;
	ssize_t n;

	if (fd < 0)
		return fd;
	while (got < max) {
		iov.iov_base = ev + got;
		iov.iov_len = (max - got < KERNEL_EVENTS_READ ?
			       max - got : KERNEL_EVENTS_READ) * sizeof(*ev);
		n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (n <= 0) {
			if (!n)
				errno = EAGAIN;
			break;
		}
		got += (unsigned int)(n / sizeof(*ev));
	}
	if (got || errno == EAGAIN)
		return (int)got;
	if (errno == XPMEM_ERRNO_NOPROC) {
		dev_get(fd);
		return 0;
	}
	return -errno;
}

const struct xpmem_lib_backend xpmem_lib_kernel_backend = {
	.id = XPMEM_EXT_BACKEND_KERNEL,
	.features = XPMEM_EXT_F_WHOLE_AS | XPMEM_EXT_F_ANY_MEMORY |
		    XPMEM_EXT_F_CROSS_USER | XPMEM_EXT_F_REVOKE |
		    XPMEM_EXT_F_COHERENT,
	.more_features = kernel_more_features,
	.version = kernel_version,
	.make = kernel_make,
	.remove = kernel_remove,
	.get = kernel_get,
	.release = kernel_release,
	.attach = kernel_attach,
	.detach = kernel_detach,
	.alloc = kernel_alloc,
	.free = kernel_free,
	.copy = kernel_copy,
	.populate = kernel_populate,
	.prep = kernel_prep,
	.event_fd = kernel_event_fd,
	.events = kernel_events,
};
