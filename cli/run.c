/* mongomq work's command runner: one event's command, /bin/sh -c CMD, as a child
 * process in a process group of its own, the event on its stdin and MQ_GROUP, MQ_SEQ,
 * MQ_ATTEMPTS and its attributes (MQ_ATTR_<KEY>) in its environment; the lease is
 * extended while it runs. The worker that claims and settles is work.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

extern char **environ;

#define RUN_VARS (3 + MQ_ATTR_MAX)

/* The command's environment: ours without MQ_GROUP/MQ_SEQ/MQ_ATTEMPTS/MQ_ATTR_*, then
 * those of this event. An attribute's variable is MQ_ATTR_ and its key in upper case
 * with '-' and '.' as '_' (content-type: MQ_ATTR_CONTENT_TYPE); keys that map to one
 * name (a-b, a.b) leave the last one's value. */
static char **make_env(const mq_lease *lease, char **vars) {
    size_t n = 0;
    while (environ[n] != NULL) n++;
    char **env = malloc((n + RUN_VARS + 1) * sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "MQ_GROUP=", 9) == 0 || strncmp(e, "MQ_SEQ=", 7) == 0 || strncmp(e, "MQ_ATTEMPTS=", 12) == 0 ||
            strncmp(e, "MQ_ATTR_", 8) == 0)
            continue;
        env[k++] = environ[i];
    }
    const char *group = mq_lease_group(lease);
    vars[0] = malloc(strlen(group) + 10);
    vars[1] = malloc(32);
    vars[2] = malloc(32);
    if (vars[0] == NULL || vars[1] == NULL || vars[2] == NULL) {
        free(env);
        return NULL;
    }
    sprintf(vars[0], "MQ_GROUP=%s", group);
    sprintf(vars[1], "MQ_SEQ=%lld", (long long)mq_lease_seq(lease));
    sprintf(vars[2], "MQ_ATTEMPTS=%d", mq_lease_attempts(lease));
    const size_t base = k;
    env[k++] = vars[0];
    env[k++] = vars[1];
    env[k++] = vars[2];
    size_t nattrs = mq_lease_attr_count(lease, 0);
    for (size_t j = 0; j < nattrs && j < MQ_ATTR_MAX; j++) {
        const char *key, *value;
        mq_error err;
        if (mq_lease_attr_at(lease, 0, j, &key, &value, &err) != MQ_OK) continue;
        char *v = malloc(8 + strlen(key) + 1 + strlen(value) + 1);
        if (v == NULL) {
            free(env);
            return NULL;
        }
        char *p = v + sprintf(v, "MQ_ATTR_");
        for (const char *c = key; *c != '\0'; c++)
            *p++ = (*c == '-' || *c == '.') ? '_' : (*c >= 'a' && *c <= 'z') ? (char)(*c - 'a' + 'A') : *c;
        sprintf(p, "=%s", value);
        vars[3 + j] = v;
        /* a later key with the same name replaces the earlier one */
        size_t name_len = (size_t)(p - v);
        size_t at = k;
        for (size_t e = base; e < k; e++)
            if (strncmp(env[e], v, name_len + 1) == 0) at = e;
        env[at] = v;
        if (at == k) k++;
    }
    env[k] = NULL;
    return env;
}

/* Extends the lease while the command runs; reports trouble once. */
static void extend(const cli_run *run, const mq_lease *lease, int *lost) {
    if (*lost) return;
    mq_error err;
    mq_status st = mq_extend(run->ctx->queue, lease, run->visibility, &err);
    if (st == MQ_OK) return;
    if (st == MQ_LEASE_LOST) {
        *lost = 1;
        cli_error(run->ctx,
                  "seq %lld (group %s): lease lost while the command runs: another worker "
                  "may get the event too",
                  (long long)mq_lease_seq(lease), mq_lease_group(lease));
    } else {
        cli_error(run->ctx, "seq %lld: extending the lease: %s: %s (trying again)", (long long)mq_lease_seq(lease),
                  mq_status_name(st), err.message);
    }
}

int cli_run_command(const cli_run *run, const mq_lease *lease, int *wstatus) {
    size_t len;
    const char *event = mq_lease_event(lease, &len);
    char *vars[RUN_VARS] = {NULL};
    char **env = make_env(lease, vars);
    int pipefd[2] = {-1, -1};
    int rc = -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int fa_ok = 0, attr_ok = 0;
    pid_t pid = 0;

    if (env == NULL) {
        cli_error(run->ctx, "out of memory");
        goto out;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        cli_error(run->ctx, "pipe: %s", strerror(errno));
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) goto out;
    fa_ok = 1;
    if (posix_spawnattr_init(&attr) != 0) goto out;
    attr_ok = 1;
    posix_spawn_file_actions_adddup2(&fa, pipefd[0], STDIN_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* the pool's sockets stay ours */
#endif
    /* Its own process group: a Ctrl-C on the terminal reaches the worker, not the
     * commands (they finish; a second signal kills the group). */
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGHUP);
    sigaddset(&dfl, SIGQUIT);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    char *args[] = {"/bin/sh", "-c", (char *)run->cmd, NULL};
    int err = posix_spawn(&pid, "/bin/sh", &fa, &attr, args, env);
    close(pipefd[0]);
    pipefd[0] = -1;
    if (err != 0) {
        cli_error(run->ctx, "starting /bin/sh: %s", strerror(err));
        goto out;
    }
    atomic_store(run->pgid, (int)pid);
    if (atomic_load(run->signals) >= 2) kill(-pid, SIGKILL); /* the handler may have missed it */

    /* Feed the event and wait, extending the lease every visibility/3. */
    int wfd = pipefd[1];
    pipefd[1] = -1;
    if (len == 0) {
        close(wfd);
        wfd = -1;
    } else {
        fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);
    }
    int pidfd = -1;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    double period = run->visibility / 3;
    double next_extend = cli_now() + period;
    size_t off = 0;
    int lost = 0;
    for (;;) {
        pid_t r = waitpid(pid, wstatus, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            cli_error(run->ctx, "waitpid: %s", strerror(errno));
            *wstatus = 0x7f00; /* as if it exited 127 */
            break;
        }
        struct pollfd fds[2];
        nfds_t n = 0;
        int wslot = -1;
        if (pidfd >= 0) fds[n++] = (struct pollfd){pidfd, POLLIN, 0};
        if (wfd >= 0) {
            wslot = (int)n;
            fds[n++] = (struct pollfd){wfd, POLLOUT, 0};
        }
        double left = next_extend - cli_now();
        int timeout_ms = left <= 0 ? 0 : (int)ceil(left * 1000);
        if (pidfd < 0 && timeout_ms > 50) timeout_ms = 50; /* no pidfd: look again soon */
        if (poll(fds, n, timeout_ms) < 0 && errno != EINTR) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (wslot >= 0 && fds[wslot].revents != 0) {
            ssize_t k = write(wfd, event + off, len - off);
            if (k > 0) off += (size_t)k;
            if (off == len || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                close(wfd); /* done, or the command does not read its stdin (EPIPE) */
                wfd = -1;
            }
        }
        if (cli_now() >= next_extend) {
            extend(run, lease, &lost);
            next_extend = cli_now() + period;
        }
    }
    atomic_store(run->pgid, 0);
    if (wfd >= 0) close(wfd);
    if (pidfd >= 0) close(pidfd);
    rc = 0;
out:
    if (pipefd[0] >= 0) close(pipefd[0]);
    if (pipefd[1] >= 0) close(pipefd[1]);
    if (fa_ok) posix_spawn_file_actions_destroy(&fa);
    if (attr_ok) posix_spawnattr_destroy(&attr);
    free(env);
    for (int i = 0; i < RUN_VARS; i++) free(vars[i]);
    return rc;
}
