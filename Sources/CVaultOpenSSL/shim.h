// OpenSSL's libcrypto from Debian's libssl-dev: the Secret Service's session algorithm (the IETF
// 1024-bit group's Diffie-Hellman, HKDF-SHA256, AES-128-CBC), for VaultSecretService's one wrapper.
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
