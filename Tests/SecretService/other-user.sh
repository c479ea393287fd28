# A bus that lets every user in (scripts/test-secret-service, as root): the provider answers its own
# user only; a throwaway user's client gets AccessDenied and nothing of the vault. argv: PROVIDER VAULT TMP.
set -euo pipefail
provider=$1 vault=$2 tmp=$3
ok() { echo "ok: $*"; }
fail() { echo "scripts/test-secret-service: FAILED: $*" >&2; exit 1; }
user=vault-ss-other$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
bus_dir=$(mktemp -d /tmp/vault-ss-bus.XXXXXX)
chmod 0755 "$bus_dir"
cleanup() {
    [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null || true
    [ -n "${served:-}" ] && kill "$served" 2>/dev/null || true
    userdel "$user" 2>/dev/null || true
    rm -rf "$bus_dir"
}
trap cleanup EXIT
cat >"$bus_dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$bus_dir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <!-- No eavesdrop="true" rule: no connection may read others' traffic. -->
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$bus_dir/bus.conf" --nofork --nopidfile >/dev/null 2>&1 &
daemon=$!
for _ in $(seq 50); do [ -S "$bus_dir/bus" ] && break; sleep 0.1; done
[ -S "$bus_dir/bus" ] || fail "the bus open to every user did not start"
chmod 0666 "$bus_dir/bus"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$bus_dir/bus"
"$vault" --vault "$tmp/shared-bus" init >/dev/null
printf 'root-only' | "$vault" --vault "$tmp/shared-bus" --group secret-service put owner app
"$provider" --vault "$tmp/shared-bus" --idle-exit 0 >"$tmp/shared-bus.log" 2>&1 &
served=$!
for _ in $(seq 50); do
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true && break
    kill -0 "$served" 2>/dev/null || { cat "$tmp/shared-bus.log" >&2; fail "the provider exited"; }
    sleep 0.1
done
[ "$(timeout 10 secret-tool lookup service owner account app)" = root-only ] || fail "the owner's own lookup"
status=0
output=$(timeout 10 setpriv --reuid="$user" --regid=nogroup --clear-groups env HOME=/nonexistent \
    secret-tool lookup service owner account app 2>&1) || status=$?
[ "$status" != 0 ] && [ "$status" != 124 ] || fail "another user's lookup (exit $status): $output"
[[ $output != *root-only* ]] || fail "another user's lookup read the secret"
[[ $output == *"may use this service"* ]] || fail "another user's lookup did not say why: $output"
ok "a bus open to every user: another user's client is refused (AccessDenied), the owner's served"
