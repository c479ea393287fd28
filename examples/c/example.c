/*
 * A C service's use of the vault (include/vault.h, libvault.so):
 *
 *     example VAULT_DIR
 *
 * Opens the vault at VAULT_DIR (creating it when there is none) as the client "com.example.c", stores a
 * secret, reads it back into secure memory, lists the items the client can see (attributes only), prints
 * the device identifier and removes the item. Every failure prints the status and the library's message,
 * which names the item, group or path concerned, and exits 1.
 *
 * Build (see docs/C-API.md): cc -std=c11 -Wall -Wextra -I include examples/c/example.c -lvault -o example
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vault.h"

static int failed(const char *what, int32_t status) {
    fprintf(stderr, "example: %s: %s: %s\n", what, vault_strerror(status), vault_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s VAULT_DIR\n", argv[0]);
        return 2;
    }
    vault_t *vault = NULL;
    int32_t status = vault_open(argv[1], "com.example.c", NULL, 0, VAULT_OPEN_CREATE, &vault);
    if (status != VAULT_OK) return failed("open", status);

    /* A real service reads its secret from somewhere safe; never from argv or the environment. */
    static const char token[] = "example-token";
    status = vault_put(vault, NULL, "com.example.api", "token", (const uint8_t *)token, sizeof token - 1);
    if (status != VAULT_OK) return failed("put", status);

    uint8_t *secret = NULL;
    uint64_t length = 0;
    status = vault_get_secret(vault, NULL, "com.example.api", "token", &secret, &length);
    if (status != VAULT_OK) return failed("get", status);
    int same = length == sizeof token - 1 && memcmp(secret, token, length) == 0;
    vault_free_secret(secret); /* wipes, unlocks and frees; never free(3) */
    if (!same) {
        fprintf(stderr, "example: the secret read back differs\n");
        return 1;
    }
    printf("stored and read back a %llu-byte secret\n", (unsigned long long)length);

    vault_iter_t *items = NULL;
    status = vault_list(vault, NULL, &items);
    if (status != VAULT_OK) return failed("list", status);
    vault_item_t item;
    while ((status = vault_iter_next(items, &item)) == VAULT_OK) {
        printf("item: group %s, service %s, account %s\n", item.group, item.service, item.account);
    }
    vault_iter_free(items);
    if (status != VAULT_ERR_NOT_FOUND) return failed("list", status);

    uint8_t uuid[VAULT_UUID_LENGTH];
    uint8_t created = 0;
    status = vault_device_id(vault, NULL, uuid, &created);
    if (status != VAULT_OK) return failed("device id", status);
    printf("device id: ");
    for (int i = 0; i < VAULT_UUID_LENGTH; i++) {
        printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", uuid[i]);
    }
    printf(created ? " (created now)\n" : "\n");

    status = vault_remove(vault, NULL, "com.example.api", "token");
    if (status != VAULT_OK) return failed("remove", status);
    vault_close(vault);
    return 0;
}
