internal import Glibc

/// The thread-local message behind `vault_last_error_message()`: a `malloc`ed C string per thread,
/// in a pthread key whose destructor frees it when the thread exits.
enum LastError {
    /// The key, created once (a global `let` is initialised exactly once, under a lock). Nil when
    /// `pthread_key_create` failed (the keys ran out): messages are then dropped, statuses still work.
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let result = pthread_key_create(&key) { pointer in free(pointer) }
        return result == 0 ? key : nil
    }()

    /// "", for threads without a message: a `StaticString` literal is NUL-terminated static data.
    private static let empty: StaticString = ""

    /// Replaces the calling thread's message; "" clears it.
    static func set(_ message: String) {
        guard let key else { return }
        let old = pthread_getspecific(key)
        // A message cannot carry a NUL through a C string: cut it there.
        let copy: UnsafeMutablePointer<CChar>? = message.isEmpty ? nil : strdup(message)
        guard pthread_setspecific(key, copy) == 0 else {
            free(copy)
            return
        }
        free(old)
    }

    /// The calling thread's message, valid until the thread's next call that sets it.
    static var current: UnsafePointer<CChar> {
        if let key, let pointer = pthread_getspecific(key) {
            return UnsafePointer(pointer.assumingMemoryBound(to: CChar.self))
        }
        return cString(empty)
    }
}

/// A static string's bytes as a C string (its literal storage is NUL-terminated).
func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
