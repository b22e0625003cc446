/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uring_probe.h - what the running kernel's io_uring offers, asked of
 * io_uring itself (for the kernel suites and lib_ext).
 */
#ifndef URING_PROBE_H
#define URING_PROBE_H

#include <liburing.h>

/*
 * Does the running kernel have io_uring commands for files
 * (IORING_OP_URING_CMD, 5.19)?  Asked of io_uring itself, not of the
 * module, so that a test can tell "the module does not report it because
 * the kernel lacks it" from "the module lost it".
 */
static inline int kernel_has_uring_cmd(void)
{
	struct io_uring_probe *probe = io_uring_get_probe();
	int has;

	if (!probe)
		return 0;
	has = io_uring_opcode_supported(probe, IORING_OP_URING_CMD);
	io_uring_free_probe(probe);
	return has;
}

#endif
