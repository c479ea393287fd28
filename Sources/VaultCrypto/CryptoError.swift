/// An error from the crypto layer. Its message never contains key or plaintext bytes.
@usableFromInline package struct CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    @usableFromInline package enum Code: Sendable, Equatable {
        /// libsodium could not be initialised.
        case initializationFailed
        /// Secure memory could not be allocated (`sodium_malloc` failed).
        case allocationFailed
        /// A ciphertext failed authentication: wrong key, wrong associated data, or tampered bytes.
        case authenticationFailed
        /// An argument had the wrong size or range.
        case invalidArgument
    }

    /// What went wrong.
    package let code: Code
    /// A sentence for people.
    package let message: String

    /// Makes an error.
    @usableFromInline package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    @usableFromInline package var description: String { message }
}
