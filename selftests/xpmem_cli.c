// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_cli - selftests of the xpmem command-line tool (tools/xpmem.c).
 *
 * Runs as root inside the test VM with the module loaded (skips without
 * /dev/xpmem).  The tests make segments, permits and attachments through
 * the library in this process and in forked children (synchronised over
 * pipes), run the tool (XPMEM_CLI, default /tools/xpmem; it is dynamically
 * linked against libxpmem.so.0) with fork+exec, capture its output, and
 * check what it reports against what they made and against sysfs.  The
 * --json output is parsed by a small JSON reader below, so every test of
 * it also checks that it is valid JSON.
 *
 * Run with XPMEM_CLI_SHM_ROLE set (list_shm_registry does that through
 * /proc/self/exe), this program is instead an owner or a peer on the shm
 * backend (role_main() below).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define CLI_DEFAULT	"/tools/xpmem"
#define ROLE_ENV	"XPMEM_CLI_SHM_ROLE"
#define OTHER_UID	1001
#define OUT_MAX		(1U << 20)	/* captured stdout/stderr, each */
#define JSON_MAX_DEPTH	32

/* ---- a small JSON reader ------------------------------------------------ */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	long long num;		/* J_NUM (integral part), J_BOOL */
	char *str;		/* J_STR, UTF-8 */
	size_t n;		/* J_ARR, J_OBJ: members */
	char **keys;		/* J_OBJ */
	struct jval **items;	/* J_ARR, J_OBJ */
};

struct jparser {
	const char *p;
	int depth;
};

static void jfree(struct jval *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		if (v->keys)
			free(v->keys[i]);
		jfree(v->items[i]);
	}
	free(v->keys);
	free(v->items);
	free(v->str);
	free(v);
}

static void jws(struct jparser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
	       *ps->p == '\r')
		ps->p++;
}

static int hex4(const char *s, unsigned int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 4; i++) {
		char c = s[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned int)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned int cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at ps->p (at its '"'); malloc'd, or NULL if invalid. */
static char *jstring(struct jparser *ps)
{
	const char *s = ps->p + 1;
	char *out = malloc(strlen(s) + 1), *o = out;
	unsigned int cp, lo;

	if (!out)
		return NULL;
	while (*s && *s != '"') {
		if ((unsigned char)*s < 0x20)
			goto bad;	/* raw control character */
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '"': case '\\': case '/':
			*o++ = *s++;
			continue;
		case 'b': *o++ = '\b'; s++; continue;
		case 'f': *o++ = '\f'; s++; continue;
		case 'n': *o++ = '\n'; s++; continue;
		case 'r': *o++ = '\r'; s++; continue;
		case 't': *o++ = '\t'; s++; continue;
		case 'u':
			if (hex4(s + 1, &cp))
				goto bad;
			s += 5;
			if (cp >= 0xd800 && cp < 0xdc00 && s[0] == '\\' &&
			    s[1] == 'u' && !hex4(s + 2, &lo) &&
			    lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
				s += 6;
			}
			o += put_utf8(o, cp);
			continue;
		default:
			goto bad;
		}
	}
	if (*s != '"')
		goto bad;
	*o = '\0';
	ps->p = s + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static struct jval *jvalue(struct jparser *ps);

static int jappend(struct jval *v, char *key, struct jval *item)
{
	struct jval **items = realloc(v->items, (v->n + 1) * sizeof(*items));
	char **keys;

	if (!items)
		return -1;
	v->items = items;
	if (v->type == J_OBJ) {
		keys = realloc(v->keys, (v->n + 1) * sizeof(*keys));
		if (!keys)
			return -1;
		v->keys = keys;
		v->keys[v->n] = key;
	}
	v->items[v->n++] = item;
	return 0;
}

/* An array or object at ps->p (at its '[' or '{'). */
static struct jval *jcontainer(struct jparser *ps, struct jval *v)
{
	char close = v->type == J_OBJ ? '}' : ']';
	struct jval *item;
	char *key = NULL;

	ps->p++;
	jws(ps);
	if (*ps->p == close) {
		ps->p++;
		return v;
	}
	for (;;) {
		jws(ps);
		if (v->type == J_OBJ) {
			if (*ps->p != '"' || !(key = jstring(ps)))
				return NULL;
			jws(ps);
			if (*ps->p++ != ':') {
				free(key);
				return NULL;
			}
		}
		item = jvalue(ps);
		if (!item || jappend(v, key, item)) {
			free(key);
			jfree(item);
			return NULL;
		}
		key = NULL;
		jws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p++ != close)
			return NULL;
		return v;
	}
}

static bool jnumber_ok(const char *s)
{
	if (*s == '-')
		s++;
	if (*s < '0' || *s > '9')
		return false;
	return !(s[0] == '0' && s[1] >= '0' && s[1] <= '9');
}

static struct jval *jvalue(struct jparser *ps)
{
	struct jval *v = calloc(1, sizeof(*v));
	char *end;

	if (!v || ++ps->depth > JSON_MAX_DEPTH)
		goto bad;
	jws(ps);
	switch (*ps->p) {
	case '{':
		v->type = J_OBJ;
		if (!jcontainer(ps, v))
			goto bad;
		break;
	case '[':
		v->type = J_ARR;
		if (!jcontainer(ps, v))
			goto bad;
		break;
	case '"':
		v->type = J_STR;
		v->str = jstring(ps);
		if (!v->str)
			goto bad;
		break;
	case 't': case 'f': case 'n':
		if (!strncmp(ps->p, "true", 4)) {
			v->type = J_BOOL;
			v->num = 1;
			ps->p += 4;
		} else if (!strncmp(ps->p, "false", 5)) {
			v->type = J_BOOL;
			ps->p += 5;
		} else if (!strncmp(ps->p, "null", 4)) {
			ps->p += 4;
		} else {
			goto bad;
		}
		break;
	default:
		if (!jnumber_ok(ps->p))
			goto bad;
		/* integers (clamped to long long); a fraction is skipped */
		v->type = J_NUM;
		v->num = strtoll(ps->p, &end, 10);
		if (*end == '.' || *end == 'e' || *end == 'E')
			strtod(ps->p, &end);
		ps->p = end;
		break;
	}
	ps->depth--;
	return v;
bad:
	jfree(v);
	return NULL;
}

/* The document @text, or NULL if it is not exactly one JSON value. */
static struct jval *jparse(const char *text)
{
	struct jparser ps = { .p = text };
	struct jval *v = jvalue(&ps);

	if (!v)
		return NULL;
	jws(&ps);
	if (*ps.p) {
		jfree(v);
		return NULL;
	}
	return v;
}

/* Member @key of object @v; NULL if @v is no object or has no such key. */
static const struct jval *jget(const struct jval *v, const char *key)
{
	size_t i;

	if (!v || v->type != J_OBJ)
		return NULL;
	for (i = 0; i < v->n; i++)
		if (!strcmp(v->keys[i], key))
			return v->items[i];
	return NULL;
}

/* jget along a path of keys, e.g. jpath(doc, "kernel", "hidden", NULL). */
static const struct jval *jpath(const struct jval *v, ...)
{
	const char *key;
	va_list ap;

	va_start(ap, v);
	while (v && (key = va_arg(ap, const char *)))
		v = jget(v, key);
	va_end(ap);
	return v;
}

static const char *jstr(const struct jval *v)
{
	return v && v->type == J_STR ? v->str : NULL;
}

/* The number @v, or LLONG_MIN if it is not one. */
static long long jnum(const struct jval *v)
{
	return v && v->type == J_NUM ? v->num : LLONG_MIN;
}

static int jbool(const struct jval *v)
{
	return v && v->type == J_BOOL ? (int)v->num : -1;
}

/* A "0x..." id string as a number, or -1. */
static long long jhex(const struct jval *v)
{
	const char *s = jstr(v);
	char *end;
	long long x;

	if (!s || strncmp(s, "0x", 2))
		return -1;
	errno = 0;
	x = strtoll(s + 2, &end, 16);
	return errno || *end || end == s + 2 ? -1 : x;
}

/* Elements of array @arr whose @key is the number or id @want. */
static size_t jcount(const struct jval *arr, const char *key, long long want)
{
	size_t i, n = 0;

	for (i = 0; arr && arr->type == J_ARR && i < arr->n; i++) {
		const struct jval *f = jget(arr->items[i], key);

		if (jnum(f) == want || jhex(f) == want)
			n++;
	}
	return n;
}

/* The first element of array @arr with @key1 == @v1 and @key2 == @v2. */
static const struct jval *jfind(const struct jval *arr, const char *key1,
				long long v1, const char *key2, long long v2)
{
	size_t i;

	for (i = 0; arr && arr->type == J_ARR && i < arr->n; i++) {
		const struct jval *a = jget(arr->items[i], key1);
		const struct jval *b = jget(arr->items[i], key2);

		if ((jnum(a) == v1 || jhex(a) == v1) &&
		    (jnum(b) == v2 || jhex(b) == v2))
			return arr->items[i];
	}
	return NULL;
}

/* ---- running the tool --------------------------------------------------- */

struct run {
	int status;	/* exit code, 128 + signal, or -1 */
	char *out;	/* stdout, NUL-terminated */
	char *err;	/* stderr, NUL-terminated */
	bool truncated;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	free(r);
}

/* In the child: "NAME=value" sets, "NAME" unsets. */
static int apply_env(const char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		char name[64];

		if (!eq)
			unsetenv(*env);
		if (!eq)
			continue;
		if ((size_t)(eq - *env) >= sizeof(name))
			return -1;
		memcpy(name, *env, (size_t)(eq - *env));
		name[eq - *env] = '\0';
		if (setenv(name, eq + 1, 1))
			return -1;
	}
	return 0;
}

static void exec_cli(const char *cli, int out, int err, uid_t uid,
		     const char *const *env, const char *const *args)
{
	const char *argv[16] = { cli };
	int i;

	for (i = 0; i < 14 && args[i]; i++)
		argv[i + 1] = args[i];
	if (dup2(out, 1) < 0 || dup2(err, 2) < 0 || apply_env(env) ||
	    (uid != (uid_t)-1 && switch_user(uid, uid, 0)))
		_exit(126);
	execv(cli, (char *const *)argv);
	_exit(127);
}

/* Read both pipes to their ends into @r. */
static void collect(int out, int err, struct run *r)
{
	struct pollfd p[2] = { { .fd = out, .events = POLLIN },
			       { .fd = err, .events = POLLIN } };
	size_t len[2] = { 0, 0 }, room;
	char *buf[2] = { r->out, r->err }, spill[4096], *dst;
	int i, open = 2;
	ssize_t n;

	while (open && poll(p, 2, -1) >= 0) {
		for (i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			/* beyond OUT_MAX, drain (the tool must not block) */
			room = OUT_MAX - 1 - len[i];
			dst = room ? buf[i] + len[i] : spill;
			n = read(p[i].fd, dst, room ? room : sizeof(spill));
			if (n > 0 && room)
				len[i] += (size_t)n;
			else if (n > 0)
				r->truncated = true;
			if (n > 0 || (n < 0 && errno == EINTR))
				continue;
			p[i].fd = -1;
			open--;
		}
	}
	r->out[len[0]] = '\0';
	r->err[len[1]] = '\0';
}

/*
 * cli_run - run @cli with @args (NULL-terminated) as @uid ((uid_t)-1:
 * unchanged) with the environment changes @env (NULL-terminated, or
 * NULL); NULL if the run could not be set up.
 */
static struct run *cli_run(const char *cli, uid_t uid, const char *const *env,
			   const char *const *args)
{
	struct run *r = calloc(1, sizeof(*r));
	int po[2], pe[2];
	pid_t pid;

	if (!r)
		return NULL;
	r->out = malloc(OUT_MAX);
	r->err = malloc(OUT_MAX);
	if (!r->out || !r->err || pipe2(po, O_CLOEXEC)) {
		run_free(r);
		return NULL;
	}
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]);
		close(po[1]);
		run_free(r);
		return NULL;
	}
	pid = fork_child();
	if (pid == 0)
		exec_cli(cli, po[1], pe[1], uid, env, args);
	close(po[1]);
	close(pe[1]);
	if (pid > 0)
		collect(po[0], pe[0], r);
	close(po[0]);
	close(pe[0]);
	r->status = pid > 0 ? wait_child(pid) : -1;
	return r;
}

#define ARGS(...)	((const char *const []){ __VA_ARGS__, NULL })
/* Run the tool as we are, in our environment. */
#define CLI(...)	cli_run(self->cli, (uid_t)-1, NULL, ARGS(__VA_ARGS__))

/* Log what a run printed (for failing assertions). */
static void run_log(struct __test_metadata *_metadata, const struct run *r)
{
	TH_LOG("exit %d, stdout:\n%.2000s\nstderr:\n%.2000s", r->status,
	       r->out, r->err);
}

/* ---- shm backend processes (this program, re-executed) ----------------- */

/*
 * With ROLE_ENV set (spawn_role() does that, with XPMEM_BACKEND=shm) this
 * program is one of these before the harness starts:
 *   owner: makes a segment of 3 pages, mode 0640, prints "<segid>
 *          <backend>", waits for end of file on stdin, removes it;
 *   peer:  reads a segid on stdin, gets and attaches it (so that it holds
 *          the owner's registry, read-only), prints "ok", waits for end
 *          of file on stdin.
 */
static int shm_owner(void)
{
	xpmem_segid_t segid;
	char *buf, c;

	buf = xpmem_ext_alloc(3 * PAGE, 0);
	if (!buf)
		return 1;
	segid = xpmem_make(buf, 3 * PAGE, XPMEM_PERMIT_MODE, (void *)0640);
	if (segid == -1)
		return 2;
	printf("%lld %d\n", (long long)segid, xpmem_ext_backend(NULL));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return xpmem_remove(segid) ? 3 : 0;
}

static int shm_peer(void)
{
	struct xpmem_addr addr = { .offset = 0 };
	char line[64], c;
	long long segid;
	ssize_t n;

	n = read(0, line, sizeof(line) - 1);
	if (n <= 0)
		return 1;
	line[n] = '\0';
	if (sscanf(line, "%lld", &segid) != 1)
		return 2;
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid == -1)
		return 3;
	if (xpmem_attach(addr, PAGE, NULL) == (void *)-1)
		return 4;
	printf("ok\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

__attribute__((constructor)) static void role_main(void)
{
	const char *role = getenv(ROLE_ENV);

	if (!role)
		return;
	_exit(!strcmp(role, "owner") ? shm_owner() :
	      !strcmp(role, "peer") ? shm_peer() : 125);
}

/* Two O_CLOEXEC pipes, or none: 0 or -1. */
static int pipe_pair(int to[2], int from[2])
{
	if (pipe2(to, O_CLOEXEC))
		return -1;
	if (pipe2(from, O_CLOEXEC)) {
		close(to[0]);
		close(to[1]);
		return -1;
	}
	return 0;
}

/*
 * spawn_role - run this program as @role on the shm backend; its stdin in
 * @in, its stdout in @out.  Returns its pid, or -1.
 */
static pid_t spawn_role(const char *role, int *in, int *out)
{
	int to[2], from[2];
	pid_t pid;

	if (pipe_pair(to, from))
		return -1;
	pid = fork_child();
	if (pid == 0) {
		if (dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0 ||
		    setenv(ROLE_ENV, role, 1) ||
		    setenv("XPMEM_BACKEND", "shm", 1))
			_exit(126);
		execl("/proc/self/exe", "xpmem_cli", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	if (pid < 0) {
		close(to[1]);
		close(from[0]);
		return -1;
	}
	*in = to[1];
	*out = from[0];
	return pid;
}

/* One line (at most @size - 1 bytes) from @fd into @buf; its length. */
static ssize_t read_line(int fd, char *buf, size_t size)
{
	ssize_t n = read(fd, buf, size - 1);

	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(cli)
{
	const char *cli;
};

FIXTURE_SETUP(cli)
{
	const char *env = getenv("XPMEM_CLI");

	if (access(XPMEM_DEV_PATH, F_OK))
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	self->cli = env && *env ? env : CLI_DEFAULT;
	ASSERT_EQ(0, access(self->cli, X_OK))
		TH_LOG("%s: %s (XPMEM_CLI names the tool)", self->cli,
		       strerror(errno));
	/* every test here expects this process on the kernel backend */
	ASSERT_EQ(XPMEM_EXT_BACKEND_KERNEL, xpmem_ext_backend(NULL));
}

FIXTURE_TEARDOWN(cli)
{
}

/* ---- status ------------------------------------------------------------- */

TEST_F(cli, status_json_kernel)
{
	struct run *r = cli_run(self->cli, (uid_t)-1,
				ARGS("XPMEM_BACKEND=kernel"),
				ARGS("status", "--json"));
	const struct jval *names;
	struct jval *doc;
	size_t i;

	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(1, jbool(jpath(doc, "module", "loaded", NULL)));
	EXPECT_EQ(1, jbool(jpath(doc, "device", "exists", NULL)));
	EXPECT_EQ(1, jbool(jpath(doc, "device", "rdwr", NULL)));
	EXPECT_STREQ("0666", jstr(jpath(doc, "device", "mode", NULL)));
	EXPECT_STREQ("kernel", jstr(jpath(doc, "backend", "name", NULL)));
	EXPECT_EQ(XPMEM_EXT_BACKEND_KERNEL,
		  jnum(jpath(doc, "backend", "id", NULL)));
	EXPECT_EQ(1, jbool(jpath(doc, "backend", "usable", NULL)));
	EXPECT_STREQ("XPMEM_BACKEND=kernel",
		     jstr(jpath(doc, "backend", "reason", NULL)));
	EXPECT_EQ(xpmem_version(),
		  jnum(jpath(doc, "xpmem_version", "value", NULL)));
	EXPECT_EQ((long long)xpmem_ext_features(),
		  jhex(jpath(doc, "features", "mask", NULL)));
	names = jpath(doc, "features", "names", NULL);
	ASSERT_NE(NULL, names);
	ASSERT_EQ(J_ARR, names->type);
	for (i = 0; i < names->n; i++)
		if (!strcmp(jstr(names->items[i]) ?: "", "revoke"))
			break;
	EXPECT_LT(i, names->n) TH_LOG("no \"revoke\" in features.names");
	EXPECT_STREQ("kernel",
		     jstr(jpath(doc, "environment", "XPMEM_BACKEND", NULL)));
	/* the module's parameters, as sysfs has them */
	EXPECT_EQ(sysfs_read_long(PARAM_DIR, "max_segments"),
		  jnum(jpath(doc, "module", "limits", "max_segments", NULL)));
	jfree(doc);
	run_free(r);
}

/* What the tool says a process gets, for each value of XPMEM_BACKEND. */
TEST_F(cli, status_backend_choice)
{
	static const struct {
		const char *env, *name, *reason;
		int status;
	} cases[] = {
		{ "XPMEM_BACKEND", "kernel", "auto: /dev/xpmem opened", 0 },
		{ "XPMEM_BACKEND=auto", "kernel", "auto: /dev/xpmem opened", 0 },
		{ "XPMEM_BACKEND=shm", "shm", "XPMEM_BACKEND=shm", 0 },
		{ "XPMEM_BACKEND=bogus", "none",
		  "XPMEM_BACKEND=bogus is not kernel, shm or auto", 1 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct run *r = cli_run(self->cli, (uid_t)-1,
					ARGS(cases[i].env),
					ARGS("--json", "status"));
		struct jval *doc;

		ASSERT_NE(NULL, r);
		EXPECT_EQ(cases[i].status, r->status) run_log(_metadata, r);
		doc = jparse(r->out);
		ASSERT_NE(NULL, doc) run_log(_metadata, r);
		EXPECT_STREQ(cases[i].name,
			     jstr(jpath(doc, "backend", "name", NULL)));
		EXPECT_STREQ(cases[i].reason,
			     jstr(jpath(doc, "backend", "reason", NULL)));
		jfree(doc);
		run_free(r);
	}
}

/* The table form says the same. */
TEST_F(cli, status_text)
{
	struct run *r = cli_run(self->cli, (uid_t)-1,
				ARGS("XPMEM_BACKEND=kernel"), ARGS("status"));

	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->out, "module:         loaded"))
		run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->out, "backend:        kernel (XPMEM_BACKEND=kernel)"))
		run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->out, "read-write open: yes"))
		run_log(_metadata, r);
	run_free(r);
}

/* Strings are escaped: any byte string survives as valid JSON. */
TEST_F(cli, status_json_escaping)
{
	const char odd[] = "/tmp/a\"b\\c\nd\te\x01\x1f\x7f" "\xc3\xa9";
	const char want[] = "/tmp/a\"b\\c\nd\te\x01\x1f\x7f" "\xc3\xa9"
			    "\xef\xbf\xbd" "z";
	char env[128];
	struct jval *doc;
	struct run *r;

	/* an invalid UTF-8 byte (0xff) comes out as U+FFFD */
	ASSERT_LT(snprintf(env, sizeof(env), "XPMEM_SHM_DIR=%s\xffz", odd),
		  (int)sizeof(env));
	r = cli_run(self->cli, (uid_t)-1, ARGS(env), ARGS("status", "--json"));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_STREQ(want,
		     jstr(jpath(doc, "environment", "XPMEM_SHM_DIR", NULL)));
	jfree(doc);
	run_free(r);
}

/* ---- stats -------------------------------------------------------------- */

/* The value of "@name N" in the table @out, or -1. */
static long stats_line(const char *out, const char *name)
{
	size_t len = strlen(name);
	const char *p;

	for (p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtol(p + len + 1, NULL, 10);
	return -1;
}

TEST_F(cli, stats_counts_segments)
{
	xpmem_segid_t segids[3];
	struct jval *doc;
	long before;
	struct run *r;
	char *buf;
	int i;

	before = stat_read("segments");
	ASSERT_GE(before, 0);
	buf = map_anon(3 * PAGE);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < 3; i++) {
		segids[i] = xpmem_make(buf + i * PAGE, PAGE, XPMEM_PERMIT_MODE,
				       (void *)0600);
		ASSERT_GT(segids[i], 0);
	}
	ASSERT_EQ(before + 3, stat_read("segments"));

	r = CLI("stats");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	EXPECT_EQ(before + 3, stats_line(r->out, "segments"))
		run_log(_metadata, r);
	EXPECT_EQ(stat_read("permits"), stats_line(r->out, "permits"));
	EXPECT_EQ(stat_read("attachments"), stats_line(r->out, "attachments"));
	run_free(r);

	r = CLI("--json", "stats");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(before + 3, jnum(jget(doc, "segments")));
	/* every counter file is there */
	EXPECT_NE(NULL, jget(doc, "faults")) run_log(_metadata, r);
	EXPECT_NE(NULL, jget(doc, "invalidations")) run_log(_metadata, r);
	jfree(doc);
	run_free(r);

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xpmem_remove(segids[i]));
	ASSERT_EQ(before, stat_read("segments"));
	r = CLI("stats");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(before, stats_line(r->out, "segments")) run_log(_metadata, r);
	run_free(r);
	munmap(buf, 3 * PAGE);
}

/*
 * The counters are every user's: a user reads none of them, directly or
 * through the tool, which says why in one line and exits 1.
 */
TEST_F(cli, stats_root_only)
{
	const char *nl;
	struct run *r;
	pid_t c;

	c = fork_child();
	ASSERT_LE(0, c);
	if (c == 0) {
		char buf[64];
		int fd;

		if (setgroups(0, NULL) ||
		    setresgid(OTHER_UID, OTHER_UID, OTHER_UID) ||
		    setresuid(OTHER_UID, OTHER_UID, OTHER_UID))
			_exit(1);
		fd = open(STATS_DIR "segments", O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
			_exit(2);
		_exit(fd < 0 && errno == EACCES ? 0 : 3);
	}
	EXPECT_EQ(0, wait_child(c));

	r = cli_run(self->cli, OTHER_UID, NULL, ARGS("stats"));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(1, r->status) run_log(_metadata, r);
	EXPECT_EQ(NULL, strstr(r->out, "segments")) run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->err, "root only")) run_log(_metadata, r);
	/* one line, not one per counter */
	nl = strchr(r->err, '\n');
	EXPECT_TRUE(nl && !nl[1]) run_log(_metadata, r);
	run_free(r);
}

/* ---- list --------------------------------------------------------------- */

struct got {
	xpmem_apid_t apid;
	pid_t pid;
};

/*
 * The child of list_*: a permit (read-only) for @segid and two
 * attachments (page 0, pages 2-3); reports them on @out, then waits for
 * @in to close.  Returns the exit code.
 */
static int permit_child(xpmem_segid_t segid, int in, int out)
{
	struct xpmem_addr addr = { .offset = 0 };
	struct got g = { .pid = getpid() };
	char c;

	addr.apid = xpmem_get(segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid == -1)
		return 1;
	if (xpmem_attach(addr, PAGE, NULL) == (void *)-1)
		return 2;
	addr.offset = 2 * PAGE;
	if (xpmem_attach(addr, 2 * PAGE, NULL) == (void *)-1)
		return 3;
	g.apid = addr.apid;
	if (write(out, &g, sizeof(g)) != (ssize_t)sizeof(g))
		return 4;
	while (read(in, &c, 1) > 0)
		;
	return 0;
}

/* Fork permit_child(); its report in @g, the pipe that ends it in @stop. */
static pid_t start_permit_child(xpmem_segid_t segid, struct got *g, int *stop)
{
	int to[2], from[2];
	pid_t pid;

	if (pipe_pair(to, from))
		return -1;
	pid = fork_child();
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		_exit(permit_child(segid, to[0], from[1]));
	}
	close(to[0]);
	close(from[1]);
	if (pid > 0 && read(from[0], g, sizeof(*g)) != (ssize_t)sizeof(*g)) {
		close(to[1]);
		to[1] = -1;	/* the child failed: its exit code tells */
	}
	close(from[0]);
	*stop = to[1];
	return pid;
}

TEST_F(cli, list_objects)
{
	const struct jval *kernel, *seg, *permit, *att;
	xpmem_segid_t segid;
	struct jval *doc;
	char idstr[32];
	struct run *r;
	struct got g;
	int stop;
	pid_t pid;
	char *buf;

	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, 4 * PAGE);
	segid = xpmem_make(buf, 4 * PAGE, XPMEM_PERMIT_MODE, (void *)0640);
	ASSERT_GT(segid, 0);
	pid = start_permit_child(segid, &g, &stop);
	ASSERT_GT(pid, 0);
	ASSERT_GE(stop, 0) TH_LOG("child exit %d", wait_child(pid));

	r = CLI("list", "--json");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	kernel = jget(doc, "kernel");
	ASSERT_NE(NULL, kernel) run_log(_metadata, r);
	EXPECT_EQ(0, jnum(jget(kernel, "hidden")));
	EXPECT_NE(NULL, jpath(doc, "shm", "segments", NULL));

	seg = jfind(jget(kernel, "segments"), "segid", segid, "tgid", getpid());
	ASSERT_NE(NULL, seg) run_log(_metadata, r);
	EXPECT_EQ((long long)(uintptr_t)buf, jhex(jget(seg, "vaddr")));
	EXPECT_EQ(4 * PAGE, jnum(jget(seg, "size")));
	EXPECT_STREQ("0640", jstr(jget(seg, "mode")));
	EXPECT_EQ(2, jnum(jget(seg, "attachments")));

	permit = jfind(jget(kernel, "permits"), "apid", g.apid, "tgid", g.pid);
	ASSERT_NE(NULL, permit) run_log(_metadata, r);
	EXPECT_EQ(segid, jhex(jget(permit, "segid")));
	EXPECT_EQ(getpid(), jnum(jget(permit, "owner")));
	EXPECT_STREQ("rdonly", jstr(jget(permit, "access")));
	EXPECT_EQ(2, jnum(jget(permit, "attachments")));

	EXPECT_EQ(2, jcount(jget(kernel, "attachments"), "apid", g.apid));
	att = jfind(jget(kernel, "attachments"), "apid", g.apid, "offset", 0);
	ASSERT_NE(NULL, att) run_log(_metadata, r);
	EXPECT_EQ(g.pid, jnum(jget(att, "tgid")));
	EXPECT_EQ(segid, jhex(jget(att, "segid")));
	EXPECT_EQ(PAGE, jnum(jget(att, "size")));
	EXPECT_STREQ("rdonly", jstr(jget(att, "access")));
	att = jfind(jget(kernel, "attachments"), "apid", g.apid, "offset",
		    2 * PAGE);
	ASSERT_NE(NULL, att) run_log(_metadata, r);
	EXPECT_EQ(g.pid, jnum(jget(att, "tgid")));
	EXPECT_EQ(segid, jhex(jget(att, "segid")));
	EXPECT_EQ(2 * PAGE, jnum(jget(att, "size")));
	jfree(doc);
	run_free(r);

	/* the table names the segment too */
	ASSERT_LT(snprintf(idstr, sizeof(idstr), "0x%llx",
			   (unsigned long long)segid), (int)sizeof(idstr));
	r = CLI("list");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->out, idstr)) run_log(_metadata, r);
	run_free(r);

	/* removed: the segment is gone, the child's permit has no owner */
	ASSERT_EQ(0, xpmem_remove(segid));
	r = CLI("list", "--json");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(0, jcount(jpath(doc, "kernel", "segments", NULL), "segid",
			    segid));
	permit = jfind(jpath(doc, "kernel", "permits", NULL), "apid", g.apid,
		       "tgid", g.pid);
	ASSERT_NE(NULL, permit) run_log(_metadata, r);
	EXPECT_EQ(0, jnum(jget(permit, "owner")));
	jfree(doc);
	run_free(r);

	close(stop);
	ASSERT_EQ(0, wait_child(pid));
	munmap(buf, 4 * PAGE);
}

/* Another user sees none of root's objects; they are counted as hidden. */
TEST_F(cli, list_hidden_from_other_user)
{
	const struct jval *kernel, *arr;
	xpmem_segid_t segid;
	struct jval *doc;
	const char *kinds[] = { "segments", "permits", "attachments" };
	struct run *r;
	struct got g;
	int stop;
	size_t i;
	pid_t pid;
	char *buf;

	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	segid = xpmem_make(buf, 4 * PAGE, XPMEM_PERMIT_MODE, (void *)0666);
	ASSERT_GT(segid, 0);
	pid = start_permit_child(segid, &g, &stop);
	ASSERT_GT(pid, 0);
	ASSERT_GE(stop, 0) TH_LOG("child exit %d", wait_child(pid));

	r = cli_run(self->cli, OTHER_UID, NULL, ARGS("list", "--json"));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	kernel = jget(doc, "kernel");
	ASSERT_NE(NULL, kernel) run_log(_metadata, r);
	/* this process's file and the child's at least */
	EXPECT_GE(jnum(jget(kernel, "hidden")), 2) run_log(_metadata, r);
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		arr = jget(kernel, kinds[i]);
		ASSERT_NE(NULL, arr);
		EXPECT_EQ(0, jcount(arr, "tgid", getpid())) run_log(_metadata, r);
		EXPECT_EQ(0, jcount(arr, "tgid", g.pid)) run_log(_metadata, r);
		EXPECT_EQ(0, jcount(arr, "segid", segid)) run_log(_metadata, r);
	}
	jfree(doc);
	run_free(r);

	/* root sees them all */
	r = CLI("list", "--json");
	ASSERT_NE(NULL, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(0, jnum(jpath(doc, "kernel", "hidden", NULL)));
	EXPECT_EQ(1, jcount(jpath(doc, "kernel", "segments", NULL), "segid",
			    segid)) run_log(_metadata, r);
	jfree(doc);
	run_free(r);

	close(stop);
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xpmem_remove(segid));
	munmap(buf, 4 * PAGE);
}

/*
 * An owner on the shm backend is listed, once, under its own pid, although
 * a peer (started first, so normally with a lower pid) holds its registry
 * too.
 */
TEST_F(cli, list_shm_registry)
{
	int owner_in, owner_out, peer_in, peer_out, backend = 0;
	long long segid = 0;
	pid_t owner, peer;
	const struct jval *seg;
	struct jval *doc;
	struct run *r;
	char line[64];

	peer = spawn_role("peer", &peer_in, &peer_out);
	ASSERT_GT(peer, 0);
	owner = spawn_role("owner", &owner_in, &owner_out);
	ASSERT_GT(owner, 0);
	ASSERT_GT(read_line(owner_out, line, sizeof(line)), 0)
		TH_LOG("owner exit %d", wait_child(owner));
	ASSERT_EQ(2, sscanf(line, "%lld %d", &segid, &backend));
	ASSERT_EQ(XPMEM_EXT_BACKEND_SHM, backend);
	ASSERT_EQ(0, send_msg(peer_in, line, strlen(line)));
	ASSERT_GT(read_line(peer_out, line, sizeof(line)), 0)
		TH_LOG("peer exit %d", wait_child(peer));
	ASSERT_STREQ("ok\n", line);

	r = CLI("list", "--json");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(1, jcount(jpath(doc, "shm", "segments", NULL), "segid",
			    segid)) run_log(_metadata, r);
	seg = jfind(jpath(doc, "shm", "segments", NULL), "segid", segid,
		    "pid", owner);
	ASSERT_NE(NULL, seg) {
		TH_LOG("owner %d, peer %d", owner, peer);
		run_log(_metadata, r);
	}
	EXPECT_EQ(3 * PAGE, jnum(jget(seg, "size")));
	EXPECT_STREQ("0640", jstr(jget(seg, "mode")));
	EXPECT_EQ(0, jnum(jget(seg, "uid")));
	ASSERT_NE(NULL, jget(seg, "attachments"));
	EXPECT_EQ(J_NULL, jget(seg, "attachments")->type);
	/* not a kernel object */
	EXPECT_EQ(0, jcount(jpath(doc, "kernel", "segments", NULL), "segid",
			    segid));
	jfree(doc);
	run_free(r);

	/* the table names it */
	r = CLI("list");
	ASSERT_NE(NULL, r);
	ASSERT_LT(snprintf(line, sizeof(line), "0x%llx", segid),
		  (int)sizeof(line));
	EXPECT_NE(NULL, strstr(r->out, line)) run_log(_metadata, r);
	run_free(r);

	/* another user cannot open root's registry */
	r = cli_run(self->cli, OTHER_UID, NULL, ARGS("list", "--json"));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status) run_log(_metadata, r);
	doc = jparse(r->out);
	ASSERT_NE(NULL, doc) run_log(_metadata, r);
	EXPECT_EQ(0, jcount(jpath(doc, "shm", "segments", NULL), "segid",
			    segid)) run_log(_metadata, r);
	jfree(doc);
	run_free(r);

	close(peer_in);
	close(peer_out);
	ASSERT_EQ(0, wait_child(peer));
	close(owner_in);
	close(owner_out);
	ASSERT_EQ(0, wait_child(owner));
}

/* ---- usage -------------------------------------------------------------- */

TEST_F(cli, bad_usage)
{
	static const char *const cases[][3] = {
		{ "bogus", NULL, "bogus" },
		{ "--bogus", NULL, "--bogus" },
		{ "list", "--bogus", "--bogus" },
		{ "stats", "extra", "extra" },
		{ "status", "--version", "--version" },
		{ "-j", "status", "-j" },
	};
	struct run *r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		r = cli_run(self->cli, (uid_t)-1, NULL,
			    cases[i][1] ? ARGS(cases[i][0], cases[i][1]) :
					  ARGS(cases[i][0]));
		ASSERT_NE(NULL, r);
		EXPECT_EQ(2, r->status) run_log(_metadata, r);
		EXPECT_NE(NULL, strstr(r->err, cases[i][2])) run_log(_metadata, r);
		EXPECT_NE(NULL, strstr(r->err, "--help")) run_log(_metadata, r);
		EXPECT_STREQ("", r->out);
		run_free(r);
	}
	r = cli_run(self->cli, (uid_t)-1, NULL, ARGS(NULL));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(2, r->status) run_log(_metadata, r);
	EXPECT_NE(NULL, strstr(r->err, "usage")) run_log(_metadata, r);
	run_free(r);
}

TEST_F(cli, help_and_version)
{
	static const char *const helps[][2] = {
		{ "--help", NULL }, { "-h", NULL }, { "status", "--help" },
		{ "stats", "-h" }, { "list", "--help" }, { "--json", "-h" },
	};
	struct run *r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(helps); i++) {
		r = cli_run(self->cli, (uid_t)-1, NULL,
			    helps[i][1] ? ARGS(helps[i][0], helps[i][1]) :
					  ARGS(helps[i][0]));
		ASSERT_NE(NULL, r);
		EXPECT_EQ(0, r->status) run_log(_metadata, r);
		EXPECT_NE(NULL, strstr(r->out, "usage: xpmem"))
			run_log(_metadata, r);
		EXPECT_STREQ("", r->err);
		run_free(r);
	}
	r = CLI("list", "--help");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r->out, "/proc/xpmem")) run_log(_metadata, r);
	run_free(r);
	r = CLI("--version");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->status);
	EXPECT_EQ(0, strncmp(r->out, "xpmem ", 6)) run_log(_metadata, r);
	EXPECT_NE(NULL, strchr(r->out, '\n'));
	run_free(r);
}

TEST_HARNESS_MAIN
