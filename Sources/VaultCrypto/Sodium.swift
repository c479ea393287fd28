internal import CSodium

/// libsodium's one-time set-up. Every entry point of this module calls `ensureInitialized()` first.
enum Sodium {
    /// `sodium_init()`'s result, computed once: Swift initialises a global `let` exactly once, under a
    /// lock, however many threads race to it. 0 = initialised now, 1 = already initialised, -1 = failed.
    private static let initResult: Int32 = sodium_init()

    /// Initialises libsodium once; throws when it cannot (for example, no entropy source).
    static func ensureInitialized() throws(CryptoError) {
        if initResult < 0 {
            throw CryptoError(
                .initializationFailed,
                "libsodium failed to initialise (sodium_init returned \(initResult)); is /dev/urandom available?"
            )
        }
    }
}
