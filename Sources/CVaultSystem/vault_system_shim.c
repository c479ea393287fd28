#define _GNU_SOURCE
#include "vault_system_shim.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int vault_ofd_lock(int fd, int type, int wait) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = type == 0 ? F_UNLCK : (type == 1 ? F_RDLCK : F_WRLCK);
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0; /* the whole file */
    lock.l_pid = 0; /* required for OFD locks */
    return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock);
}

int vault_set_dumpable(int value) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)value, 0UL, 0UL, 0UL);
}

int vault_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

int vault_syncfs(int fd) {
    return syncfs(fd);
}

int vault_o_noatime(void) {
    return O_NOATIME;
}
