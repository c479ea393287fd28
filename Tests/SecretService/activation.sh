# On a private session bus whose service files start the provider (scripts/test-secret-service):
# activation, two clients at once, a client killed mid-session, idle exit and re-activation, the
# provider killed mid-write. argv: VAULT TMP PYTHON.
set -euo pipefail
vault=$1 tmp=$2 py=$3
ok() { echo "ok: $*"; }
fail() { echo "scripts/test-secret-service: FAILED: $*" >&2; exit 1; }
st() { timeout 10 secret-tool "$@"; }
running() { pgrep -f -- "--vault $tmp/activated" >/dev/null; }
! running || fail "a provider runs before any client"
printf 'on-demand' | st store --label=activated service act || fail "secret-tool store with no provider running"
[ "$(st lookup service act)" = on-demand ] || fail "lookup after activation"
running || fail "no provider process after activation"
ok "D-Bus activation: the first client started the provider"

for client in a b; do
    (for i in $(seq 20); do
        printf '%s' "$client-$i" | st store --label=x service two client "$client" round "$i" || exit 1
        [ "$(st lookup service two client "$client" round "$i")" = "$client-$i" ] || exit 1
    done) &
done
wait %1 && wait %2 || fail "two clients at once"
ok "two clients at once: 20 stores and lookups each, all read back"

# A client killed with its session open (a dh session, secretstorage's): the provider goes on.
(timeout 20 "$py" -c '
import os, signal, secretstorage
connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
collection.create_item("vanishing", {"service": "vanish"}, b"v")
os.kill(os.getpid(), signal.SIGKILL)' || true) 2>/dev/null
[ "$(st lookup service vanish)" = v ] || fail "the provider after a client vanished mid-session"
ok "a client killed mid-session: the provider goes on"

# Idle: every client gone, the provider exits within its idle time (2 s) and a tick.
for _ in $(seq 50); do running || break; sleep 0.2; done
! running || fail "the provider did not exit when idle"
ok "idle exit"
[ "$(st lookup service act)" = on-demand ] || fail "lookup after the idle exit"
running || fail "no provider process after re-activation"
ok "re-activation by the next client"

# Killed mid-write: every store that secret-tool saw succeed is there afterwards, and the vault checks.
(sleep 0.3; pkill -KILL -f -- "--vault $tmp/activated") &
stored=()
for i in $(seq 40); do
    if printf 'kill-%s' "$i" | st store --label=k service killed round "$i" 2>/dev/null; then stored+=("$i"); fi
done
wait
for i in "${stored[@]}"; do
    [ "$(st lookup service killed round "$i")" = "kill-$i" ] || fail "store $i was acknowledged but is lost"
done
"$vault" --vault "$tmp/activated" check >/dev/null || fail "vault check after the provider was killed mid-write"
ok "the provider killed mid-write: ${#stored[@]} acknowledged stores all read back, vault check passes"
