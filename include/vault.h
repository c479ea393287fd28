/*
 * vault.h — the C API of vault, the encrypted keychain for Linux.
 *
 * This header is the single source of truth for the C API. It is implemented by the VaultCAPI
 * target (Swift @c exports) and built as libvault.so. The functions arrive with the C API issue;
 * until then this header declares only the status codes, which keep Apple's Security framework values.
 */
#ifndef VAULT_H
#define VAULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes: 0 is success; failures keep the values of Apple's errSec* constants. */
enum {
    VAULT_OK = 0,
    VAULT_ERR_PARAM = -50,
    VAULT_ERR_IO = -36,
    VAULT_ERR_DUPLICATE = -25299,
    VAULT_ERR_NOT_FOUND = -25300,
    VAULT_ERR_INTERACTION_NOT_ALLOWED = -25308,
    VAULT_ERR_DECODE = -26275,
    VAULT_ERR_MISSING_ENTITLEMENT = -34018
};

#ifdef __cplusplus
}
#endif

#endif /* VAULT_H */
