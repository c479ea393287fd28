/*
 * vault.h — the C API of vault, the encrypted keychain for Linux.
 *
 * This header is the single source of truth for the C API. It is implemented by the VaultCAPI target
 * (Swift `@c @implementation` functions, which the Swift compiler checks against these declarations)
 * and built as libvault.so: link with -lvault. docs/C-API.md is the guide; this header is the reference.
 *
 * Conventions, for every function below:
 *   - Every function but the two error-message functions returns an int32_t status: VAULT_OK (0) or a
 *     negative code with the value of the matching errSec* constant of Apple's Security framework. No
 *     failure is reported any other way: no signal, no abort, no exception crosses into C (short of the
 *     process running out of memory).
 *   - Integer parameters are fixed-width (uint8_t, uint32_t, uint64_t, int32_t, int64_t): no int, long,
 *     size_t, bool or enum types, so that every FFI sees the same layout.
 *   - Strings are NUL-terminated UTF-8 and only read during the call; invalid UTF-8 is VAULT_ERR_PARAM.
 *   - Every pointer is checked: a NULL where one is required is VAULT_ERR_PARAM. "May be NULL" says
 *     what NULL means where it is allowed.
 *   - The library never keeps a pointer the caller passed in. What it hands out (handles, iterators,
 *     secrets, strings) is owned as each function says.
 *   - Every function is thread-safe. A vault_t may be used by many threads at once; a vault_iter_t too,
 *     though the order in which concurrent vault_iter_next calls see the items is then unspecified.
 *   - On failure, vault_last_error_message() names the item, group or path concerned (never a secret).
 *   - Fleet groups (a group whose items are kept in etcd, made with `vault group create NAME --etcd` or
 *     the Swift API) work through every function as any other group. A write to one while its etcd
 *     cluster cannot be reached or has no quorum fails with VAULT_ERR_NOT_AVAILABLE and changes nothing,
 *     here or in etcd; a read is then answered from this machine's copy, which
 *     vault_fleet_cache_status says.
 */
#ifndef VAULT_H
#define VAULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Status codes: 0 is success; failures keep the values of Apple's errSec* constants (named in the
 * comments).
 */
enum {
    VAULT_OK = 0,                                /* errSecSuccess */
    VAULT_ERR_UNIMPLEMENTED = -4,                /* errSecUnimplemented: not offered by this vault */
    VAULT_ERR_IO = -36,                          /* errSecIO: an input/output failure */
    VAULT_ERR_PARAM = -50,                       /* errSecParam: a NULL, a bad length, bad UTF-8, bad flags */
    VAULT_ERR_PERMISSION = -61,                  /* errSecWrPerm: access denied, or a vault file is unsafe */
    VAULT_ERR_ALLOCATE = -108,                   /* errSecAllocate: memory could not be allocated */
    VAULT_ERR_INTERNAL = -2070,                  /* errSecInternalComponent: an unexpected internal failure */
    VAULT_ERR_NOT_AVAILABLE = -25291,            /* errSecNotAvailable: etcd unreachable, or no libsodium */
    VAULT_ERR_NO_SUCH_VAULT = -25294,            /* errSecNoSuchKeychain: no vault at the path */
    VAULT_ERR_INVALID_HANDLE = -25295,           /* errSecInvalidKeychain: not a live vault_t/vault_iter_t */
    VAULT_ERR_DUPLICATE_VAULT = -25296,          /* errSecDuplicateKeychain: a vault exists at the path */
    VAULT_ERR_DUPLICATE = -25299,                /* errSecDuplicateItem: the item already exists */
    VAULT_ERR_NOT_FOUND = -25300,                /* errSecItemNotFound: no such item (or no more items) */
    VAULT_ERR_BUFFER_TOO_SMALL = -25301,         /* errSecBufferTooSmall: see vault_get */
    VAULT_ERR_NO_SUCH_ATTR = -25303,             /* errSecNoSuchAttr */
    VAULT_ERR_NO_SUCH_CLASS = -25306,            /* errSecNoSuchClass */
    VAULT_ERR_INTERACTION_NOT_ALLOWED = -25308,  /* errSecInteractionNotAllowed: the vault is locked */
    VAULT_ERR_DECODE = -26275,                   /* errSecDecode: a file failed its integrity check */
    VAULT_ERR_MISSING_ENTITLEMENT = -34018       /* errSecMissingEntitlement: a group the client lacks */
};

/** Flags of vault_open (a bit mask; any other bit is VAULT_ERR_PARAM). */
enum {
    VAULT_OPEN_CREATE = 1 /* create the vault (directory, master.key, marker) when there is none */
};

/** The length of a device identifier: the 16 bytes of a UUID, in RFC 9562 network order. */
enum { VAULT_UUID_LENGTH = 16 };

/**
 * The longest secret vault_put and vault_add accept (16 MiB); a longer secret_len is VAULT_ERR_PARAM
 * and the bytes are not read. (An item is stored with its attributes, so a secret very close to this
 * limit can still be refused by the store with VAULT_ERR_IO.)
 */
enum { VAULT_MAX_SECRET_LENGTH = 16777216 };

/**
 * An open vault, seen as one client (an application identifier and its access groups). Opaque: it is
 * a handle, not an address; it is never dereferenced, and a closed or forged handle is reported as
 * VAULT_ERR_INVALID_HANDLE (handles are never reused, so a stale one is always detected).
 */
typedef struct vault vault_t;

/** An iterator over the attributes of items (never their secrets): see vault_list. Opaque, like vault_t. */
typedef struct vault_iter vault_iter_t;

/**
 * The attributes of one generic-password item, filled by vault_iter_next. Every string is NUL-terminated
 * UTF-8 owned by the iterator: valid until vault_iter_free on that iterator, even across later
 * vault_iter_next calls. Do not free or modify them.
 */
typedef struct vault_item {
    const char *group;        /* the access group the item lives in; never NULL */
    const char *service;      /* kSecAttrService; "" when the item has none; never NULL */
    const char *account;      /* kSecAttrAccount; "" when the item has none; never NULL */
    const char *label;        /* kSecAttrLabel; NULL when the item has none */
    int64_t created_unix_ms;  /* creation date, milliseconds since 1970-01-01T00:00:00Z */
    int64_t modified_unix_ms; /* modification date, milliseconds since 1970-01-01T00:00:00Z */
} vault_item_t;

/* ---------------------------------------------------------------------------------------------- */
/* Errors                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

/**
 * A static English description of `status`, e.g. "errSecItemNotFound: the item could not be found".
 * Never NULL; an unknown status gives "unknown status". The string is owned by the library and lives as
 * long as the process: never free it. Does not change vault_last_error_message().
 */
const char *vault_strerror(int32_t status);

/**
 * The message of the last failed vault_* call on the calling thread, naming the item, group or path
 * concerned and the fix where there is one; "" after a successful call. Thread-local: one thread never
 * sees another's message. Never NULL. The string is owned by the library: valid until the calling
 * thread's next call to a vault_* function other than vault_strerror and vault_last_error_message (or
 * until the thread exits); copy it to keep it. Never free it.
 */
const char *vault_last_error_message(void);

/* ---------------------------------------------------------------------------------------------- */
/* Opening and closing                                                                             */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Opens the vault at `path` as the client with application identifier `app_id` and access groups
 * `groups[0..ngroups)`, and stores a new handle in `*out_vault`.
 *
 *   path       may be NULL: $VAULT_DIR, else /var/lib/vault for root, else $XDG_DATA_HOME/vault
 *              (~/.local/share/vault).
 *   app_id     may be NULL (or ""): a client without an application identifier (then it has only
 *              `groups`).
 *              The application identifier is itself an access group, after the listed ones.
 *   groups     the client's access groups in order; the first one (else app_id) is where items are
 *              added when no group is given. May be NULL only when ngroups is 0. Each element must be
 *              a non-NULL string. Group names: [A-Za-z0-9._-], 1-200 bytes, not starting with '.'.
 *   flags      0 or VAULT_OPEN_CREATE.
 *   out_vault  required; receives the handle, owned by the caller, who must release it with
 *              vault_close. Set to NULL on failure.
 *
 * Errors: VAULT_ERR_PARAM (NULL out_vault, NULL group element, bad name or flags),
 * VAULT_ERR_NO_SUCH_VAULT (no vault and no VAULT_OPEN_CREATE), VAULT_ERR_PERMISSION (an unsafe
 * master.key or directory; the message says which chmod/chown fixes it), VAULT_ERR_DECODE, VAULT_ERR_IO.
 */
int32_t vault_open(const char *path, const char *app_id, const char *const *groups, uint32_t ngroups,
                   uint32_t flags, vault_t **out_vault);

/**
 * Closes a handle from vault_open. Afterwards the handle is invalid: every function given it returns
 * VAULT_ERR_INVALID_HANDLE. Calls already running on other threads with this handle finish normally.
 * Iterators made from it stay valid. NULL is a no-op (VAULT_OK).
 *
 * Errors: VAULT_ERR_INVALID_HANDLE (not a live handle, e.g. closed twice).
 */
int32_t vault_close(vault_t *vault);

/* ---------------------------------------------------------------------------------------------- */
/* Items: generic passwords named by (group, service, account)                                     */
/*                                                                                                  */
/* In the functions below, `group` may be NULL: a write goes to the client's first access group and */
/* a read or removal searches every group of the client. A group the client does not have is        */
/* VAULT_ERR_MISSING_ENTITLEMENT. `service` is required (it may be ""); `account` may be NULL,      */
/* meaning "" (Apple's rule for a missing account). Service and account are at most 4096 bytes.    */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Stores `secret[0..secret_len)` under (group, service, account): adds the item or replaces its secret,
 * as one atomic operation under the vault's lock. `secret` may be NULL only when secret_len is 0 (an
 * empty secret). The bytes are copied; the caller keeps ownership of `secret`.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM (also a secret_len over VAULT_MAX_SECRET_LENGTH, and
 * in a fleet group an item over its 768 KiB limit), VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_NOT_AVAILABLE
 * (a fleet group's etcd is out of reach: nothing was changed), VAULT_ERR_IO.
 */
int32_t vault_put(vault_t *vault, const char *group, const char *service, const char *account,
                  const uint8_t *secret, uint64_t secret_len);

/**
 * Adds a new item, as vault_put, but fails with VAULT_ERR_DUPLICATE when an item with this group,
 * service and account exists; the existing item is left unchanged. (With group NULL, the item goes to
 * the client's first group, and only that group is checked for a duplicate.)
 *
 * Errors: as vault_put, plus VAULT_ERR_DUPLICATE.
 */
int32_t vault_add(vault_t *vault, const char *group, const char *service, const char *account,
                  const uint8_t *secret, uint64_t secret_len);

/**
 * Copies the secret of the item (group, service, account) into the caller's `buffer`, with size
 * negotiation:
 *
 *   out_len      required; receives the secret's length in bytes, whether or not it fits.
 *   buffer       caller-owned, `buffer_size` bytes; may be NULL only when buffer_size is 0 (to ask for
 *                the length). Written only on VAULT_OK, and only its first *out_len bytes.
 *
 * When buffer_size < *out_len the result is VAULT_ERR_BUFFER_TOO_SMALL, `buffer` is untouched, and
 * *out_len says how much to allocate; call again. The caller should wipe the buffer after use (the
 * item's bytes may still change between the two calls; a second VAULT_ERR_BUFFER_TOO_SMALL is
 * possible). On any other failure *out_len is 0.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_NOT_FOUND, VAULT_ERR_BUFFER_TOO_SMALL,
 * VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_DECODE, VAULT_ERR_IO.
 */
int32_t vault_get(const vault_t *vault, const char *group, const char *service, const char *account,
                  uint8_t *buffer, uint64_t buffer_size, uint64_t *out_len);

/**
 * Returns the secret of the item (group, service, account) in a new buffer from secure memory
 * (libsodium's sodium_malloc: locked against swap, excluded from core dumps, between guard pages).
 *
 *   out_secret  required; receives the buffer (never NULL on VAULT_OK, even for an empty secret),
 *               owned by the caller, who must release it with vault_free_secret, never free(3).
 *               Set to NULL on failure.
 *   out_len     required; receives the secret's length (0 on failure).
 *
 * Errors: as vault_get (without VAULT_ERR_BUFFER_TOO_SMALL), plus VAULT_ERR_ALLOCATE.
 */
int32_t vault_get_secret(const vault_t *vault, const char *group, const char *service, const char *account,
                         uint8_t **out_secret, uint64_t *out_len);

/**
 * Wipes and frees a buffer from vault_get_secret. NULL is a no-op (VAULT_OK). A pointer that
 * vault_get_secret did not return, or one already freed, is VAULT_ERR_PARAM and is left alone.
 */
int32_t vault_free_secret(uint8_t *secret);

/**
 * Removes the item (group, service, account); with group NULL, the matching item in every group of the
 * client.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_NOT_FOUND, VAULT_ERR_MISSING_ENTITLEMENT,
 * VAULT_ERR_NOT_AVAILABLE (a fleet group's etcd is out of reach: nothing was removed), VAULT_ERR_IO.
 */
int32_t vault_remove(vault_t *vault, const char *group, const char *service, const char *account);

/**
 * Starts an iteration over the generic-password items the client can see — in `group`, or in all its
 * groups when group is NULL — sorted by group, service and account. The iterator is a snapshot taken
 * now: later changes to the vault do not affect it, and it stays valid after vault_close. It carries
 * attributes only, never secrets.
 *
 *   out_iter  required; receives the iterator, owned by the caller, who must release it with
 *             vault_iter_free. Set to NULL on failure. An empty vault gives an iterator with no items.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_DECODE,
 * VAULT_ERR_IO.
 */
int32_t vault_list(const vault_t *vault, const char *group, vault_iter_t **out_iter);

/**
 * Moves to the next item and fills `*out_item` (required, caller-owned storage; the strings it points
 * to belong to the iterator: see vault_item_t). Returns VAULT_OK with an item, or VAULT_ERR_NOT_FOUND
 * when there are no more items (then `*out_item` is zeroed); every later call returns VAULT_ERR_NOT_FOUND
 * too.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM (NULL out_item), VAULT_ERR_NOT_FOUND (the end).
 */
int32_t vault_iter_next(vault_iter_t *iter, vault_item_t *out_item);

/**
 * Frees an iterator from vault_list and every string it handed out. NULL is a no-op (VAULT_OK).
 *
 * Errors: VAULT_ERR_INVALID_HANDLE (not a live iterator, e.g. freed twice).
 */
int32_t vault_iter_free(vault_iter_t *iter);

/* ---------------------------------------------------------------------------------------------- */
/* History: every change to an item keeps the previous version (the vault keeps 10 by default;       */
/* `vault config versions N`). A deletion is a version too (it holds no secret), so a removed item   */
/* can be restored. Fleet groups keep no history.                                                    */
/* ---------------------------------------------------------------------------------------------- */

/** One version of an item, filled by vault_history. */
typedef struct vault_version {
    uint64_t number;          /* 1 for the item's first version, +1 for every change (a deletion too) */
    int64_t written_unix_ms;  /* when it was written, milliseconds since 1970-01-01T00:00:00Z */
    int64_t writer_uid;       /* the effective uid that wrote it; -1 when it was not recorded */
    uint8_t is_current;       /* 1 for the item's current version */
    uint8_t is_deletion;      /* 1 for a deletion: it holds no secret */
} vault_version_t;

/**
 * Lists the versions of the item (group, service, account), oldest first (the current one, if the item
 * has not been removed, last), with size negotiation as vault_get: `versions` is caller-owned storage
 * for `capacity` entries (NULL only when capacity is 0), and `out_count` (required) receives how many
 * there are. When capacity < *out_count the result is VAULT_ERR_BUFFER_TOO_SMALL and `versions` is
 * untouched. Never a secret; the program that wrote each version is in `vault history`.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_NOT_FOUND (no item and no version of it),
 * VAULT_ERR_BUFFER_TOO_SMALL, VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_DECODE, VAULT_ERR_IO.
 */
int32_t vault_history(const vault_t *vault, const char *group, const char *service, const char *account,
                      vault_version_t *versions, uint64_t capacity, uint64_t *out_count);

/**
 * Returns the secret of version `version` of the item in a new buffer of secure memory, as
 * vault_get_secret does (release it with vault_free_secret).
 *
 * Errors: as vault_get_secret; VAULT_ERR_NOT_FOUND when the item has no such version (pruned, or never
 * written), VAULT_ERR_PARAM when that version is a deletion.
 */
int32_t vault_get_version(const vault_t *vault, const char *group, const char *service, const char *account,
                          uint64_t version, uint8_t **out_secret, uint64_t *out_len);

/**
 * Check-and-set: stores the secret as vault_put does, but only if the item's current version is
 * `expected_version` (0: only if there is no item), as one step under the group's lock. When another
 * writer changed the item first, nothing is written and the result is VAULT_ERR_DUPLICATE (the last
 * error message says which version is current): read it again and retry. `out_version` may be NULL;
 * it receives the new version's number.
 *
 * Errors: as vault_put, plus VAULT_ERR_DUPLICATE.
 */
int32_t vault_put_if_version(vault_t *vault, const char *group, const char *service, const char *account,
                             const uint8_t *secret, uint64_t secret_len, uint64_t expected_version,
                             uint64_t *out_version);

/**
 * Makes version `version` of the item current again, as a new version (history is never rewritten); it
 * also brings back a removed item. `out_version` may be NULL; it receives the new version's number.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM (also: that version is a deletion),
 * VAULT_ERR_NOT_FOUND (no such version), VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_DECODE, VAULT_ERR_IO.
 */
int32_t vault_restore(vault_t *vault, const char *group, const char *service, const char *account,
                      uint64_t version, uint64_t *out_version);

/**
 * Removes the item and every version of it, beyond restore.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_NOT_FOUND (no item and no version of it),
 * VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_IO.
 */
int32_t vault_purge(vault_t *vault, const char *group, const char *service, const char *account);

/* ---------------------------------------------------------------------------------------------- */
/* Device identity                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

/**
 * The persistent identifier stored under `key` (NULL means "vault", the vault's own identifier): a UUID
 * created on first use and kept in the vault, so that it survives the service being reinstalled.
 * Creation is atomic across threads and processes: all racers get one UUID and exactly one is told it
 * created it. The item lives in the client's first group, as service "vault.device-identifier" with the
 * key as account.
 *
 *   out_uuid     required; caller-owned storage of VAULT_UUID_LENGTH (16) bytes; receives the UUID.
 *   out_created  may be NULL; receives 1 when this call created the identifier, else 0.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM, VAULT_ERR_MISSING_ENTITLEMENT, VAULT_ERR_DECODE
 * (the stored value is not a UUID), VAULT_ERR_NOT_AVAILABLE (the first group is a fleet group whose etcd
 * is out of reach, and the identifier is to be created), VAULT_ERR_IO.
 */
int32_t vault_device_id(vault_t *vault, const char *key, uint8_t *out_uuid, uint8_t *out_created);

/* ---------------------------------------------------------------------------------------------- */
/* Fleet groups (docs/FLEET.md): groups whose items every machine shares through etcd.             */
/* ---------------------------------------------------------------------------------------------- */

/**
 * How this process last answered a read of fleet group `group`. A long-lived handle answers from its
 * cache while its watch on etcd is live and its last check is under a second old; with etcd out of
 * reach it answers from the cache as it was when last confirmed. Ask right after a read: another
 * thread's read of the group updates the status too.
 *
 *   out_stale             required; receives 1 when the answer came from the cache without etcd's
 *                         confirmation (etcd out of reach), else 0.
 *   out_known_current_ms  may be NULL; receives when the cache was last known to match etcd, in
 *                         milliseconds since the epoch (a lower bound), or 0 when it never was.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE, VAULT_ERR_PARAM (group NULL or not a group name),
 * VAULT_ERR_NOT_FOUND (not a fleet group of this vault, or not read by this process yet).
 */
int32_t vault_fleet_cache_status(const vault_t *vault, const char *group, uint8_t *out_stale,
                                 int64_t *out_known_current_ms);

/**
 * With `required` non-zero, every read of a fleet group through `vault` asks etcd (the watch no longer
 * vouches for the cache) and fails with VAULT_ERR_NOT_AVAILABLE rather than answer from the cache when
 * etcd is out of reach; zero restores the default.
 *
 * Errors: VAULT_ERR_INVALID_HANDLE.
 */
int32_t vault_require_fresh_fleet_reads(vault_t *vault, int32_t required);

#ifdef __cplusplus
}
#endif

#endif /* VAULT_H */
