/*
 * The floor of vault-bench's parallel-writer rows (docs/PERFORMANCE.md, "Groups, members and
 * parallel writers"): the system calls of a vault put, in C, with no vault code, for one writer
 * process doing every put and for 8 writer processes in their own directories or in one, with the
 * write lock held through both flushes (as a put was before group commit) or only around the
 * exchange (group commit: the data written and flushed before the lock, one directory fsync shared
 * after it).
 *
 *   cc -O2 -o /tmp/parallel-writers-floor scripts/parallel-writers-floor.c
 *   cd <a directory on the file system to measure> && /tmp/parallel-writers-floor [ROUNDS]
 *
 * Each round runs the four cases one after the other (2,000 puts each) in a fresh ./d, which it removes
 * afterwards, and prints the time per put and the ratios that vault-bench prints: 8 writers in own
 * directories and in one directory (locked, and with group commit), each against the one writer.
 * A put: read the item (open, read, close); write the spare in place and fdatasync it; exchange it with
 * the item (renameat2 RENAME_EXCHANGE); the generation record (symlink, rename); fsync the directory;
 * zero the spare; the lock's mark before and after (pread/pwrite of byte 0 of .lock).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x) do { if ((x) < 0) { perror(#x); exit(1); } } while (0)
enum { ITEMS = 10, ITEM_BYTES = 227, TOTAL = 2000, WRITERS = 8 };
enum mode { LOCKED, OWN_DIRECTORIES, GROUP_COMMIT };

static int dfd, lockfd;
static char contents[ITEM_BYTES];

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void lock_byte(int type, off_t byte) {
    struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    CHECK(fcntl(lockfd, F_OFD_SETLKW, &f));
}

static uint64_t counter(off_t offset) {
    uint64_t value = 0;
    CHECK(pread(lockfd, &value, sizeof value, offset));
    return value;
}

static void set_counter(off_t offset, uint64_t value) { CHECK(pwrite(lockfd, &value, sizeof value, offset)); }

static void read_item(const char *name) {
    char buffer[512];
    int fd;
    CHECK(fd = openat(dfd, name, O_RDONLY));
    CHECK(read(fd, buffer, sizeof buffer));
    CHECK(close(fd));
}

static void write_spare(const char *spare) {
    int fd;
    CHECK(fd = openat(dfd, spare, O_WRONLY | O_CREAT, 0600));
    contents[0]++;
    CHECK(pwrite(fd, contents, sizeof contents, 0));
    CHECK(fdatasync(fd));
    CHECK(close(fd));
}

static void zero_spare(const char *spare) {
    char zeros[ITEM_BYTES] = {0};
    int fd;
    CHECK(fd = openat(dfd, spare, O_WRONLY));
    CHECK(pwrite(fd, zeros, sizeof zeros, 0));
    CHECK(close(fd));
}

static void record(int writer, int put) {
    char text[80], name[64], temporary[64];
    snprintf(text, sizeof text, "1:%016x:0123456789abcdef0123456789abcdef", put);
    snprintf(name, sizeof name, ".gen.w%d-%d", writer, put % ITEMS);
    snprintf(temporary, sizeof temporary, ".tmp.w%d", writer);
    CHECK(symlinkat(text, dfd, temporary));
    CHECK(renameat(dfd, temporary, dfd, name));
}

static void mark(const char *value) {
    char byte;
    CHECK(pread(lockfd, &byte, 1, 0));
    CHECK(pwrite(lockfd, value, 1, 0));
}

/* Everything under the lock, as a put before group commit. */
static void put_locked(int writer, int put) {
    char name[64];
    snprintf(name, sizeof name, "w%d-%d.item", writer, put % ITEMS);
    lock_byte(F_WRLCK, 0);
    mark("\1");
    read_item(name);
    write_spare(".spare");
    CHECK(renameat2(dfd, ".spare", dfd, name, RENAME_EXCHANGE));
    record(writer, put);
    CHECK(fsync(dfd));
    zero_spare(".spare");
    mark("\0");
    lock_byte(F_UNLCK, 0);
}

/* Group commit: read and write the spare (its own) before the lock; under it, read again, exchange,
 * record, take a ticket; after it, one writer at a time fsyncs the directory for every exchange so far
 * unless a finished fsync covered this one. */
static void put_group_commit(int writer, int put) {
    char name[64], spare[64];
    snprintf(name, sizeof name, "w%d-%d.item", writer, put % ITEMS);
    snprintf(spare, sizeof spare, ".slot.%d", writer);
    read_item(name);
    write_spare(spare);
    lock_byte(F_WRLCK, 0);
    mark("\1");
    read_item(name);
    CHECK(renameat2(dfd, spare, dfd, name, RENAME_EXCHANGE));
    record(writer, put);
    uint64_t ticket = counter(8) + 1;
    set_counter(8, ticket);
    mark("\0");
    lock_byte(F_UNLCK, 0);
    if (counter(16) < ticket) {
        lock_byte(F_WRLCK, 1);
        if (counter(16) < ticket) {
            uint64_t exchanged = counter(8);
            CHECK(fsync(dfd));
            set_counter(16, exchanged > ticket ? exchanged : ticket);
        }
        lock_byte(F_UNLCK, 1);
    }
    zero_spare(spare);
}

static void make_directory(int at, const char *name, int writers) {
    mkdirat(at, name, 0700);
    CHECK(dfd = openat(at, name, O_RDONLY | O_DIRECTORY));
    CHECK(lockfd = openat(dfd, ".lock", O_RDWR | O_CREAT, 0600));
    char zeros[64] = {0};
    CHECK(pwrite(lockfd, zeros, sizeof zeros, 0));
    for (int w = 0; w < writers; w++) {
        for (int i = 0; i < ITEMS; i++) {
            char item[64];
            snprintf(item, sizeof item, "w%d-%d.item", w, i);
            int fd;
            CHECK(fd = openat(dfd, item, O_WRONLY | O_CREAT, 0600));
            CHECK(write(fd, contents, sizeof contents));
            CHECK(close(fd));
        }
    }
}

/* Microseconds per put of `writers` processes doing TOTAL puts between them. */
static double run(enum mode mode, int writers) {
    int top;
    mkdir("d", 0700);
    CHECK(top = open("d", O_RDONLY | O_DIRECTORY));
    if (mode == OWN_DIRECTORIES) {
        for (int w = 0; w < writers; w++) {
            char name[16];
            snprintf(name, sizeof name, "g%d", w);
            make_directory(top, name, writers);
            close(dfd);
            close(lockfd);
        }
    } else {
        make_directory(top, "g", writers);
        close(dfd);
        close(lockfd);
    }
    sync();
    double start = now_us();
    for (int w = 0; w < writers; w++) {
        if (fork() == 0) {
            char name[16];
            snprintf(name, sizeof name, "g%d", w);
            CHECK(dfd = openat(top, mode == OWN_DIRECTORIES ? name : "g", O_RDONLY | O_DIRECTORY));
            CHECK(lockfd = openat(dfd, ".lock", O_RDWR));
            for (int put = 0; put < TOTAL / writers; put++) {
                if (mode == GROUP_COMMIT) put_group_commit(w, put); else put_locked(w, put);
            }
            _exit(0);
        }
    }
    while (wait(NULL) > 0) {}
    double per_put = (now_us() - start) / TOTAL;
    close(top);
    CHECK(system("rm -rf d"));
    return per_put;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    printf("%-6s %12s %14s %14s %14s   %s\n", "round", "1 writer", "8 own dirs", "8 one, locked", "8 one, group",
           "throughput: own / locked / group commit");
    for (int r = 1; r <= rounds; r++) {
        double one = run(LOCKED, 1), own = run(OWN_DIRECTORIES, WRITERS);
        double locked = run(LOCKED, WRITERS), group = run(GROUP_COMMIT, WRITERS);
        printf("%-6d %9.1f us %11.1f us %11.1f us %11.1f us   %.2fx / %.2fx / %.2fx\n", r, one, own, locked, group,
               one / own, one / locked, one / group);
        fflush(stdout);
    }
    return 0;
}
