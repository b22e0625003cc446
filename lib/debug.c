// SPDX-License-Identifier: LGPL-2.1
/*
 * debug.c - XPMEM_DEBUG logging to stderr, and the few warnings printed
 * without it (a configuration the library cannot honour).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpmem_lib.h"

static pthread_once_t debug_once = PTHREAD_ONCE_INIT;
static int debug_on;

static void debug_read_env(void)
{
	const char *v = getenv("XPMEM_DEBUG");

	debug_on = v && *v && strcmp(v, "0") != 0;
}

/**
 * xpmem_lib_debug_enabled - whether XPMEM_DEBUG asks for messages.
 *
 * The variable is read once per process.
 */
int xpmem_lib_debug_enabled(void)
{
	pthread_once(&debug_once, debug_read_env);
	return debug_on;
}

/**
 * xpmem_lib_log - print one debug line to stderr.
 * @fmt: printf format, without a trailing newline
 *
 * The line is formatted first and written with a single write(2) so that
 * lines from several threads or processes do not interleave.  errno is
 * preserved.
 */
static void log_line(const char *fmt, va_list ap)
{
	char line[512];
	int saved = errno;
	int n;

	n = snprintf(line, sizeof(line), "libxpmem[%d]: ", (int)getpid());
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nothing sensible left to do with a diagnostic */
	}
	errno = saved;
}

void xpmem_lib_log(const char *fmt, ...)
{
	va_list ap;

	if (!xpmem_lib_debug_enabled())
		return;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

/**
 * xpmem_lib_warn_once - print one line to stderr, XPMEM_DEBUG or not, at
 * most once per process for each @done.
 * @done: the call site's flag: the pid that printed it last (a child
 *        after fork prints again; it is another process)
 * @fmt:  printf format, without a trailing newline
 */
void xpmem_lib_warn_once(int *done, const char *fmt, ...)
{
	int me = (int)getpid();
	va_list ap;

	if (__atomic_exchange_n(done, me, __ATOMIC_RELAXED) == me)
		return;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}
