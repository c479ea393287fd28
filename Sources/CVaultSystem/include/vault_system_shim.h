#ifndef VAULT_SYSTEM_SHIM_H
#define VAULT_SYSTEM_SHIM_H

/// Open-file-description lock on the whole file: F_OFD_SETLK(W) is a GNU extension that Swift's Glibc
/// module does not import, and fcntl is variadic. Returns 0 or -1 with errno set.
/// type: 0 = unlock, 1 = shared (read), 2 = exclusive (write). wait: non-zero blocks (F_OFD_SETLKW).
int vault_ofd_lock(int fd, int type, int wait);

/// prctl(PR_SET_DUMPABLE, value): 0 stops core dumps and ptrace attach by the same user.
int vault_set_dumpable(int value);

/// prctl(PR_GET_DUMPABLE).
int vault_get_dumpable(void);

/// O_NOATIME: a GNU flag that Swift's Glibc module does not import.
int vault_o_noatime(void);

/// syncfs(fd): a GNU extension that Swift's Glibc module does not import.
int vault_syncfs(int fd);

#endif
