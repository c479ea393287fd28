# On a private session bus (scripts/test-secret-service runs it under dbus-run-session): the provider
# started by hand, then secret-tool, the Python clients and suites, git-credential-libsecret, malformed
# calls and a fleet group. argv: PROVIDER VAULT TMP TESTS.
set -euo pipefail
provider=$1 vault=$2 tmp=$3 tests=$4
py="$tmp/venv/bin/python"
ok() { echo "ok: $*"; }
fail() { echo "scripts/test-secret-service: FAILED: $*" >&2; exit 1; }
"$provider" --vault "$tmp/vault" --idle-exit 30 >"$tmp/provider.log" 2>&1 &
provider_pid=$!
finish() {
    local status=$?
    kill "$provider_pid" 2>/dev/null || true
    wait "$provider_pid" 2>/dev/null || true
    if [ "$status" != 0 ]; then echo "--- the provider's output:" >&2; cat "$tmp/provider.log" >&2; fi
}
trap finish EXIT
owned=false
for _ in $(seq 50); do
    reply=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>&1 || true)
    if [[ $reply == *"boolean true"* ]]; then owned=true; break; fi
    kill -0 "$provider_pid" 2>/dev/null || fail "the provider exited before owning org.freedesktop.secrets"
    sleep 0.1
done
$owned || fail "the provider did not own org.freedesktop.secrets within 5 s"
ok "the provider owns org.freedesktop.secrets on the session bus"

# secret-tool: a Prompt (an unlock) would hang it, hence the timeout.
st() { timeout 10 secret-tool "$@"; }
printf 'hunter2' | st store --label='Test item' service git user alice || fail "secret-tool store (exit $?)"
got=$(st lookup service git user alice) || fail "secret-tool lookup after store (exit $?)"
[ "$got" = hunter2 ] || fail "secret-tool lookup printed '$got', not hunter2"
ok "secret-tool store, then lookup (dh-ietf1024-sha256-aes128-cbc-pkcs7)"
# search prints the secret (stdout) only for unlocked items, the attributes on stderr.
found=$(st search --all service git 2>&1) || fail "secret-tool search --all service git (exit $?): $found"
[[ $found == *alice* ]] || fail "secret-tool search --all service git does not mention alice: $found"
[[ $found == *"secret = hunter2"* ]] || fail "secret-tool search --all did not read the secret (locked?): $found"
ok "secret-tool search --all finds it, unlocked"
st clear service git user alice || fail "secret-tool clear (exit $?)"
if got=$(st lookup service git user alice 2>/dev/null); then fail "secret-tool lookup after clear succeeded"; fi
[ -z "$got" ] || fail "secret-tool lookup after clear printed '$got'"
ok "secret-tool clear, then lookup fails"

printf 'pw-bob' | st store --label='Second item' service git user bob || fail "secret-tool store of bob (exit $?)"
listing=$("$vault" --vault "$tmp/vault" --group secret-service ls --service git --json) || fail "vault ls (exit $?)"
account=$("$py" -c '
import json, sys
items = json.loads(sys.argv[1])
want = {"kind": "generic", "group": "secret-service", "service": "git", "label": "Second item"}
if len(items) != 1 or any(items[0].get(k) != v for k, v in want.items()) or "bob" not in items[0]["account"]:
    sys.exit(f"vault ls --service git: {items} (one item, {want}, its account naming bob)")
print(items[0]["account"])' "$listing") || fail "the item secret-tool stored is not the vault item expected"
got=$("$vault" --vault "$tmp/vault" --group secret-service get git "$account") || fail "vault get git (exit $?)"
[ "$got" = pw-bob ] || fail "vault get of the item secret-tool stored printed '$got', not pw-bob"
ok "an item secret-tool stored is a vault item (service git, label kept, the secret as stored)"

printf 's3cret' | "$vault" --vault "$tmp/vault" --group secret-service put db app || fail "vault put db app"
got=$(st lookup service db account app) || fail "secret-tool lookup service db account app (exit $?)"
[ "$got" = s3cret ] || fail "secret-tool lookup of the vault CLI's item printed '$got', not s3cret"
ok "an item the vault CLI put is found by secret-tool as service db account app"
printf 'rotated' | st store --label=db service db account app || fail "secret-tool store service db account app"
[ "$("$vault" --vault "$tmp/vault" --group secret-service get db app)" = rotated ] ||
    fail "secret-tool's store of service db account app did not replace vault put's item"
[ "$("$vault" --vault "$tmp/vault" --group secret-service ls --service db --json | grep -o '"account"' | wc -l)" = 1 ] ||
    fail "secret-tool's store of service db account app made a second item"
ok "secret-tool storing service db account app replaces the vault CLI's item, no second one"

timeout 120 "$py" "$tests/clients.py" "$vault" "$tmp/vault"

echo "== secretstorage's own test suite (tests/run_tests.py of its source; the mock-only tests skip themselves)"
(cd "$tmp/sdist/secretstorage" && timeout 300 "$py" tests/run_tests.py >"$tmp/secretstorage-tests.log" 2>&1) || {
    cat "$tmp/secretstorage-tests.log" >&2
    fail "secretstorage's own test suite"
}
tail -n 1 "$tmp/secretstorage-tests.log"
ok "secretstorage's own test suite"

echo "== keyring's own backend tests (keyring.testing.backend.BackendBasicTests) on the SecretService backend"
(cd "$tests" && timeout 300 "$py" -m pytest -q -p no:cacheprovider test_keyring_secret_service.py) ||
    fail "keyring's BackendBasicTests on the SecretService backend"
ok "keyring BackendBasicTests"

# git's own libsecret credential helper, built from the source Debian's git ships, under real
# `git credential approve/fill/reject`.
helper="$tmp/git-credential-libsecret"
request=$'protocol=https\nhost=git.example\nusername=alice\n\n'
git_credential() { GIT_TERMINAL_PROMPT=0 timeout 10 git -c credential.helper= -c "credential.helper=$helper" credential "$@"; }
printf 'protocol=https\nhost=git.example\nusername=alice\npassword=from-git\n\n' | git_credential approve ||
    fail "git credential approve through git-credential-libsecret"
filled=$(printf '%s' "$request" | git_credential fill) || fail "git credential fill through git-credential-libsecret"
[[ $filled == *$'\npassword=from-git'* ]] || fail "git credential fill gave: $filled"
"$vault" --vault "$tmp/vault" --group secret-service ls --json | grep -q git.example ||
    fail "the credential git stored is not a vault item"
printf 'protocol=https\nhost=git.example\nusername=alice\npassword=from-git\n\n' | git_credential reject ||
    fail "git credential reject"
if filled=$(printf '%s' "$request" | git_credential fill 2>/dev/null); then
    fail "git credential fill after reject still found: $filled"
fi
ok "git-credential-libsecret: git credential approve, fill and reject"

seed=$((RANDOM * 32768 + RANDOM))
timeout 300 "$py" "$tests/fuzz.py" "$seed" 3000 || fail "malformed calls (seed $seed): a call went unanswered"
kill -0 "$provider_pid" 2>/dev/null || fail "the provider died under malformed calls (seed $seed)"
# (The calls may have deleted collections, as a client may: the check stores anew.)
printf 'after-fuzz' | st store --label=after service after-fuzz || fail "a store after malformed calls (seed $seed)"
[ "$(st lookup service after-fuzz)" = after-fuzz ] || fail "the provider after malformed calls (seed $seed)"
ok "3000 malformed calls (random paths, members and arguments) each answered, the provider unharmed"
# A fleet group (on the cluster the tests use, when one is given) made by the CLI while the provider
# runs: a collection at once, and what a client stores there another machine's vault reads.
if [ -n "${VAULT_TEST_ETCD:-}" ]; then
    "$vault" --vault "$tmp/vault" group create fleetss --etcd "$VAULT_TEST_ETCD" 2>/dev/null || fail "group create --etcd"
    (umask 077 && head -c 32 /dev/urandom >"$tmp/transport.key")
    "$vault" --vault "$tmp/vault" group export-key fleetss "$tmp/fleet.key" --backup-key-file "$tmp/transport.key" \
        2>/dev/null || fail "group export-key"
    "$vault" --vault "$tmp/other-machine" init >/dev/null
    "$vault" --vault "$tmp/other-machine" group join fleetss --etcd "$VAULT_TEST_ETCD" --group-key "$tmp/fleet.key" \
        --backup-key-file "$tmp/transport.key" 2>/dev/null || fail "group join on the other machine"
    timeout 30 "$py" -c '
import secretstorage
connection = secretstorage.dbus_init()
collection = secretstorage.Collection(connection, "/org/freedesktop/secrets/collection/fleetss")
collection.create_item("fleet item", {"service": "fleet-app", "user": "deploy"}, b"across-the-fleet", replace=True)
found = list(secretstorage.search_items(connection, {"service": "fleet-app"}))
assert [item.get_secret() for item in found] == [b"across-the-fleet"], found' || fail "a store into the fleet collection"
    got=$("$vault" --vault "$tmp/other-machine" --group fleetss get fleet-app 'service=fleet-app&user=deploy') ||
        fail "the other machine's vault get of the fleet item"
    [ "$got" = across-the-fleet ] || fail "the other machine read '$got'"
    ok "a fleet group made by the CLI is a collection; what a client stores there, another machine reads"
fi

kill -0 "$provider_pid" 2>/dev/null || fail "the provider is no longer running"
ok "the provider is still running after every client"
