# On a private session bus (scripts/test-secret-service): a locked passphrase vault answers at once,
# naming `vault unlock`, and is served after it. argv: PROVIDER VAULT TMP.
set -euo pipefail
provider=$1 vault=$2 tmp=$3
ok() { echo "ok: $*"; }
fail() { echo "scripts/test-secret-service: FAILED: $*" >&2; exit 1; }
"$provider" --vault "$tmp/locked" --idle-exit 30 >"$tmp/locked.log" 2>&1 &
provider_pid=$!
trap 'kill "$provider_pid" 2>/dev/null || true' EXIT
sleep 0.5
status=0
printf 'x' | timeout 10 secret-tool store --label=l service locked 2>"$tmp/store.err" || status=$?
[ "$status" != 0 ] || fail "a store into a locked vault succeeded"
[ "$status" != 124 ] || fail "secret-tool hung on a locked vault"
grep -q 'vault unlock' "$tmp/store.err" "$tmp/locked.log" || fail "no message names vault unlock"
ok "a locked vault: the store fails at once, naming vault unlock"
"$vault" --vault "$tmp/locked" unlock --passphrase-fd 3 3<<<'correct horse battery' >/dev/null
printf 'x' | timeout 10 secret-tool store --label=l service locked || fail "a store after vault unlock"
[ "$(timeout 10 secret-tool lookup service locked)" = x ] || fail "a lookup after vault unlock"
ok "after vault unlock the running provider serves"
"$vault" --vault "$tmp/locked" lock >/dev/null
