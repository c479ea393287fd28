import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import Vault

func genp(_ service: String?, _ account: String?, group: String? = nil) -> ItemAttributes {
    var a = ItemAttributes(service: service, account: account)
    a.accessGroup = group.map { try! AccessGroup($0) }
    return a
}

func status(_ body: () throws -> Void) -> VaultStatus {
    do {
        try body()
        return .success
    } catch let error as VaultError {
        return error.status
    } catch {
        Issue.record("unexpected error \(error)")
        return VaultStatus(rawValue: 1)
    }
}

/// Counts the files a block opens, through the VaultSystem seam (debug builds).
final class FileOpenCounter: @unchecked Sendable {
    var opens = 0

    func counting<R>(_ body: () throws -> R) rethrows -> R {
        let (result, calls) = try systemCalls(of: body)
        opens = calls[.open, default: 0]
        return result
    }
}
