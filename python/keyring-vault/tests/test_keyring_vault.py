"""keyring-vault against the real keyring package and its CLI (scripts/test-python-keyring runs it).

Needs: keyring installed with this package, libvault.so on the loader's path (or VAULT_LIBRARY),
VAULT_DIR pointing at a scratch vault, and VAULT_CLI naming the vault CLI (to check that the items are
the CLI's items).
"""

import os
import subprocess
import sys
import tempfile
import unittest

import keyring
import keyring.errors

from keyring_vault import VaultKeyring


def cli(*arguments):
    return subprocess.run([os.environ["VAULT_CLI"], *arguments], capture_output=True, text=True, check=False)


class VaultKeyringTests(unittest.TestCase):
    def setUp(self):
        self.backend = VaultKeyring()

    def test_set_get_delete_and_a_non_ascii_value(self):
        self.backend.set_password("svc-a", "alice", "pässwörd ✓ with spaces = and =")
        self.assertEqual(self.backend.get_password("svc-a", "alice"), "pässwörd ✓ with spaces = and =")
        self.assertIsNone(self.backend.get_password("svc-a", "bob"))
        self.backend.delete_password("svc-a", "alice")
        self.assertIsNone(self.backend.get_password("svc-a", "alice"))
        with self.assertRaises(keyring.errors.PasswordDeleteError):
            self.backend.delete_password("svc-a", "alice")

    def test_get_credential_with_and_without_a_username(self):
        self.backend.set_password("svc-c", "carol", "c-pass")
        credential = self.backend.get_credential("svc-c", None)
        self.assertEqual((credential.username, credential.password), ("carol", "c-pass"))
        self.assertEqual(self.backend.get_credential("svc-c", "carol").password, "c-pass")
        self.assertIsNone(self.backend.get_credential("svc-c", "nobody"))
        self.assertIsNone(self.backend.get_credential("no-such-service", None))

    def test_the_items_are_the_clis(self):
        self.backend.set_password("svc-cli", "dave", "from-python")
        listed = cli("ls", "--service", "svc-cli")
        self.assertIn("svc-cli\tdave", listed.stdout, listed.stderr)
        self.assertEqual(cli("get", "svc-cli", "dave").stdout, "from-python")
        subprocess.run([os.environ["VAULT_CLI"], "put", "svc-cli", "erin"], input="from-cli", text=True, check=True)
        self.assertEqual(self.backend.get_password("svc-cli", "erin"), "from-cli")

    def test_chosen_by_default_over_the_file_backends(self):
        # With no desktop keyring, keyring's own choice (no PYTHON_KEYRING_BACKEND, no config file):
        # the chainer of the viable backends, vault first, since the file backends rank below it.
        chosen = subprocess.run(
            [sys.executable, "-c", "import keyring; k = keyring.get_keyring(); "
             "print(type(k).__name__, *[type(b).__name__ for b in getattr(k, 'backends', [])])"],
            capture_output=True, text=True, check=True,
            env={key: value for key, value in os.environ.items() if key != "PYTHON_KEYRING_BACKEND"})
        names = chosen.stdout.split()
        self.assertIn(names[0], ("VaultKeyring", "ChainerBackend"), chosen.stdout)
        if names[0] == "ChainerBackend":
            self.assertEqual(names[1], "VaultKeyring", chosen.stdout)

    def test_reading_a_vault_that_does_not_exist_creates_nothing(self):
        missing = os.path.join(tempfile.mkdtemp(), "typo", "vault")
        saved = os.environ.get("VAULT_DIR")
        os.environ["VAULT_DIR"] = missing
        try:
            self.assertIsNone(VaultKeyring().get_password("svc", "user"))
            self.assertFalse(os.path.exists(missing))
        finally:
            os.environ["VAULT_DIR"] = saved

    def test_the_keyring_cli_across_processes(self):
        run = lambda *a, **k: subprocess.run([sys.executable, "-m", "keyring", *a], capture_output=True, text=True, **k)
        environment = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring_vault.backend.VaultKeyring")
        stored = run("set", "svc-k", "frank", input="ünïcode secret\n", env=environment)
        self.assertEqual(stored.returncode, 0, stored.stderr)
        got = run("get", "svc-k", "frank", env=environment)
        self.assertEqual(got.stdout, "ünïcode secret\n", got.stderr)
        self.assertEqual(run("del", "svc-k", "frank", env=environment).returncode, 0)
        self.assertNotEqual(run("get", "svc-k", "frank", env=environment).returncode, 0)

    def test_a_nul_in_a_name_is_refused_not_truncated(self):
        self.backend.set_password("svc-nul", "u", "kept")
        for service, username in (("svc-nul\0x", "u"), ("svc-nul", "u\0x")):
            with self.assertRaises(ValueError):
                self.backend.set_password(service, username, "overwritten")
            with self.assertRaises(ValueError):
                self.backend.get_password(service, username)
        self.assertEqual(self.backend.get_password("svc-nul", "u"), "kept")

    def test_a_password_that_is_not_text_is_keyrings_error(self):
        subprocess.run([os.environ["VAULT_CLI"], "put", "svc-bin", "u"], input=b"a\xffb", check=True)
        with self.assertRaises(keyring.errors.KeyringError):
            self.backend.get_password("svc-bin", "u")

    def test_a_missing_library_is_named_not_hidden(self):
        # keyring alone would only say "No recommended backend was available".
        environment = dict(os.environ, VAULT_LIBRARY="/nonexistent/libvault.so")
        environment.pop("PYTHON_KEYRING_BACKEND", None)
        got = subprocess.run([sys.executable, "-m", "keyring", "get", "svc", "user"], capture_output=True,
                             text=True, env=environment, check=False)
        self.assertIn("keyring-vault: libvault.so cannot be loaded", got.stderr)
        self.assertIn("/nonexistent/libvault.so", got.stderr)
        self.assertIn("VAULT_LIBRARY", got.stderr)

    def test_the_example_without_the_library_ends_with_a_message(self):
        example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python", "vault_example.py")
        environment = dict(os.environ, VAULT_LIBRARY="/nonexistent/libvault.so")
        got = subprocess.run([sys.executable, example, tempfile.mkdtemp()], capture_output=True, text=True,
                             env=environment, check=False)
        self.assertNotEqual(got.returncode, 0)
        self.assertNotIn("Traceback", got.stderr)
        self.assertIn("cannot load /nonexistent/libvault.so", got.stderr)
        self.assertIn("VAULT_LIBRARY", got.stderr)


if __name__ == "__main__":
    unittest.main()
