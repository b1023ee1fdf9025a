/* SPDX-License-Identifier: MIT */
/*
 * Processes that recorded nothing, passed on to one that writes a trace (quiet.h).
 *
 * The medium: an abstract unix datagram socket per listening process, named by the uid, a key
 * of the run (its output pattern and manifest: two runs on one machine do not meet) and the pid,
 * so that a child finds its parent's from getppid() alone, with no descriptor or variable handed
 * down (a posix_spawn or vfork child runs none of tally's code before its exec).  A report is one
 * datagram, "tally-quiet1 " then "COUNT*NAME;" entries; the same entries after "PID:" make
 * TALLY_QUIET_FROM.  Names are the processes' comm (15 bytes), with any byte outside
 * [A-Za-z0-9._+-] made '_'; QUIET_NAMES names are kept, the rest counted under "others".
 */
#include "quiet.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "keptfd.h"
#include "libc.h"
#include "payloads.h"
#define QUIET_NAMES 32
#define VAR	    "TALLY_QUIET_FROM"
#define MAGIC	    "tally-quiet1 "
#define MSG_MAX	    2048

struct entry {
	char name[16];
	uint64_t count;
};

static struct {
	pthread_mutex_t lock;
	int fd;
	ino_t ino; /* the socket's: a descriptor the program closed and reused is not read */
	pid_t pid;
	unsigned n;
	struct entry e[QUIET_NAMES];
	char self[16];
	char var[sizeof(VAR) + 24 + MSG_MAX];
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static void clean_name(const char *in, char out[16])
{
	size_t i;

	for (i = 0; i < 15 && in[i] && in[i] != '\n'; i++) {
		char c = in[i];
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' || c == '-';

		out[i] = keep ? c : '_';
	}
	out[i] = '\0';
	if (!i)
		snprintf(out, 16, "?");
}

static void add_locked(const char *name, uint64_t count)
{
	char clean[16];
	unsigned i;

	clean_name(name, clean);
	for (i = 0; i < q.n; i++)
		if (strcmp(q.e[i].name, clean) == 0)
			break;
	if (i == q.n) { /* a new name, or the last entry, "others", once the others are taken */
		i = q.n < QUIET_NAMES - 1 ? q.n : QUIET_NAMES - 1;
		if (i == q.n)
			q.n++;
		snprintf(q.e[i].name, sizeof(q.e[i].name), "%s",
			 i == QUIET_NAMES - 1 ? "others" : clean);
	}
	q.e[i].count += count;
}

/* "COUNT*NAME;" entries into q; false at the first that does not read. */
static bool parse_entries(const char *p, const char *end)
{
	while (p < end && *p) {
		char name[16];
		unsigned long long count;
		int used = 0;

		if (sscanf(p, "%llu*%15[A-Za-z0-9._+?-];%n", &count, name, &used) != 2 || !used ||
		    count > 1000000000ull)
			return false;
		add_locked(name, count);
		p += used;
	}
	return true;
}

static size_t put_entries(char *out, size_t len)
{
	size_t at = 0;
	unsigned i;
	int n;

	for (i = 0; i < q.n && at < len; i++) {
		n = snprintf(out + at, len - at, "%llu*%s;", (unsigned long long)q.e[i].count,
			     q.e[i].name);
		if (n < 0 || (size_t)n >= len - at)
			break;
		at += (size_t)n;
	}
	out[at < len ? at : len - 1] = '\0';
	return at;
}

static uint64_t key_of_run(void)
{
	const char *parts[] = {getenv("TALLY_OUTPUT"), getenv("TALLY_MANIFEST")};
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < 2; i++)
		for (const char *s = parts[i] ? parts[i] : ""; *s; s++)
			h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static socklen_t address(pid_t pid, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "tally-quiet/%u/%016llx/%d",
		     (unsigned)getuid(), (unsigned long long)key_of_run(), (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void read_self_name(void)
{
	char comm[32] = "";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? libc_read(fd, comm, sizeof(comm) - 1) : -1;

	if (fd >= 0)
		close(fd);
	comm[n > 0 ? n : 0] = '\0';
	clean_name(comm, q.self);
}

/* TALLY_QUIET_FROM=PID:entries, left by earlier images of this very pid. */
static void take_from_env(void)
{
	const char *v = getenv(VAR), *colon;
	char *end;
	long pid;

	if (!v || !(colon = strchr(v, ':')))
		return;
	pid = strtol(v, &end, 10);
	if (end != colon || pid != (long)getpid())
		return;
	(void)parse_entries(colon + 1, colon + 1 + strlen(colon + 1));
}

void quiet_listen(void)
{
	struct sockaddr_un a;
	struct stat st;
	socklen_t len;
	int fd;

	libc_pthread_mutex_lock(&q.lock);
	if (q.pid == getpid()) {
		pthread_mutex_unlock(&q.lock);
		return;
	}
	q.pid = getpid();
	read_self_name();
	take_from_env();
	len = address(q.pid, &a);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, len) < 0 || fstat(fd, &st) < 0)) {
		close(fd); /* taken (another run's pid in another namespace): nobody reports here */
		fd = -1;
	}
	/* out of the way of the numbers a program that closes every descriptor opens next */
	q.fd = tally_fd_high(fd);
	q.ino = fd >= 0 ? st.st_ino : 0;
	pthread_mutex_unlock(&q.lock);
}

int quiet_fd(void)
{
	return q.fd;
}

/* Our socket, still: the program may have closed the number and opened something else on it. */
static bool still_ours(void)
{
	struct stat st;

	return q.fd >= 0 && fstat(q.fd, &st) == 0 && st.st_ino == q.ino && S_ISSOCK(st.st_mode);
}

void quiet_drain(void)
{
	char msg[MSG_MAX + 1];
	ssize_t n;

	libc_pthread_mutex_lock(&q.lock);
	if (q.fd >= 0 && !still_ours())
		q.fd = -1; /* the program closed it (and may use the number): not ours to wait on */
	while (q.fd >= 0 && (n = libc_recv(q.fd, msg, MSG_MAX, MSG_DONTWAIT)) > 0) {
		msg[n] = '\0';
		if ((size_t)n > sizeof(MAGIC) - 1 && memcmp(msg, MAGIC, sizeof(MAGIC) - 1) == 0)
			(void)parse_entries(msg + sizeof(MAGIC) - 1, msg + n);
	}
	pthread_mutex_unlock(&q.lock);
}

bool quiet_payload(struct tally_buf *b, bool reset)
{
	uint64_t total = 0;
	unsigned i;

	libc_pthread_mutex_lock(&q.lock);
	for (i = 0; i < q.n; i++)
		total += q.e[i].count;
	if (total) {
		tally_processes_put(b, total);
		for (i = 0; i < q.n; i++)
			tally_process_put(b, q.e[i].count, q.e[i].name);
	}
	if (total && reset) {
		q.n = 0;
		memset(q.e, 0, sizeof(q.e));
	}
	pthread_mutex_unlock(&q.lock);
	return total != 0;
}

uint64_t quiet_total(void)
{
	uint64_t total = 0;
	unsigned i;

	libc_pthread_mutex_lock(&q.lock);
	for (i = 0; i < q.n; i++)
		total += q.e[i].count;
	pthread_mutex_unlock(&q.lock);
	return total;
}

const char *quiet_self_name(void)
{
	return q.self[0] ? q.self : "?";
}

bool quiet_pass_on(bool exec, bool self)
{
	char msg[MSG_MAX];
	struct sockaddr_un a;
	socklen_t len;
	size_t n;
	bool sent = true;
	int fd;

	quiet_drain();
	libc_pthread_mutex_lock(&q.lock);
	if (self)
		add_locked(quiet_self_name(), 1);
	else if (!q.n) {
		pthread_mutex_unlock(&q.lock);
		return true;
	}
	if (exec) {
		n = (size_t)snprintf(q.var, sizeof(q.var), "%s=%d:", VAR, (int)getpid());
		(void)put_entries(q.var + n, sizeof(q.var) - n);
	} else {
		memcpy(msg, MAGIC, sizeof(MAGIC) - 1);
		n = sizeof(MAGIC) - 1 +
		    put_entries(msg + sizeof(MAGIC) - 1, sizeof(msg) - sizeof(MAGIC));
		len = address(getppid(), &a);
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		sent = fd >= 0 &&
		       sendto(fd, msg, n, MSG_DONTWAIT, (struct sockaddr *)&a, len) == (ssize_t)n;
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&q.lock);
	return sent;
}

const char *quiet_exec_var(void)
{
	return q.var[0] && q.pid == getpid() ? q.var : NULL;
}

void quiet_exec_undo(void)
{
	unsigned i;

	libc_pthread_mutex_lock(&q.lock);
	for (i = 0; i < q.n; i++)
		if (strcmp(q.e[i].name, quiet_self_name()) == 0 && q.e[i].count) {
			q.e[i].count--;
			break;
		}
	q.var[0] = '\0';
	pthread_mutex_unlock(&q.lock);
}

void quiet_after_fork_child(void)
{
	/* the parent's socket: its copy here must not read the parent's reports (unless the
	 * program closed it and the number is its own now) */
	if (q.fd >= 0 && still_ours())
		close(q.fd);
	q.fd = -1;
	q.ino = 0;
	q.pid = 0;
	q.n = 0;
	q.var[0] = '\0';
	memset(q.e, 0, sizeof(q.e));
	pthread_mutex_init(&q.lock, NULL);
}
