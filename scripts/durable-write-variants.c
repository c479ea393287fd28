/*
 * The durable-write floor of vault-bench against the system-call sequences of a vault item write,
 * with no vault code: what each part of a write costs on a given file system (docs/PERFORMANCE.md,
 * "Why writes are at their floor").
 *
 *   cc -O2 -o /tmp/durable-write-variants scripts/durable-write-variants.c
 *   cd <a directory on the file system to measure> && /tmp/durable-write-variants [ROUNDS] [FILES]
 *
 * It creates ./d with FILES files (default 10,000, names like item files), then runs the variants
 * interleaved, ROUNDS times (default 300), and prints each median and its ratio to the floor. Remove ./d
 * afterwards.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int dfd, lockfd;
static char contents[227]; /* an item file of a 32-byte secret */

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CHECK(x) do { if ((x) < 0) { perror(#x); exit(1); } } while (0)

static void record_symlink(int round) {
    char text[64];
    snprintf(text, sizeof text, "1:%016x:0123456789abcdef0123456789abcdef", round);
    CHECK(symlinkat(text, dfd, ".tmp.s"));
    CHECK(renameat(dfd, ".tmp.s", dfd, ".gen.record"));
}

static void mark_active(void) {
    char byte;
    CHECK(pread(lockfd, &byte, 1, 0));
    CHECK(pwrite(lockfd, "\1", 1, 0));
}

static void mark_idle(void) { CHECK(pwrite(lockfd, "\0", 1, 0)); }

static void new_file_renamed_over(const char *name) {
    int fd;
    CHECK(fd = openat(dfd, ".tmp.x", O_WRONLY | O_CREAT | O_EXCL, 0600));
    CHECK(write(fd, contents, sizeof contents));
    CHECK(fsync(fd));
    CHECK(close(fd));
    CHECK(renameat(dfd, ".tmp.x", dfd, name));
}

static void spare_written_and_exchanged(const char *spare, const char *name) {
    int fd;
    struct stat st;
    CHECK(fd = openat(dfd, spare, O_WRONLY | O_NONBLOCK | O_NOFOLLOW));
    CHECK(fstat(fd, &st));
    CHECK(pwrite(fd, contents, sizeof contents, 0));
    CHECK(fdatasync(fd));
    CHECK(close(fd));
    CHECK(renameat2(dfd, spare, dfd, name, RENAME_EXCHANGE));
}

static void spare_zeroed(const char *spare) {
    static const char zeros[sizeof contents];
    int fd;
    struct stat st;
    CHECK(fd = openat(dfd, spare, O_WRONLY | O_NONBLOCK | O_NOFOLLOW));
    CHECK(fstat(fd, &st));
    CHECK(pwrite(fd, zeros, st.st_size, 0));
    CHECK(close(fd));
}

static void variant(int v, int round) {
    char name[16], spare[16];
    snprintf(name, sizeof name, "file%d", v);
    snprintf(spare, sizeof spare, ".spare%d", v);
    switch (v) {
    case 0: /* the floor: a new file renamed over the old one */
        new_file_renamed_over(name);
        CHECK(fsync(dfd));
        break;
    case 1: /* the floor inside the lock's mark */
        mark_active();
        new_file_renamed_over(name);
        CHECK(fsync(dfd));
        mark_idle();
        break;
    case 2: /* the floor, plus the generation record and the lock's mark (the write path before spares) */
        mark_active();
        new_file_renamed_over(name);
        record_symlink(round);
        CHECK(fsync(dfd));
        mark_idle();
        break;
    case 3: /* the spare written in place, then exchanged */
        spare_written_and_exchanged(spare, name);
        CHECK(fsync(dfd));
        break;
    case 4: /* the write path now: mark, spare, exchange, record, directory fsync, zeroing, mark */
        mark_active();
        spare_written_and_exchanged(spare, name);
        record_symlink(round);
        CHECK(fsync(dfd));
        spare_zeroed(spare);
        mark_idle();
        break;
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300, files = argc > 2 ? atoi(argv[2]) : 10000;
    enum { VARIANTS = 5 };
    const char *names[VARIANTS] = {
        "floor (new file, rename over)", "floor + lock mark", "floor + record + lock mark (before)",
        "spare in place + exchange", "spare + record + mark + zeroing (now)"};
    CHECK(mkdir("d", 0700));
    CHECK(dfd = open("d", O_RDONLY | O_DIRECTORY));
    CHECK(lockfd = openat(dfd, ".lock", O_RDWR | O_CREAT, 0600));
    CHECK(pwrite(lockfd, "\0", 1, 0));
    for (int i = 0; i < files; i++) {
        char name[80];
        snprintf(name, sizeof name, "%064d.item", i);
        int fd;
        CHECK(fd = openat(dfd, name, O_WRONLY | O_CREAT, 0600));
        CHECK(write(fd, contents, 200));
        CHECK(close(fd));
    }
    for (int v = 0; v < VARIANTS; v++) {
        char name[16];
        int fd;
        snprintf(name, sizeof name, "file%d", v);
        CHECK(fd = openat(dfd, name, O_WRONLY | O_CREAT, 0600));
        CHECK(write(fd, contents, sizeof contents));
        CHECK(close(fd));
        snprintf(name, sizeof name, ".spare%d", v);
        CHECK(fd = openat(dfd, name, O_WRONLY | O_CREAT, 0600));
        CHECK(write(fd, contents, sizeof contents));
        CHECK(close(fd));
    }
    sync();
    double *samples[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) samples[v] = malloc(sizeof(double) * rounds);
    for (int r = 0; r < rounds; r++) {
        for (int v = 0; v < VARIANTS; v++) {
            double start = now_us();
            variant(v, r);
            samples[v][r] = now_us() - start;
        }
    }
    double floor_median = 0;
    for (int v = 0; v < VARIANTS; v++) {
        qsort(samples[v], rounds, sizeof(double), compare);
        double median = samples[v][rounds / 2];
        if (v == 0) floor_median = median;
        printf("%-40s %8.1f us  %.2fx\n", names[v], median, median / floor_median);
    }
    return 0;
}
