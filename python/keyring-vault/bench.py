"""In-process get_password through keyring's API: vault against the plaintext backend of keyrings.alt
and keyrings.cryptfile, in one run (docs/PERFORMANCE.md). Prints a table; asserts nothing.

    python bench.py [ITERATIONS]
"""

import os
import statistics
import sys
import tempfile
import time

from keyring_vault import VaultKeyring


def measure(backend, iterations, budget_seconds=3.0):
    """The median of up to `iterations` calls, stopping after `budget_seconds` (keyrings.cryptfile
    runs Argon2id on every read)."""
    backend.set_password("bench-service", "bench-user", "a 40-byte secret for the benchmark......")
    backend.get_password("bench-service", "bench-user")
    samples = []
    deadline = time.monotonic() + budget_seconds
    while len(samples) < iterations and (len(samples) < 5 or time.monotonic() < deadline):
        start = time.perf_counter_ns()
        backend.get_password("bench-service", "bench-user")
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples), len(samples)


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    scratch = tempfile.mkdtemp()
    backends = [("vault (keyring-vault)", VaultKeyring())]
    try:
        from keyrings.alt.file import PlaintextKeyring

        plaintext = PlaintextKeyring()
        plaintext.file_path = os.path.join(scratch, "plaintext.cfg")
        backends.append(("keyrings.alt PlaintextKeyring (secrets in clear)", plaintext))
    except ImportError:
        print("keyrings.alt is not installed: no plaintext figure")
    try:
        from keyrings.cryptfile.cryptfile import CryptFileKeyring

        cryptfile = CryptFileKeyring()
        cryptfile.file_path = os.path.join(scratch, "cryptfile.cfg")
        cryptfile.keyring_key = "bench passphrase"
        backends.append(("keyrings.cryptfile CryptFileKeyring", cryptfile))
    except ImportError:
        print("keyrings.cryptfile is not installed: no cryptfile figure")
    results = [(name, *measure(backend, iterations)) for name, backend in backends]
    base = results[0][1]
    print(f"get_password in one process: median of up to {iterations} calls (3 s at most per backend)")
    for name, nanoseconds, count in results:
        print(f"  {name:52} {nanoseconds / 1000:10.1f} us  {nanoseconds / base:8.2f}x vault  ({count} calls)")


if __name__ == "__main__":
    main()
