#define _GNU_SOURCE
#include "vault_system_shim.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <linux/keyctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <termios.h>
#include <spawn.h>
#include <syslog.h>
#include <sys/wait.h>
#include <sys/vfs.h>
#include <sys/stat.h>

int vsys_ofd_lock(int fd, int type, int wait, long long offset) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = type == 0 ? F_UNLCK : (type == 1 ? F_RDLCK : F_WRLCK);
    lock.l_whence = SEEK_SET;
    lock.l_start = (off_t)offset;
    lock.l_len = 1;
    lock.l_pid = 0; /* required for OFD locks */
    return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock);
}

static int vsys_cached_process_id;
static pthread_once_t vsys_process_id_once = PTHREAD_ONCE_INIT;

static void vsys_refresh_process_id(void) {
    __atomic_store_n(&vsys_cached_process_id, (int)getpid(), __ATOMIC_RELAXED);
}

static void vsys_start_process_id(void) {
    vsys_refresh_process_id();
    (void)pthread_atfork(NULL, NULL, vsys_refresh_process_id);
}

int vsys_process_id(void) {
    (void)pthread_once(&vsys_process_id_once, vsys_start_process_id);
    return __atomic_load_n(&vsys_cached_process_id, __ATOMIC_RELAXED);
}

int vsys_name_this_thread(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }

int vsys_set_dumpable(int value) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)value, 0UL, 0UL, 0UL);
}

int vsys_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

char **vsys_environment(void) {
    return environ;
}

int vsys_syncfs(int fd) {
    return syncfs(fd);
}

long vsys_read_directory(int fd, void *buffer, unsigned long size) {
    return (long)getdents64(fd, buffer, size);
}

const char *vsys_directory_entry_name(const void *buffer, unsigned long length, unsigned long *offset) {
    if (*offset >= length) return NULL;
    const struct dirent64 *entry = (const struct dirent64 *)((const char *)buffer + *offset);
    if (entry->d_reclen == 0) return NULL;
    *offset += entry->d_reclen;
    return entry->d_name;
}

int vsys_o_path(void) { return O_PATH; }

int vsys_o_tmpfile(void) { return O_TMPFILE; }

int vsys_o_noatime(void) {
    return O_NOATIME;
}

int vsys_exchange_at(int directory, const char *first, const char *second) {
    return renameat2(directory, first, directory, second, RENAME_EXCHANGE);
}

int vsys_rename_noreplace_at(int directory, const char *source, const char *destination) {
    return renameat2(directory, source, directory, destination, RENAME_NOREPLACE);
}

/* Echo control. The saved settings live in statics because a signal handler can reach nothing else;
 * tcsetattr, sigaction and raise are async-signal-safe. */
static struct termios vsys_saved_termios;
static int vsys_saved_fd = -1;
static volatile sig_atomic_t vsys_echo_is_off = 0;
static const int vsys_echo_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define VAULT_ECHO_SIGNAL_COUNT ((int)(sizeof vsys_echo_signals / sizeof vsys_echo_signals[0]))
static struct sigaction vsys_previous_actions[VAULT_ECHO_SIGNAL_COUNT];
static sigset_t vsys_previous_mask;

static void vsys_restore_signal_actions(void) {
    for (int i = 0; i < VAULT_ECHO_SIGNAL_COUNT; i++) {
        sigaction(vsys_echo_signals[i], &vsys_previous_actions[i], NULL);
    }
    pthread_sigmask(SIG_SETMASK, &vsys_previous_mask, NULL);
}

static void vsys_echo_signal_handler(int signal_number) {
    int saved_errno = errno;
    if (vsys_echo_is_off) {
        tcsetattr(vsys_saved_fd, TCSANOW, &vsys_saved_termios);
        vsys_echo_is_off = 0;
    }
    vsys_restore_signal_actions();
    /* Delivered again once this handler returns (the signal is blocked while it runs), now with the
     * previous action: the default one kills the process with the right status. */
    raise(signal_number);
    errno = saved_errno;
}

int vsys_echo_off(int fd) {
    struct termios settings;
    if (vsys_echo_is_off) {
        errno = EBUSY;
        return -1;
    }
    if (tcgetattr(fd, &settings) != 0) return -1;
    vsys_saved_termios = settings;
    vsys_saved_fd = fd;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = vsys_echo_signal_handler;
    sigemptyset(&action.sa_mask);
    /* A prompt must be interruptible even when the parent left these signals blocked (a child
     * spawned from a libdispatch worker thread inherits its mask): they are unblocked on this thread
     * until the restore. */
    sigset_t unblock;
    sigemptyset(&unblock);
    for (int i = 0; i < VAULT_ECHO_SIGNAL_COUNT; i++) {
        sigaction(vsys_echo_signals[i], NULL, &vsys_previous_actions[i]);
        /* A signal the process ignores (as a background job of a shell ignores SIGINT) stays
         * ignored: catching it would make it stop an entry that nothing else would stop. */
        if (vsys_previous_actions[i].sa_handler == SIG_IGN) continue;
        sigaction(vsys_echo_signals[i], &action, NULL);
        sigaddset(&unblock, vsys_echo_signals[i]);
    }
    pthread_sigmask(SIG_UNBLOCK, &unblock, &vsys_previous_mask);
    vsys_echo_is_off = 1;

    settings.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
    int result;
    do {
        result = tcsetattr(fd, TCSAFLUSH, &settings);
    } while (result != 0 && errno == EINTR);
    if (result != 0) {
        int saved_errno = errno;
        vsys_echo_is_off = 0;
        vsys_restore_signal_actions();
        errno = saved_errno;
        return -1;
    }
    return 0;
}

int vsys_echo_restore(void) {
    if (!vsys_echo_is_off) return 0;
    int result;
    do {
        result = tcsetattr(vsys_saved_fd, TCSAFLUSH, &vsys_saved_termios);
    } while (result != 0 && errno == EINTR);
    int saved_errno = errno;
    vsys_echo_is_off = 0;
    vsys_restore_signal_actions();
    errno = saved_errno;
    return result;
}

int vsys_echo_enabled(int fd) {
    struct termios settings;
    if (tcgetattr(fd, &settings) != 0) return -1;
    return (settings.c_lflag & ECHO) != 0;
}

int vsys_open_pseudo_terminal(int *primary, int *secondary) {
    int p = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p < 0) return -1;
    char name[128];
    if (grantpt(p) != 0 || unlockpt(p) != 0 || ptsname_r(p, name, sizeof name) != 0) {
        int saved_errno = errno;
        close(p);
        errno = saved_errno;
        return -1;
    }
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        int saved_errno = errno;
        close(p);
        errno = saved_errno;
        return -1;
    }
    *primary = p;
    *secondary = s;
    return 0;
}

/* The kernel keyring through raw system calls (no libkeyutils needed). The permission bits are the
 * kernel's key_perm_t values (keyctl_setperm(3), include/linux/key.h); the UAPI header lacks them. */
#define VSYS_KEY_POS_ALL 0x3f000000u
#define VSYS_KEY_USR_VIEW 0x00010000u
#define VSYS_KEY_USR_READ 0x00020000u
#define VSYS_KEY_USR_SEARCH 0x00080000u

static long vsys_keyring_search(const char *description) {
    return syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", description, 0);
}

long vsys_keyring_add(const char *description, const void *payload, unsigned long length,
                      unsigned int timeout_seconds) {
    long id = syscall(SYS_add_key, "user", description, payload, (size_t)length, KEY_SPEC_USER_KEYRING);
    if (id < 0) return -1;
    /* Possessor: everything; the same user (other processes): view, read, search. */
    unsigned int permissions = VSYS_KEY_POS_ALL | VSYS_KEY_USR_VIEW | VSYS_KEY_USR_READ | VSYS_KEY_USR_SEARCH;
    if (syscall(SYS_keyctl, KEYCTL_SETPERM, id, permissions) < 0) {
        int saved = errno;
        syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
        errno = saved;
        return -1;
    }
    if (syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, id, timeout_seconds) < 0) {
        int saved = errno;
        syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
        errno = saved;
        return -1;
    }
    return id;
}

long vsys_keyring_read(const char *description, void *buffer, unsigned long length) {
    long id = vsys_keyring_search(description);
    if (id < 0) return -1;
    return syscall(SYS_keyctl, KEYCTL_READ, id, buffer, (size_t)length);
}

int vsys_keyring_remove(const char *description) {
    long id = vsys_keyring_search(description);
    if (id < 0) return -1;
    return (int)syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
}

long vsys_keyring_list(int *ids, unsigned long capacity) {
    /* KEYCTL_READ of a keyring gives its links as key_serial_t (int32) values, and the size in bytes
     * of the whole list. */
    long bytes = syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, ids, (size_t)capacity * sizeof(int));
    if (bytes < 0) return -1;
    return bytes / (long)sizeof(int);
}

long vsys_keyring_describe(int id, char *buffer, unsigned long length) {
    return syscall(SYS_keyctl, KEYCTL_DESCRIBE, id, buffer, (size_t)length);
}

int vsys_keyring_invalidate(int id) {
    return (int)syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
}

int vsys_sanitize_standard_descriptors(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        /* The lowest free number is `fd`, since every lower one is open. */
        int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened == -1) return -1;
        if (opened != fd) {
            close(opened);
            errno = EBADF;
            return -1;
        }
    }
    return 0;
}

int vsys_duplicate_above(int fd, int minimum) {
    return fcntl(fd, F_DUPFD_CLOEXEC, minimum);
}

/* The soft limit before vsys_disable_core_files, which vsys_run_forwarding_signals gives a program it starts. */
static struct rlimit core_limit_before;
static int core_limit_saved;

int vsys_disable_core_files(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_CORE, &limit) != 0) return -1;
    if (!core_limit_saved) {
        core_limit_before = limit;
        core_limit_saved = 1;
    }
    limit.rlim_cur = 0;
    return setrlimit(RLIMIT_CORE, &limit);
}

long long vsys_core_file_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_CORE, &limit) != 0) return -1;
    return (long long)limit.rlim_cur;
}

int vsys_become_user(unsigned int uid, unsigned int gid, const unsigned int *groups, int count) {
    gid_t list[256];
    if (count < 0 || count > 256) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < count; i++) list[i] = (gid_t)groups[i];
    if (setgroups((size_t)count, list) != 0) return -1;
    if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0) return -1;
    if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) return -1;
    /* Confirm it took, for good: every id is the user's, and root cannot be had back (a kept capability
     * or SECBIT_NO_SETUID_FIXUP would allow it). */
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0) return -1;
    if (ruid != uid || euid != uid || suid != uid || rgid != gid || egid != gid || sgid != gid) {
        errno = EPERM;
        return -1;
    }
    if (uid != 0 && setuid(0) == 0) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

int vsys_spawn_close_from(void *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, from);
}

void vsys_syslog_notice(const char *message) {
    /* No openlog: a process that embeds the vault keeps its own ident and connection. */
    syslog(LOG_USER | LOG_NOTICE, "%s", message);
}

/* Moves `fd` to a number of at least `minimum` (the old number stays open). */
static int move_above(int fd, int minimum) { return fcntl(fd, F_DUPFD, minimum); }

int vsys_spawn_directory_remover(int parent, const char *name, int *release) {
    char kept[256];
    size_t length = strlen(name);
    if (length == 0 || length >= sizeof kept || strchr(name, '/') != NULL) {
        errno = EINVAL;
        return -1;
    }
    memcpy(kept, name, length + 1);
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(ends[0]);
        close(ends[1]);
        errno = saved;
        return -1;
    }
    if (pid == 0) {
        /* Only system calls from here on: another thread may have held malloc's lock at the fork. */
        setsid();
        prctl(PR_SET_NAME, "vault-cleanup", 0, 0, 0);
        struct sigaction ignore;
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTSTP,
                               SIGTTIN, SIGTTOU, SIGWINCH};
        for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &ignore, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The write end first: a remover holding it would never see the end of file it waits for. */
        close(ends[1]);
        int wait_end = move_above(ends[0], 5);
        int directory = move_above(parent, 5);
        if (wait_end < 0 || directory < 0) _exit(1);
        dup2(wait_end, 3);
        dup2(directory, 4);
        if (syscall(SYS_close_range, 5U, ~0U, 0U) != 0) {
            /* Kernels before 5.9 have no close_range. */
            struct rlimit open_files;
            int highest = 65536;
            if (getrlimit(RLIMIT_NOFILE, &open_files) == 0 && open_files.rlim_cur < (rlim_t)highest)
                highest = (int)open_files.rlim_cur;
            for (int fd = 5; fd < highest; fd++) close(fd);
        }
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (null > 4) close(null);
        }
        char byte;
        for (;;) {
            ssize_t got = read(3, &byte, 1);
            if (got == 0) break;
            if (got < 0 && errno != EINTR) break;
        }
        int files = openat(4, kept, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (files >= 0) {
            fchmod(files, 0700);
            long buffer[512];
            for (;;) {
                long filled = syscall(SYS_getdents64, files, buffer, sizeof buffer);
                if (filled <= 0) break;
                int removed = 0;
                for (long offset = 0; offset < filled;) {
                    struct dirent64 *entry = (struct dirent64 *)((char *)buffer + offset);
                    offset += entry->d_reclen;
                    const char *entry_name = entry->d_name;
                    if (entry_name[0] == '.' && (entry_name[1] == 0 || (entry_name[1] == '.' && entry_name[2] == 0)))
                        continue;
                    if (unlinkat(files, entry_name, 0) == 0) removed = 1;
                }
                if (removed) lseek(files, 0, SEEK_SET);
            }
            close(files);
        }
        unlinkat(4, kept, AT_REMOVEDIR);
        _exit(0);
    }
    close(ends[0]);
    *release = ends[1];
    return pid;
}

/* The child that vsys_run_forwarding_signals waits for (0 when none): its signal handler's target. */
static volatile sig_atomic_t forwarding_target;
/* Whether this process leads its session: the kernel then sends a terminal's hangup to it alone. */
static volatile sig_atomic_t leads_session;

static const int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

static void forward_signal(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    /* The terminal sends its signals to the whole foreground process group, the child included; but a
       hangup goes to the session leader alone when that is this process (ssh -t, a tmux window). */
    if (info != NULL && info->si_code == SI_KERNEL && !(signal_number == SIGHUP && leads_session)) return;
    int saved = errno;
    pid_t target = (pid_t)forwarding_target;
    if (target > 0) kill(target, signal_number);
    errno = saved;
}

int vsys_run_forwarding_signals(const char *path, char *const arguments[], char *const environment[],
                                int *wait_status) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    struct sigaction previous[FORWARDED_COUNT];
    struct sigaction forward;
    memset(&forward, 0, sizeof forward);
    forward.sa_sigaction = forward_signal;
    forward.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&forward.sa_mask);
    sigset_t blocked, before;
    leads_session = getsid(0) == getpid();
    /* An inherited SIGCHLD of SIG_IGN would make the kernel reap the child before waitpid sees it. */
    struct sigaction child_default, child_before;
    memset(&child_default, 0, sizeof child_default);
    child_default.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &child_default, &child_before);
    sigemptyset(&blocked);
    for (size_t i = 0; i < FORWARDED_COUNT; i++) sigaddset(&blocked, forwarded_signals[i]);
    /* Held back until the child's pid is known, so that none is lost to a target of 0. A signal this
       process ignores (a background job's SIGINT) stays ignored, and is not passed on. */
    pthread_sigmask(SIG_BLOCK, &blocked, &before);
    int handled[FORWARDED_COUNT];
    for (size_t i = 0; i < FORWARDED_COUNT; i++) {
        sigaction(forwarded_signals[i], NULL, &previous[i]);
        handled[i] = previous[i].sa_handler != SIG_IGN;
        if (handled[i]) sigaction(forwarded_signals[i], &forward, NULL);
    }
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        for (int signal_number = 1; signal_number < NSIG; signal_number++) {
            if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
            int kept_ignored = 0;
            for (size_t i = 0; i < FORWARDED_COUNT; i++) {
                if (forwarded_signals[i] == signal_number && !handled[i]) kept_ignored = 1;
            }
            if (!kept_ignored) sigaction(signal_number, &fallback, NULL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (core_limit_saved) setrlimit(RLIMIT_CORE, &core_limit_before);
        execve(path, arguments, environment);
        int failure = errno;
        ssize_t ignored = write(report[1], &failure, sizeof failure);
        (void)ignored;
        _exit(127);
    }
    int result = 0;
    if (pid < 0) {
        result = errno;
    } else {
        forwarding_target = pid;
    }
    close(report[1]);
    /* Unblocked while the child runs even if this process started with them blocked: they are what it
       must pass on. */
    sigset_t waiting = before;
    for (size_t i = 0; i < FORWARDED_COUNT; i++) sigdelset(&waiting, forwarded_signals[i]);
    pthread_sigmask(SIG_SETMASK, &waiting, NULL);
    /* The child has its own copy of the environment (which can hold secrets): this one goes. */
    for (char *const *entry = environment; *entry != NULL; entry++) explicit_bzero(*entry, strlen(*entry));
    if (pid > 0) {
        int failure = 0;
        ssize_t got;
        do {
            got = read(report[0], &failure, sizeof failure);
        } while (got < 0 && errno == EINTR);
        /* Waited for without reaping first, so that no signal is passed to a recycled pid: the target is
           cleared while the child's pid is still its own. */
        siginfo_t ended;
        while (waitid(P_PID, (id_t)pid, &ended, WEXITED | WNOWAIT) < 0) {
            if (errno != EINTR) {
                result = errno;
                break;
            }
        }
        pthread_sigmask(SIG_BLOCK, &blocked, NULL);
        forwarding_target = 0;
        int status = 0;
        while (waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) {
                if (result == 0) result = errno;
                break;
            }
        }
        if (got == (ssize_t)sizeof failure) result = failure;
        *wait_status = status;
    }
    close(report[0]);
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    forwarding_target = 0;
    for (size_t i = 0; i < FORWARDED_COUNT; i++) {
        if (handled[i]) sigaction(forwarded_signals[i], &previous[i], NULL);
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    sigaction(SIGCHLD, &child_before, NULL);
    return result;
}

long long vsys_file_system_type(int fd) {
    struct statfs status;
    if (fstatfs(fd, &status) != 0) return -1;
    return (long long)status.f_type;
}

int vsys_pipe_close_on_exec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

