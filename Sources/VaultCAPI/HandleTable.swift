import Synchronization

/// The live handles of one kind (vaults or iterators). A handle given to C is not an address but a
/// number that is never reused, dressed as an opaque pointer: every call looks it up here, so a
/// closed, forged or other-kind handle is detected (`VAULT_ERR_INVALID_HANDLE`) instead of touching
/// freed memory, even after its number would have been recycled as an address.
final class HandleTable<Object: Sendable>: Sendable {
    private struct State {
        var next: UInt
        var objects: [UInt: Object] = [:]
    }

    private let state: Mutex<State>
    private let tag: UInt
    private let kind: String

    /// Handles of this table end in the 4-bit `tag`, so that tables never share a value.
    init(tag: UInt, kind: String) {
        self.tag = tag & 0xF
        self.kind = kind
        // Start far from NULL and from small integers that a confused caller might pass.
        self.state = Mutex(State(next: 0x1_0000))
    }

    /// Registers `object` and returns its new handle.
    func insert(_ object: Object) -> OpaquePointer {
        state.withLock { state in
            let value = state.next | tag
            // 2^60 handles per process cannot run out; wrapping would only restart the numbering.
            state.next &+= 0x10
            state.objects[value] = object
            return OpaquePointer(bitPattern: value)!
        }
    }

    /// The object of a live handle. The caller holds a strong reference for the length of its call,
    /// so a concurrent close cannot free the object under it.
    func lookup(_ handle: OpaquePointer?, name: String) throws(Failure) -> Object {
        guard let handle else { throw Failure.param("\(name) is NULL") }
        let value = UInt(bitPattern: handle)
        guard let object = state.withLock({ $0.objects[value] }) else { throw invalid(value, name: name) }
        return object
    }

    /// Unregisters a handle and returns its object.
    func remove(_ handle: OpaquePointer, name: String) throws(Failure) -> Object {
        let value = UInt(bitPattern: handle)
        guard let object = state.withLock({ $0.objects.removeValue(forKey: value) }) else {
            throw invalid(value, name: name)
        }
        return object
    }

    private func invalid(_ value: UInt, name: String) -> Failure {
        let hex = String(value, radix: 16)
        return Failure(
            Status.invalidHandle,
            "\(name) (0x\(hex)) is not a live \(kind): it was never returned by the library, or it was already released"
        )
    }
}
