/// A system call that failed, and how (in the manner of swift-nio's `SystemCallError`): the cause that
/// the layers above carry, so that an error says which call failed as well as its error number.
package struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call that failed.
    package let systemCall: SystemOperation
    /// Its error number.
    package let errno: Errno

    /// A failure of `systemCall` with `errno`.
    package init(systemCall: SystemOperation, errno: Errno) {
        self.systemCall = systemCall
        self.errno = errno
    }

    /// The system's text for the error number, as `Errno` gives it.
    package var description: String { errno.description }
}
