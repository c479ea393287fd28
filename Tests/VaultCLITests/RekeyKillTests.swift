import Foundation
import Testing
import VaultTestSupport

/// `vault rekey` of a vault killed with SIGKILL at random points: every next command reads
/// every item, under the old key or the new one, and no rekey file is left once a command has run.
@Suite struct RekeyKillTests {
    @Test func aRekeyKilledAnywhereLosesNothing() throws {
        try withScratch { scratch in
            #expect(try scratch.run(["init"]).status == 0)
            #expect(try scratch.run(["put", "db", "app"], input: Data("private secret".utf8)).status == 0)
            #expect(try scratch.run(["group", "create", "shared", "--unix-group", "65534"]).status == 0)
            #expect(
                try scratch.run(["--group", "shared", "put", "cache", "key"], input: Data("shared secret".utf8)).status
                    == 0)
            // A rekey's own time first, then rounds of a rekey killed after a random part of 1.5 times that
            // (or finished), both items read through a new process, which first recovers whatever the kill
            // left. Rounds that left a journal are counted by whether the commit point was passed.
            let script = """
                t0=$(date +%s%N); "$V" --vault "$D" rekey </dev/null >/dev/null 2>&1 || exit 3; t1=$(date +%s%N)
                span=$(( (t1 - t0) * 3 / 2 / 1000 )); [ "$span" -gt 0 ] || span=1000
                before_commit=0; after_commit=0; changed=0
                for i in $(seq 1 60); do
                  before=$(sha256sum "$D/master.key")
                  "$V" --vault "$D" rekey </dev/null >/dev/null 2>&1 & pid=$!
                  delay=$(( (RANDOM * 32768 + RANDOM) % span ))
                  sleep "$(printf '0.%06d' "$delay")"
                  kill -9 "$pid" 2>/dev/null
                  wait "$pid" 2>/dev/null
                  if [ -e "$D/rekey.journal" ]; then
                    if [ -e "$D/VAULT.new" ]; then before_commit=$((before_commit + 1)); else after_commit=$((after_commit + 1)); fi
                  fi
                  a=$("$V" --vault "$D" get db app) || { echo "round $i: private get failed"; exit 1; }
                  b=$("$V" --vault "$D" --group shared get cache key) || { echo "round $i: shared get failed"; exit 1; }
                  [ "$a" = "private secret" ] || { echo "round $i: private is '$a'"; exit 1; }
                  [ "$b" = "shared secret" ] || { echo "round $i: shared is '$b'"; exit 1; }
                  left=$(cd "$D" && ls -A . groups/* | grep -E '\\.new$|^rekey\\.journal$')
                  [ -z "$left" ] || { echo "round $i: left over: $left"; exit 1; }
                  [ "$before" = "$(sha256sum "$D/master.key")" ] || changed=$((changed + 1))
                done
                echo "$before_commit $after_commit $changed $span"
                """
            let result = try scratch.shell(script)
            try #require(result.status == 0, "\(result.text) \(result.errors)")
            let counts = result.text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            try #require(counts.count == 4, "\(result.text)")
            print(
                "FIGURE rekey-kill: 60 rounds of a rekey killed within \(counts[3]) µs: \(counts[0]) left VAULT.new (rolled back), "
                    + "\(counts[1]) a journal without it (rolled forward), \(counts[2]) ended under the new key")
            // Kills landed on both sides of the commit point, and some rekeys finished (or rolled forward) and
            // some did not: recovery in both directions was exercised.
            #expect(counts[2] > 0 && counts[2] < 60, "\(result.text)")
            #expect(counts[0] + counts[1] > 0, "no kill left an interrupted rekey: \(result.text)")
        }
    }
}
