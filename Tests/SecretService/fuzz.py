# Malformed calls to vault-secret-service (run by scripts/test-secret-service): random paths (real objects,
# near misses, garbage), interfaces, members and arguments of random signatures. Every call must be
# answered (an error or a reply). argv: SEED CALLS.
import random, sys
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import MessageType
seed = int(sys.argv[1]); calls = int(sys.argv[2]); rng = random.Random(seed)
connection = open_dbus_connection(bus="SESSION")
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets")
def call(path, interface, member, signature="", body=()):
    message = new_method_call(DBusAddress(path, bus_name="org.freedesktop.secrets", interface=interface),
                              member, signature, body)
    return connection.send_and_get_reply(message, timeout=10)
# Real objects to aim at: the default collection, its items, a session.
items = call("/org/freedesktop/secrets/aliases/default", "org.freedesktop.DBus.Properties", "Get", "ss",
             ("org.freedesktop.Secret.Collection", "Items")).body[0][1]
session = call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession", "sv",
               ("plain", ("s", ""))).body[1]
paths = ["/org/freedesktop/secrets", "/org/freedesktop/secrets/aliases/default", session,
         "/org/freedesktop/secrets/collection/secret_2dservice", "/org/freedesktop/secrets/collection/_zz",
         "/org/freedesktop/secrets/collection/secret_2dservice/i00", "/org/freedesktop/secrets/aliases/default/ixyz",
         "/org/freedesktop/secrets/prompt/999", "/org/freedesktop/secrets/session/0", "/", "/x/y"] + list(items)
interfaces = ["org.freedesktop.Secret.Service", "org.freedesktop.Secret.Collection", "org.freedesktop.Secret.Item",
              "org.freedesktop.Secret.Session", "org.freedesktop.Secret.Prompt", "org.freedesktop.DBus.Properties",
              "org.freedesktop.DBus.Introspectable", "org.example.Nope"]
members = ["OpenSession", "CreateCollection", "SearchItems", "Unlock", "Lock", "GetSecrets", "ReadAlias",
           "SetAlias", "CreateItem", "Delete", "GetSecret", "SetSecret", "Close", "Prompt", "Dismiss", "Get",
           "GetAll", "Set", "Introspect", "Nope"]
def value(depth=0):
    kinds = "ybnqiuxtdsogv" + ("a(e" if depth < 3 else "")
    kind = rng.choice(kinds)
    if kind == "y": return "y", rng.randrange(256)
    if kind == "b": return "b", rng.random() < 0.5
    if kind in "nqiuxt":
        bits = {"n": 15, "q": 16, "i": 31, "u": 32, "x": 63, "t": 64}[kind]
        low = -(1 << bits) if kind in "nix" else 0
        return kind, rng.randrange(low, 1 << bits)
    if kind == "d": return "d", rng.uniform(-1e9, 1e9)
    if kind == "s": return "s", rng.choice(["", "plain", "default", "dh-ietf1024-sha256-aes128-cbc-pkcs7", "ü" * 5,
                                            "Label", "Attributes", "x" * rng.randrange(200), session])
    if kind == "o": return "o", rng.choice(paths)
    if kind == "g": return "g", rng.choice(["", "s", "a{sv}", "(oayays)"])
    if kind == "v":
        signature, inner = value(depth + 1)
        return "v", (signature, inner)
    if kind == "a":
        if rng.random() < 0.3: return "ay", bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
        if rng.random() < 0.3:
            return "a{ss}", {rng.choice(["service", "user", "k", "="]): rng.choice(["", "git", "&%="]) for _ in range(3)}
        signature, first = value(depth + 1)
        elements = [first]
        for _ in range(rng.randrange(3)):
            again, other = value(depth + 1)
            if again == signature: elements.append(other)
        return "a" + signature, elements
    if kind == "(" or kind == "e":
        fields = [value(depth + 1) for _ in range(rng.randrange(1, 5))]
        return "(" + "".join(f[0] for f in fields) + ")", tuple(f[1] for f in fields)
answered = 0
for _ in range(calls):
    arguments = [value() for _ in range(rng.randrange(4))]
    signature = "".join(a[0] for a in arguments)
    reply = call(rng.choice(paths), rng.choice(interfaces), rng.choice(members), signature,
                 tuple(a[1] for a in arguments))
    if reply.header.message_type in (MessageType.method_return, MessageType.error): answered += 1
print(f"fuzz: {answered} of {calls} calls answered (seed {seed})")
sys.exit(0 if answered == calls else 1)
