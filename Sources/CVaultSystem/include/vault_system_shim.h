#ifndef VAULT_SYSTEM_SHIM_H
#define VAULT_SYSTEM_SHIM_H

/* Internal to the package: hidden so that libvault.so exports only the C API of include/vault.h. */
#define VSYS_INTERNAL __attribute__((visibility("hidden")))

/// Open-file-description lock on one byte of the file, at `offset`: F_OFD_SETLK(W) is a GNU extension
/// that Swift's Glibc module does not import, and fcntl is variadic. Returns 0 or -1 with errno set.
/// type: 0 = unlock, 1 = shared (read), 2 = exclusive (write). wait: non-zero blocks (F_OFD_SETLKW).
VSYS_INTERNAL int vsys_ofd_lock(int fd, int type, int wait, long long offset);

/// getpid(), kept after the first call and refreshed in the child of every fork() (pthread_atfork):
/// the store asks on every write whether a fork made its lock descriptors the parent's, and glibc
/// makes getpid a system call each time.
VSYS_INTERNAL int vsys_process_id(void);

/// Names the calling thread (`PR_SET_NAME`: at most 15 bytes are kept), as ps and /proc show it.
VSYS_INTERNAL int vsys_name_this_thread(const char *name);

/// prctl(PR_SET_DUMPABLE, value): 0 stops core dumps and ptrace attach by the same user.
VSYS_INTERNAL int vsys_set_dumpable(int value);

/// prctl(PR_GET_DUMPABLE).
VSYS_INTERNAL int vsys_get_dumpable(void);

/// environ(7), which may be NULL (after clearenv): Swift imports the variable as never NULL.
VSYS_INTERNAL char **vsys_environment(void);

/* syslog(3) of one message as LOG_USER|LOG_NOTICE, under the process's own ident (syslog is variadic). */
VSYS_INTERNAL void vsys_syslog_notice(const char *message);

/// O_NOATIME: a GNU flag that Swift's Glibc module does not import.
VSYS_INTERNAL int vsys_o_noatime(void);

/// O_PATH, which glibc's headers show only with _GNU_SOURCE.
VSYS_INTERNAL int vsys_o_path(void);

/// O_TMPFILE (with O_DIRECTORY), which glibc's headers show only with _GNU_SOURCE.
VSYS_INTERNAL int vsys_o_tmpfile(void);

/// renameat2(RENAME_EXCHANGE) of two names in one directory: swaps them atomically (both must exist).
/// A GNU extension that Swift's Glibc module does not import. Returns 0 or -1 with errno set (EINVAL
/// or ENOTSUP on a file system that cannot exchange).
VSYS_INTERNAL int vsys_exchange_at(int directory, const char *first, const char *second);

/// renameat2(RENAME_NOREPLACE) within one directory: renames `source` to `destination` only if no
/// `destination` exists (EEXIST otherwise), atomically. Returns 0 or -1 with errno set (EINVAL or
/// ENOTSUP on a file system that cannot).
VSYS_INTERNAL int vsys_rename_noreplace_at(int directory, const char *source, const char *destination);

/// posix_spawn_file_actions_addclosefrom_np(actions, from): the child closes every descriptor from
/// `from` up (a GNU extension, glibc 2.34). `actions` is a posix_spawn_file_actions_t *.
VSYS_INTERNAL int vsys_spawn_close_from(void *actions, int from);

/// syncfs(fd): a GNU extension that Swift's Glibc module does not import.
VSYS_INTERNAL int vsys_syncfs(int fd);

/// getdents64(fd, buffer, size): the next entries of the open directory `fd` as `struct dirent64`
/// records, without the DIR stream (whose fdopendir adds an fstat, two fcntls and a seek to every
/// listing). Returns the bytes filled, 0 at the end, or -1 with errno set.
VSYS_INTERNAL long vsys_read_directory(int fd, void *buffer, unsigned long size);

/// The name of the record at `*offset` in the first `length` bytes that vsys_read_directory filled, and
/// `*offset` moved past it; NULL once every record was read.
VSYS_INTERNAL const char *vsys_directory_entry_name(const void *buffer, unsigned long length, unsigned long *offset);

/// Turns off echo on the terminal `fd` (discarding type-ahead, as getpass does) and remembers the
/// previous settings. Until vsys_echo_restore, SIGINT, SIGTERM, SIGHUP and SIGQUIT first restore the
/// settings and then take their previous action, so an interrupted prompt never leaves the terminal
/// silent (an ignored signal stays ignored). Only one terminal at a time. Returns 0 or -1 with errno set.
VSYS_INTERNAL int vsys_echo_off(int fd);

/// Restores the settings saved by vsys_echo_off and the previous signal actions. Returns 0 or -1.
VSYS_INTERNAL int vsys_echo_restore(void);

/// Whether the terminal `fd` echoes input: 1, 0, or -1 with errno set.
VSYS_INTERNAL int vsys_echo_enabled(int fd);

/// Opens a new pseudo-terminal pair (posix_openpt, grantpt, unlockpt, then the secondary side), both
/// O_NOCTTY and close-on-exec. Returns 0 or -1 with errno set.
VSYS_INTERNAL int vsys_open_pseudo_terminal(int *primary, int *secondary);

/// Adds (or replaces) a "user" key `description` with `payload` in the user keyring (@u), readable by
/// every process of the same user, expiring after `timeout_seconds` (0: no timeout). Returns the key id
/// or -1 with errno set.
VSYS_INTERNAL long vsys_keyring_add(const char *description, const void *payload, unsigned long length,
                                    unsigned int timeout_seconds);

/// Reads the "user" key `description` of the user keyring into `buffer`. Returns the key's length
/// (which may exceed `length`: then call again with a larger buffer) or -1 with errno set (ENOKEY,
/// EKEYEXPIRED, EKEYREVOKED when there is none).
VSYS_INTERNAL long vsys_keyring_read(const char *description, void *buffer, unsigned long length);

/// Invalidates the "user" key `description` of the user keyring. Returns 0 or -1 with errno set.
VSYS_INTERNAL int vsys_keyring_remove(const char *description);

/// Lists the keys linked into the user keyring (@u): fills `ids` with up to `capacity` key serials and
/// returns how many the keyring holds (more than `capacity` means the list did not fit: call again
/// with a larger buffer), or -1 with errno set.
VSYS_INTERNAL long vsys_keyring_list(int *ids, unsigned long capacity);

/// Describes key `id` as "type;uid;gid;perm;description", NUL-terminated, into `buffer`. Returns the
/// length with the NUL (which may exceed `length`: then call again) or -1 with errno set.
VSYS_INTERNAL long vsys_keyring_describe(int id, char *buffer, unsigned long length);

/// Invalidates key `id`. Returns 0 or -1 with errno set.
VSYS_INTERNAL int vsys_keyring_invalidate(int id);

/// Opens /dev/null on each of the descriptors 0, 1 and 2 that is closed, so that no file opened later
/// takes a standard stream's number (OpenSSH's sanitise_stdfd). Returns 0, or -1 with errno set when
/// /dev/null cannot be opened.
VSYS_INTERNAL int vsys_sanitize_standard_descriptors(void);

/// fcntl(fd, F_DUPFD_CLOEXEC, minimum): a copy of `fd` numbered `minimum` or above. -1 with errno set.
VSYS_INTERNAL int vsys_duplicate_above(int fd, int minimum);

/// setrlimit(RLIMIT_CORE, 0): no core file, whatever fs.suid_dumpable says. Returns 0 or -1.
VSYS_INTERNAL int vsys_disable_core_files(void);

/// The soft RLIMIT_CORE limit, or -1 with errno set (RLIM_INFINITY as UINT64_MAX).
VSYS_INTERNAL long long vsys_core_file_limit(void);

/// Takes the identity of another user for good: supplementary groups (setgroups), then the real,
/// effective and saved group ids, then the user ids (setresgid, setresuid), in that order (groups
/// can no longer be changed once the user id is not root). Returns 0, or -1 with errno set.
VSYS_INTERNAL int vsys_become_user(unsigned int uid, unsigned int gid, const unsigned int *groups, int count);

/// Forks a process that removes the directory `name` in the directory `parent` (every entry, then the
/// directory itself) once the pipe whose write end it returns in `*release` (close-on-exec) is closed:
/// when this process closes it, or ends however it ends, SIGKILL included. The remover starts a session
/// of its own (a signal to this process's group does not reach it), ignores the terminal's and the
/// usual termination signals, and keeps none of this process's descriptors but those two. Returns its
/// pid, or -1 with errno set.
VSYS_INTERNAL int vsys_spawn_directory_remover(int parent, const char *name, int *release);

/// Starts `path` (execve: `arguments` and `environment` NULL-terminated) and waits for it, passing on
/// to it SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH and SIGALRM sent to this process
/// (not those the terminal sent to its foreground process group, which the child got too, nor those this
/// process ignores, which stay ignored in the child). The child starts with every other signal at its
/// default action, none blocked, and the core file limit this process
/// had before vsys_disable_core_files. SIGCHLD is at its default action while it waits (an inherited
/// SIG_IGN would reap the child unseen). The strings of `environment` are zeroed once the child has its own
/// copy. Returns 0 with the wait status in `*wait_status`, or the errno
/// of the failure (execve's, when the program could not be started).
VSYS_INTERNAL int vsys_run_forwarding_signals(const char *path, char *const arguments[], char *const environment[],
                                              int *wait_status);

/// The file system type of `fd` (fstatfs's f_type, e.g. TMPFS_MAGIC), or -1 with errno set: Swift's Glibc
/// module does not import <sys/vfs.h>.
VSYS_INTERNAL long long vsys_file_system_type(int fd);

/// pipe2(ends, O_CLOEXEC): both ends close-on-exec from the start, so that no other thread's child
/// inherits one (Swift's Glibc module does not import pipe2).
VSYS_INTERNAL int vsys_pipe_close_on_exec(int ends[2]);

#endif
