/*
 * A C service's first read through the C API, as a whole process: vault_open, one vault_get into a
 * stack buffer, the secret to standard output, vault_close, exit. vault-bench (ProcessBench's first-read
 * rows, docs/PERFORMANCE.md) builds it with the system cc against the libVaultC.so it measures and
 * times it next to the CLI's `vault get` of the same item. By hand:
 *
 *   swift build -c release --product VaultC
 *   cc -O2 -std=c11 -Wall -Wextra -Werror -I include -o /tmp/capi-first-read scripts/capi-first-read.c \
 *       -L .build/release -Wl,-rpath,$PWD/.build/release -l:libVaultC.so
 *   /tmp/capi-first-read VAULT_DIR APP_ID SERVICE ACCOUNT
 *
 * Exits 0, 44 when the item is not there, 1 on any other failure (named on standard error).
 */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vault.h"

static int fail(const char *function, int32_t status) {
    fprintf(stderr, "capi-first-read: %s: %s: %s\n", function, vault_strerror(status),
            vault_last_error_message());
    return status == VAULT_ERR_NOT_FOUND ? 44 : 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: capi-first-read VAULT_DIR APP_ID SERVICE ACCOUNT\n");
        return 2;
    }
    vault_t *vault = NULL;
    int32_t status = vault_open(argv[1], argv[2], NULL, 0, 0, &vault);
    if (status != VAULT_OK) return fail("vault_open", status);
    uint8_t secret[4096];
    uint64_t length = 0;
    status = vault_get(vault, NULL, argv[3], argv[4], secret, sizeof secret, &length);
    if (status != VAULT_OK) {
        int code = fail("vault_get", status);
        vault_close(vault);
        return code;
    }
    ssize_t written = write(1, secret, (size_t)length);
    /* The caller owns the buffer and wipes it (docs/C-API.md); memset could be optimised away. */
    explicit_bzero(secret, sizeof secret);
    vault_close(vault);
    return written == (ssize_t)length ? 0 : 1;
}
