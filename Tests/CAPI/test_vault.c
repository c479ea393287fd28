/*
 * The C API's test program: every function of include/vault.h and every error path, through
 * libvault.so, as a C consumer sees them. Built by scripts/test-c-api with
 * cc -std=c11 -Wall -Wextra -Werror -pthread ... -lvault.
 *
 *   test_vault suite DIR                         run every test; DIR is an empty scratch directory
 *   test_vault put VAULT APP SERVICE ACCOUNT SECRET
 *   test_vault get VAULT APP SERVICE ACCOUNT     print the secret (no newline)
 *
 * The put/get modes are the C side of the C/Swift/CLI cross test.
 */
#define _POSIX_C_SOURCE 200809L

#include "vault.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;
static int checks = 0;
static const char *scratch = NULL;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        checks++;                                                                                    \
        if (!(cond)) {                                                                               \
            failures++;                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                \
        }                                                                                            \
    } while (0)

/* Runs `call` and checks its status; on a mismatch prints both statuses and the thread's message. */
#define EXPECT(call, expected)                                                                       \
    do {                                                                                             \
        int32_t got_ = (call);                                                                       \
        int32_t want_ = (expected);                                                                  \
        checks++;                                                                                    \
        if (got_ != want_) {                                                                         \
            failures++;                                                                              \
            fprintf(stderr, "%s:%d: %s\n  returned %d (%s)\n  expected %d (%s)\n  message: %s\n",    \
                    __FILE__, __LINE__, #call, (int)got_, vault_strerror(got_), (int)want_,          \
                    vault_strerror(want_), vault_last_error_message());                              \
        }                                                                                            \
    } while (0)

/* Checks that the thread's last message contains `needle`. */
#define EXPECT_MESSAGE_CONTAINS(needle)                                                              \
    do {                                                                                             \
        const char *message_ = vault_last_error_message();                                           \
        checks++;                                                                                    \
        if (message_ == NULL || strstr(message_, (needle)) == NULL) {                                \
            failures++;                                                                              \
            fprintf(stderr, "%s:%d: message \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,   \
                    message_ ? message_ : "(null)", (needle));                                       \
        }                                                                                            \
    } while (0)

static const uint8_t *bytes(const char *text) { return (const uint8_t *)text; }

/* A fresh vault directory path under the scratch directory (not created). */
static void vault_path(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s/%s", scratch, name);
}

/* Opens (creating) a vault as `app` with `ngroups` groups, failing the test run if it cannot. */
static vault_t *open_or_die(const char *path, const char *app, const char *const *groups, uint32_t ngroups) {
    vault_t *vault = NULL;
    int32_t status = vault_open(path, app, groups, ngroups, VAULT_OPEN_CREATE, &vault);
    if (status != VAULT_OK || vault == NULL) {
        fprintf(stderr, "cannot open %s as %s: %d %s\n", path, app ? app : "(null)", (int)status,
                vault_last_error_message());
        exit(2);
    }
    return vault;
}

/* The secret of (group, service, account) as a NUL-terminated string in `out`, or the status. */
static int32_t get_text(const vault_t *vault, const char *group, const char *service, const char *account,
                        char *out, uint64_t size) {
    uint64_t length = 0;
    int32_t status = vault_get(vault, group, service, account, (uint8_t *)out, size - 1, &length);
    out[status == VAULT_OK ? length : 0] = '\0';
    return status;
}

/* ------------------------------------------------------------------------------------------------ */
/* Every declared function, with the header's exact signature: a mismatch between this table and    */
/* vault.h fails to compile, and a function the library does not export fails to link.              */
/* (scripts/test-c-api also generates a table from vault.h itself, so a new declaration is covered.) */
/* ------------------------------------------------------------------------------------------------ */

static const struct {
    const char *(*strerror_)(int32_t);
    const char *(*last_error_message)(void);
    int32_t (*open)(const char *, const char *, const char *const *, uint32_t, uint32_t, vault_t **);
    int32_t (*close)(vault_t *);
    int32_t (*put)(vault_t *, const char *, const char *, const char *, const uint8_t *, uint64_t);
    int32_t (*add)(vault_t *, const char *, const char *, const char *, const uint8_t *, uint64_t);
    int32_t (*get)(const vault_t *, const char *, const char *, const char *, uint8_t *, uint64_t, uint64_t *);
    int32_t (*get_secret)(const vault_t *, const char *, const char *, const char *, uint8_t **, uint64_t *);
    int32_t (*free_secret)(uint8_t *);
    int32_t (*remove)(vault_t *, const char *, const char *, const char *);
    int32_t (*list)(const vault_t *, const char *, vault_iter_t **);
    int32_t (*iter_next)(vault_iter_t *, vault_item_t *);
    int32_t (*iter_free)(vault_iter_t *);
    int32_t (*device_id)(vault_t *, const char *, uint8_t *, uint8_t *);
    int32_t (*history)(const vault_t *, const char *, const char *, const char *, vault_version_t *, uint64_t,
                       uint64_t *);
    int32_t (*get_version)(const vault_t *, const char *, const char *, const char *, uint64_t, uint8_t **,
                           uint64_t *);
    int32_t (*put_if_version)(vault_t *, const char *, const char *, const char *, const uint8_t *, uint64_t,
                              uint64_t, uint64_t *);
    int32_t (*restore)(vault_t *, const char *, const char *, const char *, uint64_t, uint64_t *);
    int32_t (*purge)(vault_t *, const char *, const char *, const char *);
} api = {
    vault_strerror, vault_last_error_message, vault_open, vault_close, vault_put, vault_add, vault_get,
    vault_get_secret, vault_free_secret, vault_remove, vault_list, vault_iter_next, vault_iter_free,
    vault_device_id, vault_history, vault_get_version, vault_put_if_version, vault_restore, vault_purge,
};

static void test_exports(void) {
    CHECK(api.strerror_ != NULL && api.last_error_message != NULL);
    CHECK(api.open != NULL && api.close != NULL);
    CHECK(api.put != NULL && api.add != NULL && api.get != NULL && api.get_secret != NULL);
    CHECK(api.free_secret != NULL && api.remove != NULL);
    CHECK(api.list != NULL && api.iter_next != NULL && api.iter_free != NULL);
    CHECK(api.device_id != NULL);
    CHECK(api.history != NULL && api.get_version != NULL && api.put_if_version != NULL);
    CHECK(api.restore != NULL && api.purge != NULL);
}

/* ------------------------------------------------------------------------------------------------ */

static void test_strerror(void) {
    static const struct {
        int32_t status;
        const char *name;
    } known[] = {
        {VAULT_OK, "errSecSuccess"},
        {VAULT_ERR_UNIMPLEMENTED, "errSecUnimplemented"},
        {VAULT_ERR_IO, "errSecIO"},
        {VAULT_ERR_PARAM, "errSecParam"},
        {VAULT_ERR_PERMISSION, "errSecWrPerm"},
        {VAULT_ERR_ALLOCATE, "errSecAllocate"},
        {VAULT_ERR_INTERNAL, "errSecInternalComponent"},
        {VAULT_ERR_NOT_AVAILABLE, "errSecNotAvailable"},
        {VAULT_ERR_NO_SUCH_VAULT, "errSecNoSuchKeychain"},
        {VAULT_ERR_INVALID_HANDLE, "errSecInvalidKeychain"},
        {VAULT_ERR_DUPLICATE_VAULT, "errSecDuplicateKeychain"},
        {VAULT_ERR_DUPLICATE, "errSecDuplicateItem"},
        {VAULT_ERR_NOT_FOUND, "errSecItemNotFound"},
        {VAULT_ERR_BUFFER_TOO_SMALL, "errSecBufferTooSmall"},
        {VAULT_ERR_NO_SUCH_ATTR, "errSecNoSuchAttr"},
        {VAULT_ERR_NO_SUCH_CLASS, "errSecNoSuchClass"},
        {VAULT_ERR_INTERACTION_NOT_ALLOWED, "errSecInteractionNotAllowed"},
        {VAULT_ERR_DECODE, "errSecDecode"},
        {VAULT_ERR_MISSING_ENTITLEMENT, "errSecMissingEntitlement"},
    };
    /* Apple's values. */
    CHECK(VAULT_ERR_NOT_FOUND == -25300);
    CHECK(VAULT_ERR_DUPLICATE == -25299);
    CHECK(VAULT_ERR_PARAM == -50);
    CHECK(VAULT_ERR_MISSING_ENTITLEMENT == -34018);
    CHECK(VAULT_ERR_BUFFER_TOO_SMALL == -25301);
    CHECK(VAULT_ERR_INVALID_HANDLE == -25295);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const char *text = vault_strerror(known[i].status);
        CHECK(text != NULL);
        CHECK(text != NULL && strncmp(text, known[i].name, strlen(known[i].name)) == 0);
    }
    CHECK(strcmp(vault_strerror(12345), "unknown status") == 0);
    CHECK(strcmp(vault_strerror(INT32_MIN), "unknown status") == 0);
    /* The same static string every time. */
    CHECK(vault_strerror(VAULT_ERR_NOT_FOUND) == vault_strerror(VAULT_ERR_NOT_FOUND));
}

static void test_open(void) {
    char path[4096];
    vault_t *vault = (vault_t *)&path; /* must be reset to NULL on failure */

    CHECK(strcmp(vault_last_error_message(), "") == 0);

    vault_path(path, sizeof path, "open");
    EXPECT(vault_open(path, "app.one", NULL, 0, 0, NULL), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_vault");

    EXPECT(vault_open(path, "app.one", NULL, 0, 0, &vault), VAULT_ERR_NO_SUCH_VAULT);
    CHECK(vault == NULL);
    EXPECT_MESSAGE_CONTAINS(path);
    /* vault_strerror leaves the message alone. */
    (void)vault_strerror(VAULT_OK);
    EXPECT_MESSAGE_CONTAINS(path);

    EXPECT(vault_open(path, "app.one", NULL, 0, 0x80, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("flags");
    EXPECT(vault_open(path, "app.one", NULL, 2, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("groups is NULL");
    const char *with_null[] = {"group.a", NULL};
    EXPECT(vault_open(path, "app.one", with_null, 2, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("groups[1]");
    const char *bad_name[] = {"bad/group"};
    EXPECT(vault_open(path, "app.one", bad_name, 1, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("bad/group");
    EXPECT(vault_open(path, "bad app", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT(vault_open(path, "app\xff", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("UTF-8");
    EXPECT(vault_open("\xc3", "app.one", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT(vault_open("", "app.one", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("empty");
    EXPECT(vault_open(path, "app.one", with_null, 0xFFFFFFFFu, VAULT_OPEN_CREATE, &vault), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("ngroups");
    CHECK(vault == NULL);

    EXPECT(vault_open(path, "app.one", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_OK);
    CHECK(vault != NULL);
    CHECK(strcmp(vault_last_error_message(), "") == 0);
    EXPECT(vault_close(vault), VAULT_OK);

    /* Opening an existing vault needs no flag; NULL groups with ngroups 0 is fine. */
    vault = NULL;
    EXPECT(vault_open(path, "app.one", NULL, 0, 0, &vault), VAULT_OK);
    EXPECT(vault_close(vault), VAULT_OK);
    EXPECT(vault_close(NULL), VAULT_OK);

    /* path NULL: $VAULT_DIR. */
    char env_path[4096];
    vault_path(env_path, sizeof env_path, "from-env");
    setenv("VAULT_DIR", env_path, 1);
    vault = NULL;
    EXPECT(vault_open(NULL, "app.one", NULL, 0, VAULT_OPEN_CREATE, &vault), VAULT_OK);
    EXPECT(vault_put(vault, NULL, "svc", NULL, bytes("x"), 1), VAULT_OK);
    EXPECT(vault_close(vault), VAULT_OK);
    unsetenv("VAULT_DIR");
    vault = NULL;
    EXPECT(vault_open(env_path, "app.one", NULL, 0, 0, &vault), VAULT_OK);
    char text[16];
    EXPECT(get_text(vault, NULL, "svc", NULL, text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "x") == 0);
    EXPECT(vault_close(vault), VAULT_OK);

    /* An unsafe master.key is refused, and the message names it. */
    char key_path[4200];
    snprintf(key_path, sizeof key_path, "%s/master.key", env_path);
    CHECK(chmod(key_path, 0644) == 0);
    vault = NULL;
    EXPECT(vault_open(env_path, "app.one", NULL, 0, 0, &vault), VAULT_ERR_PERMISSION);
    EXPECT_MESSAGE_CONTAINS("master.key");
    CHECK(vault == NULL);
    CHECK(chmod(key_path, 0600) == 0);
}

static void test_put_get(void) {
    char path[4096];
    vault_path(path, sizeof path, "items");
    vault_t *vault = open_or_die(path, "app.items", NULL, 0);
    char text[256];

    EXPECT(vault_put(vault, NULL, "db", "alice", bytes("s3cret"), 6), VAULT_OK);
    EXPECT(get_text(vault, NULL, "db", "alice", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "s3cret") == 0);
    /* put replaces. */
    EXPECT(vault_put(vault, NULL, "db", "alice", bytes("newer"), 5), VAULT_OK);
    EXPECT(get_text(vault, NULL, "db", "alice", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "newer") == 0);
    /* The app id is the default group: naming it finds the same item. */
    EXPECT(get_text(vault, "app.items", "db", "alice", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "newer") == 0);

    /* Binary secrets, with NULs. */
    const uint8_t binary[] = {0, 1, 2, 0, 255, 0};
    uint8_t buffer[64];
    uint64_t length = 99;
    EXPECT(vault_put(vault, NULL, "bin", "", binary, sizeof binary), VAULT_OK);
    EXPECT(vault_get(vault, NULL, "bin", "", buffer, sizeof buffer, &length), VAULT_OK);
    CHECK(length == sizeof binary && memcmp(buffer, binary, sizeof binary) == 0);

    /* A NULL account is "". */
    EXPECT(vault_get(vault, NULL, "bin", NULL, buffer, sizeof buffer, &length), VAULT_OK);
    CHECK(length == sizeof binary);

    /* Empty secret: NULL with length 0. */
    EXPECT(vault_put(vault, NULL, "empty", "e", NULL, 0), VAULT_OK);
    length = 99;
    EXPECT(vault_get(vault, NULL, "empty", "e", NULL, 0, &length), VAULT_OK);
    CHECK(length == 0);

    /* Size negotiation: ask, then fetch. */
    EXPECT(vault_put(vault, NULL, "long", "l", bytes("0123456789"), 10), VAULT_OK);
    length = 0;
    EXPECT(vault_get(vault, NULL, "long", "l", NULL, 0, &length), VAULT_ERR_BUFFER_TOO_SMALL);
    CHECK(length == 10);
    EXPECT_MESSAGE_CONTAINS("10 bytes");
    memset(buffer, 0xAA, sizeof buffer);
    EXPECT(vault_get(vault, NULL, "long", "l", buffer, 9, &length), VAULT_ERR_BUFFER_TOO_SMALL);
    CHECK(length == 10);
    CHECK(buffer[0] == 0xAA && buffer[8] == 0xAA); /* untouched */
    uint8_t *exact = malloc(length);
    CHECK(exact != NULL);
    uint64_t exact_length = 0;
    EXPECT(vault_get(vault, NULL, "long", "l", exact, length, &exact_length), VAULT_OK);
    CHECK(exact_length == 10 && memcmp(exact, "0123456789", 10) == 0);
    free(exact);

    /* Parameters. */
    EXPECT(vault_put(vault, NULL, NULL, "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("service");
    EXPECT(vault_put(vault, NULL, "svc", "a", NULL, 3), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("secret");
    EXPECT(vault_put(vault, NULL, "svc\xfe", "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT(vault_put(vault, NULL, "svc", "a\x80", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT(vault_put(vault, "bad group!", "svc", "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT(vault_put(vault, NULL, "svc", "a", bytes("x"), UINT64_MAX), VAULT_ERR_PARAM);
    /* Over the limit: refused before a byte is read (the pointer is to 2 bytes). */
    EXPECT(vault_put(vault, NULL, "svc", "a", bytes("x"), (uint64_t)VAULT_MAX_SECRET_LENGTH + 1), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("secret_len");
    EXPECT(vault_add(vault, NULL, "svc", "a", bytes("x"), (uint64_t)VAULT_MAX_SECRET_LENGTH + 1), VAULT_ERR_PARAM);
    /* A buffer_size beyond any real buffer is only compared, never trusted. */
    EXPECT(vault_get(vault, NULL, "long", "l", buffer, UINT64_MAX, &length), VAULT_OK);
    CHECK(length == 10);
    char *huge = malloc(5000);
    CHECK(huge != NULL);
    memset(huge, 's', 4999);
    huge[4999] = '\0';
    EXPECT(vault_put(vault, NULL, huge, "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("4096");
    free(huge);
    EXPECT(vault_get(vault, NULL, "db", "alice", buffer, sizeof buffer, NULL), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_len");
    EXPECT(vault_get(vault, NULL, "db", "alice", NULL, 5, &length), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("buffer is NULL");
    EXPECT(vault_get(vault, NULL, NULL, "alice", buffer, sizeof buffer, &length), VAULT_ERR_PARAM);

    /* Not found names the item; *out_len is 0. */
    length = 77;
    EXPECT(vault_get(vault, NULL, "db", "bob", buffer, sizeof buffer, &length), VAULT_ERR_NOT_FOUND);
    CHECK(length == 0);
    EXPECT_MESSAGE_CONTAINS("\"db\"");
    EXPECT_MESSAGE_CONTAINS("\"bob\"");

    /* A success clears the message. */
    EXPECT(get_text(vault, NULL, "db", "alice", text, sizeof text), VAULT_OK);
    CHECK(strcmp(vault_last_error_message(), "") == 0);

    EXPECT(vault_close(vault), VAULT_OK);
}

static void test_add_remove(void) {
    char path[4096];
    vault_path(path, sizeof path, "add");
    vault_t *vault = open_or_die(path, "app.add", NULL, 0);
    char text[64];

    EXPECT(vault_add(vault, NULL, "api", "token", bytes("first"), 5), VAULT_OK);
    EXPECT(vault_add(vault, NULL, "api", "token", bytes("second"), 6), VAULT_ERR_DUPLICATE);
    EXPECT_MESSAGE_CONTAINS("api");
    EXPECT(get_text(vault, NULL, "api", "token", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "first") == 0); /* unchanged */
    EXPECT(vault_add(vault, NULL, "api", "other", bytes("x"), 1), VAULT_OK);
    EXPECT(vault_add(vault, NULL, "api", NULL, NULL, 0), VAULT_OK);
    EXPECT(vault_add(vault, NULL, "api", "", NULL, 0), VAULT_ERR_DUPLICATE);
    EXPECT(vault_add(vault, NULL, NULL, "x", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT(vault_add(vault, NULL, "api", "x", NULL, 1), VAULT_ERR_PARAM);

    EXPECT(vault_remove(vault, NULL, "api", "token"), VAULT_OK);
    EXPECT(get_text(vault, NULL, "api", "token", text, sizeof text), VAULT_ERR_NOT_FOUND);
    EXPECT(vault_remove(vault, NULL, "api", "token"), VAULT_ERR_NOT_FOUND);
    EXPECT_MESSAGE_CONTAINS("token");
    EXPECT(vault_remove(vault, NULL, NULL, "token"), VAULT_ERR_PARAM);
    EXPECT(vault_remove(vault, NULL, "api", NULL), VAULT_OK); /* the "" account */
    /* After a remove, add works again. */
    EXPECT(vault_add(vault, NULL, "api", "token", bytes("third"), 5), VAULT_OK);
    EXPECT(get_text(vault, NULL, "api", "token", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "third") == 0);

    EXPECT(vault_close(vault), VAULT_OK);
}

static void test_get_secret(void) {
    char path[4096];
    vault_path(path, sizeof path, "secure");
    vault_t *vault = open_or_die(path, "app.secure", NULL, 0);

    EXPECT(vault_put(vault, NULL, "svc", "acct", bytes("in secure memory"), 16), VAULT_OK);
    uint8_t *secret = NULL;
    uint64_t length = 0;
    EXPECT(vault_get_secret(vault, NULL, "svc", "acct", &secret, &length), VAULT_OK);
    CHECK(secret != NULL && length == 16 && memcmp(secret, "in secure memory", 16) == 0);
    /* The buffer is the caller's to write (to wipe, for instance). */
    if (secret) secret[0] = 'I';
    EXPECT(vault_free_secret(secret), VAULT_OK);
    /* A second free is refused, not a crash. */
    EXPECT(vault_free_secret(secret), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("already freed");
    EXPECT(vault_free_secret(NULL), VAULT_OK);
    /* Memory the library did not hand out is refused. */
    uint8_t local[8];
    EXPECT(vault_free_secret(local), VAULT_ERR_PARAM);
    uint8_t *heap = malloc(8);
    EXPECT(vault_free_secret(heap), VAULT_ERR_PARAM);
    free(heap);

    /* Empty secrets still come as a freeable, non-NULL buffer. */
    EXPECT(vault_put(vault, NULL, "svc", "empty", NULL, 0), VAULT_OK);
    secret = NULL;
    length = 5;
    EXPECT(vault_get_secret(vault, NULL, "svc", "empty", &secret, &length), VAULT_OK);
    CHECK(secret != NULL && length == 0);
    EXPECT(vault_free_secret(secret), VAULT_OK);

    /* Several live buffers at once, freed in another order. */
    uint8_t *many[5];
    for (int i = 0; i < 5; i++) {
        uint64_t n = 0;
        EXPECT(vault_get_secret(vault, NULL, "svc", "acct", &many[i], &n), VAULT_OK);
    }
    for (int i = 4; i >= 0; i--) EXPECT(vault_free_secret(many[i]), VAULT_OK);

    /* Errors: outputs reset. */
    secret = (uint8_t *)&length;
    length = 5;
    EXPECT(vault_get_secret(vault, NULL, "svc", "missing", &secret, &length), VAULT_ERR_NOT_FOUND);
    CHECK(secret == NULL && length == 0);
    EXPECT_MESSAGE_CONTAINS("missing");
    EXPECT(vault_get_secret(vault, NULL, "svc", "acct", NULL, &length), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_secret");
    EXPECT(vault_get_secret(vault, NULL, "svc", "acct", &secret, NULL), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_len");
    EXPECT(vault_get_secret(vault, NULL, NULL, "acct", &secret, &length), VAULT_ERR_PARAM);

    EXPECT(vault_close(vault), VAULT_OK);
}

static void test_groups_and_entitlements(void) {
    char path[4096];
    vault_path(path, sizeof path, "groups");
    const char *groups[] = {"TEAM.shared", "TEAM.extra"};
    vault_t *vault = open_or_die(path, "TEAM.app", groups, 2);
    char text[64];
    uint8_t buffer[16];
    uint64_t length = 0;

    /* No group: the first group. */
    EXPECT(vault_put(vault, NULL, "svc", "a", bytes("shared"), 6), VAULT_OK);
    EXPECT(get_text(vault, "TEAM.shared", "svc", "a", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "shared") == 0);
    EXPECT(get_text(vault, "TEAM.extra", "svc", "a", text, sizeof text), VAULT_ERR_NOT_FOUND);
    EXPECT_MESSAGE_CONTAINS("TEAM.extra");
    EXPECT(vault_put(vault, "TEAM.app", "svc", "b", bytes("own"), 3), VAULT_OK);
    EXPECT(get_text(vault, NULL, "svc", "b", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "own") == 0);

    /* Another client sees only its groups. */
    const char *other_groups[] = {"TEAM.shared"};
    vault_t *other = open_or_die(path, "TEAM.other", other_groups, 1);
    EXPECT(get_text(other, NULL, "svc", "a", text, sizeof text), VAULT_OK);
    EXPECT(get_text(other, NULL, "svc", "b", text, sizeof text), VAULT_ERR_NOT_FOUND);

    /* Naming a group the client lacks: missing entitlement, with the group in the message, for every
       function that takes a group. */
    EXPECT(vault_put(other, "TEAM.app", "svc", "b", bytes("x"), 1), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT_MESSAGE_CONTAINS("TEAM.app");
    EXPECT(vault_add(other, "TEAM.app", "svc", "c", bytes("x"), 1), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT(vault_get(other, "TEAM.app", "svc", "b", buffer, sizeof buffer, &length),
           VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT_MESSAGE_CONTAINS("TEAM.app");
    uint8_t *secret = NULL;
    EXPECT(vault_get_secret(other, "TEAM.app", "svc", "b", &secret, &length), VAULT_ERR_MISSING_ENTITLEMENT);
    CHECK(secret == NULL);
    EXPECT(vault_remove(other, "TEAM.app", "svc", "b"), VAULT_ERR_MISSING_ENTITLEMENT);
    vault_iter_t *iter = NULL;
    EXPECT(vault_list(other, "TEAM.app", &iter), VAULT_ERR_MISSING_ENTITLEMENT);
    CHECK(iter == NULL);
    /* The item is still there for its owner. */
    EXPECT(get_text(vault, NULL, "svc", "b", text, sizeof text), VAULT_OK);

    /* A client with no application identifier and no groups is entitled to nothing. */
    vault_t *nobody = open_or_die(path, NULL, NULL, 0);
    EXPECT(vault_put(nobody, NULL, "svc", "a", bytes("x"), 1), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT_MESSAGE_CONTAINS("no access groups");
    EXPECT(vault_get(nobody, NULL, "svc", "a", buffer, sizeof buffer, &length), VAULT_ERR_MISSING_ENTITLEMENT);
    uint8_t uuid[VAULT_UUID_LENGTH];
    EXPECT(vault_device_id(nobody, NULL, uuid, NULL), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT(vault_remove(nobody, NULL, "svc", "a"), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT(vault_list(nobody, NULL, &iter), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT(vault_add(nobody, NULL, "svc", "new", bytes("x"), 1), VAULT_ERR_MISSING_ENTITLEMENT);
    EXPECT(vault_close(nobody), VAULT_OK);

    /* A client with only groups (no application identifier) works. */
    vault_t *groups_only = open_or_die(path, NULL, other_groups, 1);
    EXPECT(get_text(groups_only, NULL, "svc", "a", text, sizeof text), VAULT_OK);
    EXPECT(vault_close(groups_only), VAULT_OK);

    EXPECT(vault_close(other), VAULT_OK);
    EXPECT(vault_close(vault), VAULT_OK);
}

static void test_list(void) {
    char path[4096];
    vault_path(path, sizeof path, "list");
    const char *groups[] = {"g.one", "g.two"};
    vault_t *vault = open_or_die(path, "app.list", groups, 2);
    vault_item_t item;

    /* Empty: an iterator without items. */
    vault_iter_t *iter = NULL;
    EXPECT(vault_list(vault, NULL, &iter), VAULT_OK);
    CHECK(iter != NULL);
    EXPECT(vault_iter_next(iter, &item), VAULT_ERR_NOT_FOUND);
    CHECK(item.group == NULL && item.service == NULL);
    EXPECT(vault_iter_free(iter), VAULT_OK);

    EXPECT(vault_put(vault, "g.two", "zeta", "z", bytes("SECRET-Z"), 8), VAULT_OK);
    EXPECT(vault_put(vault, "g.one", "beta", "b", bytes("SECRET-B"), 8), VAULT_OK);
    EXPECT(vault_put(vault, "g.one", "alpha", NULL, bytes("SECRET-A"), 8), VAULT_OK);
    EXPECT(vault_put(vault, "g.two", "alpha", "a", bytes("SECRET-A2"), 9), VAULT_OK);

    iter = NULL;
    EXPECT(vault_list(vault, NULL, &iter), VAULT_OK);
    /* Changes after the snapshot do not show. */
    EXPECT(vault_put(vault, "g.one", "later", "l", bytes("x"), 1), VAULT_OK);
    const char *expected[][3] = {{"g.one", "alpha", ""}, {"g.one", "beta", "b"}, {"g.two", "alpha", "a"},
                                 {"g.two", "zeta", "z"}};
    const char *kept_service = NULL;
    for (size_t i = 0; i < 4; i++) {
        memset(&item, 0, sizeof item);
        EXPECT(vault_iter_next(iter, &item), VAULT_OK);
        CHECK(item.group && strcmp(item.group, expected[i][0]) == 0);
        CHECK(item.service && strcmp(item.service, expected[i][1]) == 0);
        CHECK(item.account && strcmp(item.account, expected[i][2]) == 0);
        CHECK(item.label == NULL);
        CHECK(item.created_unix_ms > 1577836800000LL); /* after 2020 */
        CHECK(item.modified_unix_ms >= item.created_unix_ms);
        /* Never a secret. */
        CHECK(strstr(item.service, "SECRET") == NULL && strstr(item.account, "SECRET") == NULL);
        if (i == 0) kept_service = item.service;
    }
    EXPECT(vault_iter_next(iter, &item), VAULT_ERR_NOT_FOUND);
    EXPECT_MESSAGE_CONTAINS("no more items");
    EXPECT(vault_iter_next(iter, &item), VAULT_ERR_NOT_FOUND);
    /* Strings stay valid until the iterator is freed. */
    CHECK(kept_service && strcmp(kept_service, "alpha") == 0);
    EXPECT(vault_iter_next(iter, NULL), VAULT_ERR_PARAM);
    EXPECT(vault_iter_free(iter), VAULT_OK);
    EXPECT(vault_iter_free(iter), VAULT_ERR_INVALID_HANDLE);
    EXPECT(vault_iter_next(iter, &item), VAULT_ERR_INVALID_HANDLE);
    EXPECT(vault_iter_free(NULL), VAULT_OK);
    EXPECT(vault_iter_next(NULL, &item), VAULT_ERR_PARAM);

    /* One group. */
    EXPECT(vault_list(vault, "g.two", &iter), VAULT_OK);
    int count = 0;
    while (vault_iter_next(iter, &item) == VAULT_OK) {
        CHECK(strcmp(item.group, "g.two") == 0);
        count++;
    }
    CHECK(count == 2);
    /* An iterator outlives its vault handle. */
    EXPECT(vault_list(vault, "g.one", &iter), VAULT_OK);
    EXPECT(vault_close(vault), VAULT_OK);
    count = 0;
    while (vault_iter_next(iter, &item) == VAULT_OK) count++;
    CHECK(count == 3);
    EXPECT(vault_iter_free(iter), VAULT_OK);

    vault = open_or_die(path, "app.list", groups, 2);
    EXPECT(vault_list(vault, NULL, NULL), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_iter");
    iter = (vault_iter_t *)&count;
    EXPECT(vault_list(vault, "no/such", &iter), VAULT_ERR_PARAM);
    CHECK(iter == NULL);
    EXPECT(vault_close(vault), VAULT_OK);
}

static int uuid_is_zero(const uint8_t *uuid) {
    for (int i = 0; i < VAULT_UUID_LENGTH; i++)
        if (uuid[i]) return 0;
    return 1;
}

static void test_device_id(void) {
    char path[4096];
    vault_path(path, sizeof path, "device");
    vault_t *vault = open_or_die(path, "app.device", NULL, 0);
    uint8_t first[VAULT_UUID_LENGTH] = {0}, again[VAULT_UUID_LENGTH] = {0}, other[VAULT_UUID_LENGTH] = {0};
    uint8_t created = 7;

    EXPECT(vault_device_id(vault, NULL, first, &created), VAULT_OK);
    CHECK(created == 1);
    CHECK(!uuid_is_zero(first));
    CHECK((first[6] >> 4) == 4);         /* version 4 */
    CHECK((first[8] & 0xC0) == 0x80);    /* RFC variant */
    created = 7;
    EXPECT(vault_device_id(vault, NULL, again, &created), VAULT_OK);
    CHECK(created == 0);
    CHECK(memcmp(first, again, VAULT_UUID_LENGTH) == 0);
    EXPECT(vault_device_id(vault, "vault", again, NULL), VAULT_OK); /* NULL means "vault" */
    CHECK(memcmp(first, again, VAULT_UUID_LENGTH) == 0);
    EXPECT(vault_device_id(vault, "instance-2", other, &created), VAULT_OK);
    CHECK(created == 1 && memcmp(first, other, VAULT_UUID_LENGTH) != 0);

    /* A new handle (as a new process would) gets the same identifier. */
    EXPECT(vault_close(vault), VAULT_OK);
    vault = open_or_die(path, "app.device", NULL, 0);
    EXPECT(vault_device_id(vault, NULL, again, &created), VAULT_OK);
    CHECK(created == 0 && memcmp(first, again, VAULT_UUID_LENGTH) == 0);

    EXPECT(vault_device_id(vault, NULL, NULL, &created), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("out_uuid");
    EXPECT(vault_device_id(vault, "\xff", again, &created), VAULT_ERR_PARAM);

    /* A stored value that is not a UUID: decode error. */
    EXPECT(vault_put(vault, NULL, "vault.device-identifier", "broken", bytes("not a uuid"), 10), VAULT_OK);
    EXPECT(vault_device_id(vault, "broken", again, &created), VAULT_ERR_DECODE);
    EXPECT_MESSAGE_CONTAINS("broken");
    EXPECT(vault_close(vault), VAULT_OK);
}

static void test_invalid_handles(void) {
    char path[4096];
    vault_path(path, sizeof path, "handles");
    vault_t *vault = open_or_die(path, "app.handles", NULL, 0);
    EXPECT(vault_put(vault, NULL, "svc", "a", bytes("x"), 1), VAULT_OK);
    vault_iter_t *iter = NULL;
    EXPECT(vault_list(vault, NULL, &iter), VAULT_OK);
    EXPECT(vault_close(vault), VAULT_OK);

    uint8_t buffer[8], uuid[VAULT_UUID_LENGTH], created = 0, *secret = NULL;
    uint64_t length = 0;
    vault_iter_t *no_iter = NULL;
    /* A closed handle, a forged one, and an iterator passed as a vault: each is detected. */
    vault_t *bad[] = {vault, (vault_t *)(uintptr_t)0x1234, (vault_t *)(void *)iter, (vault_t *)(void *)buffer};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vault_t *h = bad[i];
        EXPECT(vault_put(h, NULL, "svc", "a", bytes("x"), 1), VAULT_ERR_INVALID_HANDLE);
        EXPECT_MESSAGE_CONTAINS("vault_t");
        EXPECT(vault_add(h, NULL, "svc", "b", bytes("x"), 1), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_get(h, NULL, "svc", "a", buffer, sizeof buffer, &length), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_get_secret(h, NULL, "svc", "a", &secret, &length), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_remove(h, NULL, "svc", "a"), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_list(h, NULL, &no_iter), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_device_id(h, NULL, uuid, &created), VAULT_ERR_INVALID_HANDLE);
        EXPECT(vault_close(h), VAULT_ERR_INVALID_HANDLE);
    }
    /* A vault handle passed as an iterator. */
    vault_t *live = open_or_die(path, "app.handles", NULL, 0);
    vault_item_t item;
    EXPECT(vault_iter_next((vault_iter_t *)(void *)live, &item), VAULT_ERR_INVALID_HANDLE);
    EXPECT(vault_iter_free((vault_iter_t *)(void *)live), VAULT_ERR_INVALID_HANDLE);
    EXPECT(vault_close(live), VAULT_OK);
    /* NULL handles are parameter errors. */
    EXPECT(vault_put(NULL, NULL, "svc", "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT_MESSAGE_CONTAINS("vault is NULL");
    EXPECT(vault_add(NULL, NULL, "svc", "a", bytes("x"), 1), VAULT_ERR_PARAM);
    EXPECT(vault_get(NULL, NULL, "svc", "a", buffer, sizeof buffer, &length), VAULT_ERR_PARAM);
    EXPECT(vault_get_secret(NULL, NULL, "svc", "a", &secret, &length), VAULT_ERR_PARAM);
    EXPECT(vault_remove(NULL, NULL, "svc", "a"), VAULT_ERR_PARAM);
    EXPECT(vault_list(NULL, NULL, &no_iter), VAULT_ERR_PARAM);
    EXPECT(vault_device_id(NULL, NULL, uuid, &created), VAULT_ERR_PARAM);
    /* The iterator taken before the close still works. */
    EXPECT(vault_iter_next(iter, &item), VAULT_OK);
    EXPECT(vault_iter_free(iter), VAULT_OK);
}

/* ------------------------------------------------------------------------------------------------ */
/* Threads                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

enum { THREADS = 6, ROUNDS = 40 };

struct worker {
    vault_t *vault;
    const char *path;
    int index;
    int errors;
    uint8_t uuid[VAULT_UUID_LENGTH];
    uint8_t created;
};

static void *put_get_worker(void *argument) {
    struct worker *w = argument;
    char account[32], secret[64], text[64];
    snprintf(account, sizeof account, "thread-%d", w->index);
    for (int round = 0; round < ROUNDS; round++) {
        int length = snprintf(secret, sizeof secret, "value-%d-%d", w->index, round);
        if (vault_put(w->vault, NULL, "threads", account, bytes(secret), (uint64_t)length) != VAULT_OK) w->errors++;
        if (get_text(w->vault, NULL, "threads", account, text, sizeof text) != VAULT_OK) w->errors++;
        else if (strcmp(text, secret) != 0) w->errors++;
        /* A failure on this thread sets this thread's message only. */
        if (get_text(w->vault, NULL, "threads", "nobody", text, sizeof text) != VAULT_ERR_NOT_FOUND) w->errors++;
        if (strstr(vault_last_error_message(), "nobody") == NULL) w->errors++;
        if (get_text(w->vault, NULL, "threads", account, text, sizeof text) != VAULT_OK) w->errors++;
        if (strcmp(vault_last_error_message(), "") != 0) w->errors++;
    }
    return NULL;
}

static void *device_id_worker(void *argument) {
    struct worker *w = argument;
    vault_t *vault = NULL;
    if (vault_open(w->path, "app.threads", NULL, 0, 0, &vault) != VAULT_OK) {
        w->errors++;
        return NULL;
    }
    if (vault_device_id(vault, "raced", w->uuid, &w->created) != VAULT_OK) w->errors++;
    if (vault_close(vault) != VAULT_OK) w->errors++;
    return NULL;
}

struct closer {
    vault_t *vault;
    int unexpected;
    int ok;
};

static void *get_until_closed(void *argument) {
    struct closer *c = argument;
    char text[16];
    for (int i = 0; i < 2000; i++) {
        int32_t status = get_text(c->vault, NULL, "threads", "thread-0", text, sizeof text);
        if (status == VAULT_ERR_INVALID_HANDLE) return NULL;
        if (status == VAULT_OK) c->ok++;
        else c->unexpected++;
    }
    return NULL;
}

static void test_threads(void) {
    char path[4096];
    vault_path(path, sizeof path, "threads");
    vault_t *vault = open_or_die(path, "app.threads", NULL, 0);
    pthread_t threads[THREADS];
    struct worker workers[THREADS];

    /* One handle shared by many threads. */
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.vault = vault, .path = path, .index = i};
        CHECK(pthread_create(&threads[i], NULL, put_get_worker, &workers[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].errors == 0);
    }
    /* The main thread's message was not touched by the workers. */
    CHECK(strcmp(vault_last_error_message(), "") == 0);

    /* Racing creators of one device identifier, each with its own handle: one UUID, one creator. */
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.path = path, .index = i};
        CHECK(pthread_create(&threads[i], NULL, device_id_worker, &workers[i]) == 0);
    }
    int creators = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].errors == 0);
        creators += workers[i].created;
        CHECK(memcmp(workers[i].uuid, workers[0].uuid, VAULT_UUID_LENGTH) == 0);
    }
    CHECK(creators == 1);

    /* Closing a handle while another thread uses it: that thread sees OK, then INVALID_HANDLE. */
    struct closer closer = {.vault = vault};
    pthread_t reader;
    CHECK(pthread_create(&reader, NULL, get_until_closed, &closer) == 0);
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    EXPECT(vault_close(vault), VAULT_OK);
    pthread_join(reader, NULL);
    CHECK(closer.unexpected == 0);
}

/* ------------------------------------------------------------------------------------------------ */

static void test_history(void) {
    char path[4096];
    vault_path(path, sizeof path, "history");
    vault_t *vault = open_or_die(path, "app.history", NULL, 0);
    char text[64];
    uint64_t version = 0;

    /* Check-and-set: 0 means "no item yet"; a stale version changes nothing. */
    EXPECT(vault_put_if_version(vault, NULL, "db", "app", bytes("one"), 3, 0, &version), VAULT_OK);
    CHECK(version == 1);
    EXPECT(vault_put_if_version(vault, NULL, "db", "app", bytes("two"), 3, 1, &version), VAULT_OK);
    CHECK(version == 2);
    EXPECT(vault_put_if_version(vault, NULL, "db", "app", bytes("late"), 4, 1, &version), VAULT_ERR_DUPLICATE);
    EXPECT_MESSAGE_CONTAINS("version 2 is current");
    CHECK(version == 0);
    EXPECT(get_text(vault, NULL, "db", "app", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "two") == 0);

    /* The list, with size negotiation. */
    EXPECT(vault_remove(vault, NULL, "db", "app"), VAULT_OK);
    uint64_t count = 0;
    EXPECT(vault_history(vault, NULL, "db", "app", NULL, 0, &count), VAULT_ERR_BUFFER_TOO_SMALL);
    CHECK(count == 3);
    vault_version_t versions[3];
    memset(versions, 0, sizeof versions);
    EXPECT(vault_history(vault, NULL, "db", "app", versions, 3, &count), VAULT_OK);
    CHECK(count == 3 && versions[0].number == 1 && versions[1].number == 2 && versions[2].number == 3);
    CHECK(versions[2].is_deletion == 1 && versions[2].is_current == 0 && versions[0].is_deletion == 0);
    CHECK(versions[0].writer_uid == (int64_t)geteuid() && versions[0].written_unix_ms > 0);
    EXPECT(vault_history(vault, NULL, "db", "app", NULL, 3, &count), VAULT_ERR_PARAM);
    EXPECT(vault_history(vault, NULL, "db", "none", versions, 3, &count), VAULT_ERR_NOT_FOUND);

    /* An old version's secret, in secure memory; a deletion holds none. */
    uint8_t *secret = NULL;
    uint64_t length = 0;
    EXPECT(vault_get_version(vault, NULL, "db", "app", 1, &secret, &length), VAULT_OK);
    CHECK(secret != NULL && length == 3 && memcmp(secret, "one", 3) == 0);
    EXPECT(vault_free_secret(secret), VAULT_OK);
    EXPECT(vault_get_version(vault, NULL, "db", "app", 3, &secret, &length), VAULT_ERR_PARAM);
    CHECK(secret == NULL && length == 0);
    EXPECT(vault_get_version(vault, NULL, "db", "app", 9, &secret, &length), VAULT_ERR_NOT_FOUND);

    /* Restore after the remove, then purge. */
    EXPECT(vault_restore(vault, NULL, "db", "app", 1, &version), VAULT_OK);
    CHECK(version == 4);
    EXPECT(get_text(vault, NULL, "db", "app", text, sizeof text), VAULT_OK);
    CHECK(strcmp(text, "one") == 0);
    EXPECT(vault_restore(vault, NULL, "db", "app", 3, &version), VAULT_ERR_PARAM);
    EXPECT(vault_purge(vault, NULL, "db", "app"), VAULT_OK);
    EXPECT(vault_history(vault, NULL, "db", "app", versions, 3, &count), VAULT_ERR_NOT_FOUND);
    EXPECT(vault_purge(vault, NULL, "db", "app"), VAULT_ERR_NOT_FOUND);

    EXPECT(vault_close(vault), VAULT_OK);
}

static int run_suite(const char *directory) {
    scratch = directory;
    test_exports();
    test_strerror();
    test_open();
    test_put_get();
    test_add_remove();
    test_get_secret();
    test_groups_and_entitlements();
    test_list();
    test_device_id();
    test_history();
    test_invalid_handles();
    test_threads();
    if (failures) {
        fprintf(stderr, "test_vault: %d of %d checks FAILED\n", failures, checks);
        return 1;
    }
    printf("test_vault: all %d checks passed\n", checks);
    return 0;
}

/* The C side of the cross test: put or get one item. */
static int cross(int argc, char **argv) {
    int put = strcmp(argv[1], "put") == 0;
    if ((put && argc != 7) || (!put && argc != 6)) {
        fprintf(stderr, "usage: test_vault put VAULT APP SERVICE ACCOUNT SECRET | get VAULT APP SERVICE ACCOUNT\n");
        return 2;
    }
    vault_t *vault = NULL;
    int32_t status = vault_open(argv[2], argv[3], NULL, 0, VAULT_OPEN_CREATE, &vault);
    if (status == VAULT_OK && put) {
        status = vault_put(vault, NULL, argv[4], argv[5], bytes(argv[6]), strlen(argv[6]));
    } else if (status == VAULT_OK) {
        uint8_t *secret = NULL;
        uint64_t length = 0;
        status = vault_get_secret(vault, NULL, argv[4], argv[5], &secret, &length);
        if (status == VAULT_OK) {
            fwrite(secret, 1, (size_t)length, stdout);
            status = vault_free_secret(secret);
        }
    }
    if (status != VAULT_OK) {
        fprintf(stderr, "test_vault %s: %s: %s\n", argv[1], vault_strerror(status), vault_last_error_message());
    }
    if (vault) vault_close(vault);
    return status == VAULT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "suite") == 0) return run_suite(argv[2]);
    if (argc >= 2 && (strcmp(argv[1], "put") == 0 || strcmp(argv[1], "get") == 0)) return cross(argc, argv);
    fprintf(stderr, "usage: test_vault suite DIR | put ... | get ...\n");
    return 2;
}
