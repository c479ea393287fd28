# Real clients of the Secret Service against vault-secret-service (run by scripts/test-secret-service):
# secretstorage (dh sessions), raw jeepney calls (a plain session, error names, signals) and keyring's
# SecretService backend, one step per `ok:` line. argv: VAULT-BINARY VAULT-DIR.
import contextlib, json, subprocess, sys, traceback
import secretstorage, keyring.backends.SecretService
from jeepney import DBusAddress, DBusErrorResponse, new_method_call
from jeepney.wrappers import unwrap_msg

vault_cli, vault_dir = sys.argv[1:3]
class Failure(Exception): pass
def expect(condition, why):
    if not condition: raise Failure(why)

@contextlib.contextmanager
def step(what):
    try:
        yield
    except Exception as error:
        if not isinstance(error, Failure): traceback.print_exc()
        sys.exit(f"scripts/test-secret-service: FAILED: {what}: {error}")
    print(f"ok: {what}", flush=True)

conn = secretstorage.dbus_init()
bus = 'org.freedesktop.secrets'
service = DBusAddress('/org/freedesktop/secrets', bus_name=bus, interface='org.freedesktop.Secret.Service')
def call(message): return unwrap_msg(conn.send_and_get_reply(message, timeout=10))
def error_name(message):
    try: call(message)
    except DBusErrorResponse as error: return error.name
    return None
attributes = {'application': 'python-test', 'k': 'v'}
query = {'application': 'python-test'}

with step("secretstorage: the default collection (alias default) is unlocked"):
    collection = secretstorage.get_default_collection(conn)
    expect(not collection.is_locked(), "collection.is_locked() is True")
with step("secretstorage: create_item, and again with replace=True replaces it (dh session)"):
    collection.create_item('first label', attributes, b'first-bytes', replace=True)
    item = collection.create_item('label', attributes, b'secret-bytes', replace=True)
    found = list(collection.search_items(query))
    expect(found == [item], f"collection.search_items found {found}, not [{item.item_path}]")
    expect(not item.is_locked(), "item.is_locked() is True")
with step("secretstorage: search_items across collections"):
    found = list(secretstorage.search_items(conn, query))
    expect(found == [item], f"secretstorage.search_items found {found}, not [{item.item_path}]")
with step("secretstorage: secret, label and attributes read back"):
    item = found[0]  # no session yet: get_secret opens its own
    expect(item.get_secret() == b'secret-bytes', f"get_secret() is {item.get_secret()!r}")
    expect(item.get_label() == 'label', f"get_label() is {item.get_label()!r}")
    expect(item.get_attributes() == attributes, f"get_attributes() is {item.get_attributes()!r}")
with step("secretstorage: set_label and set_secret"):
    item.set_label('new')
    expect(item.get_label() == 'new', f"get_label() after set_label('new') is {item.get_label()!r}")
    item.set_secret(b'other')
    expect(item.get_secret() == b'other', f"get_secret() after set_secret(b'other') is {item.get_secret()!r}")
with step("jeepney: OpenSession plain, GetSecrets returns the secret unencrypted, Session.Close"):
    output, session = call(new_method_call(service, 'OpenSession', 'sv', ('plain', ('s', ''))))
    expect(len(session) > 1, f"OpenSession returned session path {session!r}")
    secrets, = call(new_method_call(service, 'GetSecrets', 'aoo', ([item.item_path], session)))
    expect(list(secrets) == [item.item_path], f"GetSecrets returned secrets of {list(secrets)}")
    secret_session, parameters, value, content_type = secrets[item.item_path]
    expect(secret_session == session, f"the secret's session is {secret_session!r}, not {session!r}")
    expect(bytes(parameters) == b'', f"plain parameters are {bytes(parameters)!r}, not empty")
    expect(bytes(value) == b'other', f"the plain secret is {bytes(value)!r}, not b'other'")
    call(new_method_call(DBusAddress(session, bus_name=bus, interface='org.freedesktop.Secret.Session'), 'Close'))
with step("jeepney: an unknown object is NoSuchObject (or UnknownObject)"):
    nope = DBusAddress('/org/freedesktop/secrets/collection/nope', bus_name=bus,
                       interface='org.freedesktop.DBus.Properties')
    name = error_name(new_method_call(nope, 'Get', 'ss', ('org.freedesktop.Secret.Collection', 'Label')))
    expect(name in ('org.freedesktop.Secret.Error.NoSuchObject', 'org.freedesktop.DBus.Error.UnknownObject'),
           f"Properties.Get on {nope.object_path} gave {name!r}")
with step("jeepney: an unsupported algorithm is NotSupported"):
    name = error_name(new_method_call(service, 'OpenSession', 'sv', ('rot13', ('s', ''))))
    expect(name == 'org.freedesktop.DBus.Error.NotSupported', f"OpenSession('rot13') gave {name!r}")
with step("jeepney: introspection of the service, the collection node and an item"):
    def introspect(path):
        address = DBusAddress(path, bus_name=bus, interface='org.freedesktop.DBus.Introspectable')
        return call(new_method_call(address, 'Introspect'))[0]
    xml = introspect('/org/freedesktop/secrets')
    expect('name="OpenSession"' in xml and '<node name="collection"/>' in xml, f"the service's: {xml[:200]}")
    expect('<node name="secret_2dservice"/>' in introspect('/org/freedesktop/secrets/collection'),
           "the collection node lists no secret_2dservice")
    expect('name="GetSecret"' in introspect(item.item_path), "an item's introspection has no GetSecret")
with step("jeepney: a collection a client did not make (the default one) cannot be deleted"):
    default = DBusAddress('/org/freedesktop/secrets/aliases/default', bus_name=bus,
                          interface='org.freedesktop.Secret.Collection')
    name = error_name(new_method_call(default, 'Delete'))
    expect(name == 'org.freedesktop.DBus.Error.AccessDenied', f"Delete of the default collection gave {name!r}")
with step("jeepney: a group made by vault group create, even relabelled, cannot be deleted; a client's can"):
    subprocess.run([vault_cli, '--vault', vault_dir, 'group', 'create', 'made-by-cli'], check=True,
                   capture_output=True)
    made = '/org/freedesktop/secrets/collection/made_2dby_2dcli'
    properties = DBusAddress(made, bus_name=bus, interface='org.freedesktop.DBus.Properties')
    call(new_method_call(properties, 'Set', 'ssv', ('org.freedesktop.Secret.Collection', 'Label', ('s', 'Mine now'))))
    name = error_name(new_method_call(DBusAddress(made, bus_name=bus, interface='org.freedesktop.Secret.Collection'),
                                      'Delete'))
    expect(name == 'org.freedesktop.DBus.Error.AccessDenied', f"Delete of a relabelled CLI group gave {name!r}")
    created = secretstorage.create_collection(conn, 'Made Here')
    expect(created.get_label() == 'Made Here', f"the new collection's label is {created.get_label()!r}")
    created.delete()
    listed = subprocess.run([vault_cli, '--vault', vault_dir, 'group', 'ls'], check=True, capture_output=True,
                            text=True).stdout
    expect('made-by-cli' in listed and 'Made-Here' not in listed, f"vault group ls: {listed!r}")
with step("jeepney: ItemCreated, CollectionChanged and PropertiesChanged signals of a new item"):
    from jeepney.bus_messages import MatchRule, message_bus
    from jeepney.io.blocking import open_dbus_connection
    listener = open_dbus_connection(bus='SESSION')
    rule = MatchRule(type='signal', path_namespace='/org/freedesktop/secrets')
    listener.send_and_get_reply(message_bus.AddMatch(rule))
    with listener.filter(rule, bufsize=64) as queue:
        created = collection.create_item('signalled', {'application': 'signals'}, b's', replace=True)
        seen = set()
        while not {'ItemCreated', 'CollectionChanged', 'PropertiesChanged'} <= seen:
            signal = listener.recv_until_filtered(queue, timeout=5)
            seen.add(signal.header.fields[3])
            if signal.header.fields[3] == 'ItemCreated':
                expect(signal.body[0] == created.item_path, f"ItemCreated names {signal.body[0]!r}")
            if signal.header.fields[3] == 'PropertiesChanged':
                expect('Items' in signal.body[2], f"PropertiesChanged invalidates {signal.body[2]!r}, not Items")
    listener.close()
    created.delete()
with step("secretstorage: delete, then neither search finds it"):
    item.delete()
    expect(list(collection.search_items(query)) == [], "collection.search_items still finds it")
    expect(list(secretstorage.search_items(conn, query)) == [], "secretstorage.search_items still finds it")

backend = keyring.backends.SecretService.Keyring()
with step("keyring: the SecretService backend is viable"):
    expect(keyring.backends.SecretService.Keyring.viable, "Keyring.viable is False")
with step("keyring: set_password, get_password, and the item is a vault item of service svc"):
    backend.set_password('svc', 'user', 'pw')
    expect(backend.get_password('svc', 'user') == 'pw', f"get_password is {backend.get_password('svc', 'user')!r}")
    listed = subprocess.run([vault_cli, '--vault', vault_dir, '--group', 'secret-service', 'ls', '--service', 'svc',
                             '--json'], check=True, capture_output=True, text=True).stdout
    expect(len(json.loads(listed)) == 1, f"vault ls --service svc --json printed {listed!r}")
with step("keyring: delete_password, then get_password is None"):
    backend.delete_password('svc', 'user')
    expect(backend.get_password('svc', 'user') is None, "get_password after delete_password is not None")
conn.close()
