import Testing
import VaultStore

@testable import VaultFleet

/// Counters and version numbers that etcd, a key holder or the local `fleet.mark` could hold at the end
/// of `UInt64`: the next write's (`+ 1`) would trap, so they are refused where they are read.
@Suite struct HostileFleetNumberTests {
    @Test func aManifestCounterAtTheEndOfUInt64IsNoManifest() {
        let digest = [UInt8](repeating: 1, count: FleetManifest.digestByteCount)
        #expect(FleetManifest.decodeWhole(FleetManifest(counter: 7, items: [:]).encodedWhole())?.counter == 7)
        #expect(FleetManifest.decodeWhole(FleetManifest(counter: .max, items: [:]).encodedWhole()) == nil)
        let tree = FleetManifestTree(epoch: 9)
        #expect(
            FleetManifestRoot.decode(FleetManifestRoot(counter: 7, itemCount: 0, tree: tree).encoded())?.counter == 7)
        #expect(FleetManifestRoot.decode(FleetManifestRoot(counter: .max, itemCount: 0, tree: tree).encoded()) == nil)
        let digests = [[UInt8]](repeating: digest, count: FleetShardedRoot.shardCount)
        #expect(
            FleetShardedRoot.decode(FleetShardedRoot(counter: 7, itemCount: 0, shardDigests: digests).encoded())?
                .counter == 7)
        #expect(
            FleetShardedRoot.decode(FleetShardedRoot(counter: .max, itemCount: 0, shardDigests: digests).encoded())
                == nil)
        #expect(FleetMark.decode(FleetMark(counter: 7, digest: digest).encoded())?.counter == 7)
        #expect(FleetMark.decode(FleetMark(counter: .max, digest: digest).encoded()) == nil)
    }

    @Test func aVersionKeyAboveEveryGenerationIsNoVersion() {
        let prefix = Array("/vault/v2/g.versions/id/".utf8)
        #expect(EtcdReplica.generation(ofKey: prefix + Array("000000000000000a".utf8), prefix: prefix) == 10)
        #expect(EtcdReplica.generation(ofKey: prefix + Array("ffffffffffffffff".utf8), prefix: prefix) == nil)
        #expect(EtcdReplica.generation(ofKey: prefix + Array("4000000000000000".utf8), prefix: prefix) == nil)
    }
}
