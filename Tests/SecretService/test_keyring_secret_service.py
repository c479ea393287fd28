import keyring.backends.SecretService
from keyring.testing.backend import BackendBasicTests

class TestVaultSecretService(BackendBasicTests):
    def init_keyring(self):
        return keyring.backends.SecretService.Keyring()
