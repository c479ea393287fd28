import CVaultDBus

/// A failure of the bus or of a message, with libdbus's name and message for it.
package struct DBusFailure: Error, CustomStringConvertible {
    /// The D-Bus error name (`org.freedesktop.DBus.Error.…`).
    package let name: String
    /// What failed, and libdbus's words for why.
    package let message: String

    /// A failure named `name`.
    package init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    /// The message and the error name.
    package var description: String { "\(message) (\(name))" }
}

/// A message received: a method call or a signal, its header fields and its arguments. Kept by the
/// connection only for its reply.
package final class DBusReceivedMessage {
    fileprivate let message: OpaquePointer
    /// Whether it is a method call (else a signal, a reply or an error).
    package let isMethodCall: Bool
    /// The unique bus name of its sender (the bus daemon's own for its signals).
    package let sender: String
    /// The object path, interface and member it names; the interface may be empty in a call.
    package let path: String
    package let interface: String
    package let member: String
    /// The signature of its arguments.
    package let signature: String
    /// Whether the sender waits for a reply.
    package let expectsReply: Bool
    /// Nil when the arguments could not be read (a type this decoder does not take).
    package let arguments: [DBusValue]?

    fileprivate init(_ message: OpaquePointer) {
        self.message = message
        dbus_message_ref(message)
        isMethodCall = dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL
        sender = dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        path = dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        interface = dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
        member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        signature = dbus_message_get_signature(message).map { String(cString: $0) } ?? ""
        expectsReply = dbus_message_get_no_reply(message) == 0
        var iterator = DBusMessageIter()
        if dbus_message_iter_init(message, &iterator) == 0 {
            arguments = []
        } else {
            arguments = Self.readAll(&iterator)
        }
    }

    deinit { dbus_message_unref(message) }

    /// The values from `iterator` to its end; nil if one cannot be read.
    private static func readAll(_ iterator: inout DBusMessageIter) -> [DBusValue]? {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != 0 {  // DBUS_TYPE_INVALID
            guard let value = read(&iterator) else { return nil }
            values.append(value)
            dbus_message_iter_next(&iterator)
        }
        return values
    }

    private static func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ zero: T) -> T {
        var value = zero
        dbus_message_iter_get_basic(&iterator, &value)
        return value
    }

    private static func text(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The value at `iterator`; nil for a type it does not take (a Unix fd).
    private static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        switch UInt8(truncatingIfNeeded: dbus_message_iter_get_arg_type(&iterator)) {
        case UInt8(ascii: "y"): return .byte(basic(&iterator, UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(basic(&iterator, UInt32(0)) != 0)
        case UInt8(ascii: "n"): return .int32(Int32(basic(&iterator, Int16(0))))
        case UInt8(ascii: "q"): return .uint32(UInt32(basic(&iterator, UInt16(0))))
        case UInt8(ascii: "i"): return .int32(basic(&iterator, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(basic(&iterator, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(basic(&iterator, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(basic(&iterator, UInt64(0)))
        case UInt8(ascii: "d"): return .double(basic(&iterator, Double(0)))
        case UInt8(ascii: "s"): return .string(text(&iterator))
        case UInt8(ascii: "o"): return .objectPath(text(&iterator))
        case UInt8(ascii: "g"): return .signature(text(&iterator))
        case UInt8(ascii: "a"):
            guard let whole = dbus_message_iter_get_signature(&iterator) else { return nil }
            let element = String(String(cString: whole).dropFirst())
            dbus_free(whole)
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            if element == "y" {
                var pointer: UnsafePointer<UInt8>?
                var count: Int32 = 0
                dbus_message_iter_get_fixed_array(&inner, &pointer, &count)
                let bytes = pointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
                return .bytes(bytes)
            }
            guard let elements = readAll(&inner) else { return nil }
            return .array(element: element, elements)
        case UInt8(ascii: "e"):
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            guard let fields = readAll(&inner), fields.count == 2 else { return nil }
            return .dictionaryEntry(fields[0], fields[1])
        case UInt8(ascii: "r"):
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            guard let fields = readAll(&inner) else { return nil }
            return .structure(fields)
        case UInt8(ascii: "v"):
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            guard let value = read(&inner) else { return nil }
            return .variant(value)
        default:
            return nil
        }
    }
}

/// A private connection to the session bus (libdbus), used from one thread: requests a name, reads
/// messages one at a time, and sends replies, errors and signals. The one place of this package that
/// calls libdbus.
package final class DBusConnection {
    private let connection: OpaquePointer

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    package init() throws(DBusFailure) {
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error) else {
            throw Self.failure(&error, "cannot connect to the session bus")
        }
        self.connection = connection
        dbus_connection_set_exit_on_disconnect(connection, 0)
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    private static func failure(_ error: inout DBusError, _ what: String) -> DBusFailure {
        defer { dbus_error_free(&error) }
        guard dbus_error_is_set(&error) != 0 else { return DBusFailure("org.freedesktop.DBus.Error.Failed", what) }
        let name = error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusFailure(name, "\(what): \(message)")
    }

    /// This connection's unique name on the bus.
    package var uniqueName: String { dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? "" }

    /// Asks for well-known name `name`, not queued behind another owner; false when another has it.
    package func requestName(_ name: String) throws(DBusFailure) -> Bool {
        var error = DBusError()
        dbus_error_init(&error)
        let result = dbus_bus_request_name(connection, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        guard result >= 0 else { throw Self.failure(&error, "cannot ask for the name \(name)") }
        return result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || result == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER
    }

    /// Gives up well-known name `name`: the bus then starts another owner for the next call to it.
    package func releaseName(_ name: String) {
        var error = DBusError()
        dbus_error_init(&error)
        _ = dbus_bus_release_name(connection, name, &error)
        dbus_error_free(&error)
    }

    /// Asks the bus to send this connection the messages `rule` matches (a match rule).
    package func addMatch(_ rule: String) throws(DBusFailure) {
        var error = DBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 { throw Self.failure(&error, "cannot add the match rule \(rule)") }
    }

    /// The uid of the process that owns bus name `name`, as the bus daemon saw it connect.
    package func unixUser(of name: String) throws(DBusFailure) -> UInt32 {
        var error = DBusError()
        dbus_error_init(&error)
        let uid = dbus_bus_get_unix_user(connection, name, &error)
        if dbus_error_is_set(&error) != 0 { throw Self.failure(&error, "cannot ask for the user of \(name)") }
        return UInt32(truncatingIfNeeded: uid)
    }

    /// The next message, waiting up to `timeoutMilliseconds`; nil when none came. Throws when the
    /// connection is closed.
    package func nextMessage(timeoutMilliseconds: Int32) throws(DBusFailure) -> DBusReceivedMessage? {
        if let message = dbus_connection_pop_message(connection) { return received(message) }
        guard dbus_connection_read_write(connection, timeoutMilliseconds) != 0 else {
            throw DBusFailure("org.freedesktop.DBus.Error.Disconnected", "the session bus closed the connection")
        }
        return dbus_connection_pop_message(connection).map(received)
    }

    private func received(_ message: OpaquePointer) -> DBusReceivedMessage {
        defer { dbus_message_unref(message) }
        return DBusReceivedMessage(message)
    }

    /// Replies to `call` with `values`; false if a value could not be marshalled (then an error reply
    /// is sent instead).
    @discardableResult
    package func reply(to call: DBusReceivedMessage, _ values: [DBusValue]) -> Bool {
        guard call.expectsReply, let reply = dbus_message_new_method_return(call.message) else { return true }
        defer { dbus_message_unref(reply) }
        guard append(values, to: reply) else {
            replyError(to: call, "org.freedesktop.DBus.Error.Failed", "the reply could not be marshalled")
            return false
        }
        dbus_connection_send(connection, reply, nil)
        return true
    }

    /// Replies to `call` with error `name` and `message`.
    package func replyError(to call: DBusReceivedMessage, _ name: String, _ message: String) {
        guard call.expectsReply, let reply = dbus_message_new_error(call.message, name, Self.cleaned(message)) else {
            return
        }
        dbus_connection_send(connection, reply, nil)
        dbus_message_unref(reply)
    }

    /// Sends signal `member` of `interface` from object `path`.
    package func emitSignal(path: String, interface: String, member: String, _ values: [DBusValue]) {
        guard let signal = dbus_message_new_signal(path, interface, member) else { return }
        defer { dbus_message_unref(signal) }
        guard append(values, to: signal) else { return }
        dbus_connection_send(connection, signal, nil)
    }

    /// Sends what is queued.
    package func flush() { dbus_connection_flush(connection) }

    /// Text that libdbus takes (valid UTF-8, no NUL).
    private static func cleaned(_ text: String) -> String {
        text.contains("\0") ? String(text.map { $0 == "\0" ? "\u{FFFD}" : $0 }) : text
    }

    private func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for value in values {
            guard Self.append(value, to: &iterator) else { return false }
        }
        return true
    }

    private static func appendBasic<T: BitwiseCopyable>(_ type: UInt8, _ value: T, to iterator: inout DBusMessageIter)
        -> Bool
    {
        var value = value
        return dbus_message_iter_append_basic(&iterator, Int32(type), &value) != 0
    }

    private static func appendText(_ type: UInt8, _ text: String, to iterator: inout DBusMessageIter) -> Bool {
        cleaned(text).withCString { pointer in
            var pointer: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, Int32(type), &pointer) != 0
        }
    }

    private static func appendContainer(
        _ type: UInt8, _ signature: String?, _ values: [DBusValue], to iterator: inout DBusMessageIter
    ) -> Bool {
        var inner = DBusMessageIter()
        let opened =
            signature.map { dbus_message_iter_open_container(&iterator, Int32(type), $0, &inner) }
            ?? dbus_message_iter_open_container(&iterator, Int32(type), nil, &inner)
        guard opened != 0 else { return false }
        for value in values where !append(value, to: &inner) {
            dbus_message_iter_abandon_container(&iterator, &inner)
            return false
        }
        return dbus_message_iter_close_container(&iterator, &inner) != 0
    }

    private static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let byte): return appendBasic(UInt8(ascii: "y"), byte, to: &iterator)
        case .boolean(let flag): return appendBasic(UInt8(ascii: "b"), UInt32(flag ? 1 : 0), to: &iterator)
        case .int32(let number): return appendBasic(UInt8(ascii: "i"), number, to: &iterator)
        case .uint32(let number): return appendBasic(UInt8(ascii: "u"), number, to: &iterator)
        case .int64(let number): return appendBasic(UInt8(ascii: "x"), number, to: &iterator)
        case .uint64(let number): return appendBasic(UInt8(ascii: "t"), number, to: &iterator)
        case .double(let number): return appendBasic(UInt8(ascii: "d"), number, to: &iterator)
        case .string(let text): return appendText(UInt8(ascii: "s"), text, to: &iterator)
        case .objectPath(let path): return appendText(UInt8(ascii: "o"), path, to: &iterator)
        case .signature(let signature): return appendText(UInt8(ascii: "g"), signature, to: &iterator)
        case .bytes(let bytes):
            do {
                var inner = DBusMessageIter()
                guard dbus_message_iter_open_container(&iterator, Int32(UInt8(ascii: "a")), "y", &inner) != 0 else {
                    return false
                }
                let appended = bytes.withUnsafeBufferPointer { buffer in
                    var pointer = buffer.baseAddress
                    return dbus_message_iter_append_fixed_array(
                        &inner, Int32(UInt8(ascii: "y")), &pointer, Int32(buffer.count)) != 0
                }
                guard appended else {
                    dbus_message_iter_abandon_container(&iterator, &inner)
                    return false
                }
                return dbus_message_iter_close_container(&iterator, &inner) != 0
            }
        case .array(let element, let values):
            return appendContainer(UInt8(ascii: "a"), element, values, to: &iterator)
        case .dictionaryEntry(let key, let entry):
            return appendContainer(UInt8(ascii: "e"), nil, [key, entry], to: &iterator)
        case .structure(let fields):
            return appendContainer(UInt8(ascii: "r"), nil, fields, to: &iterator)
        case .variant(let inner):
            return appendContainer(UInt8(ascii: "v"), inner.signature, [inner], to: &iterator)
        }
    }
}
