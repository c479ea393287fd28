#ifndef VAULT_CSODIUM_SHIM_H
#define VAULT_CSODIUM_SHIM_H
#include <sodium.h>
#endif
