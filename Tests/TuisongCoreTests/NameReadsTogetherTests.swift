import Synchronization
import Testing
import TuisongCore

/// `NameReadsTogether`: calls made while a read is at the database go together, each answered
/// with its own names; where reads are not round trips, each call reads alone.
@Suite struct NameReadsTogetherTests {
    /// A database that only says whether its statements are round trips.
    struct Database: SharedDatabase {
        let statementsAreRoundTrips: Bool
        var dialect: any SQLDialect { fatalError("not read") }
        func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
            fatalError("not written")
        }
        func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
            fatalError("not read")
        }
    }

    /// Reads answer each name's length, after a pause; app 13 fails; every read is recorded.
    final class Reads: Sendable {
        let made = Mutex<[(app: Int64, names: [String])]>([])

        func read(_ appID: Int64, _ names: [String]) async throws -> [String: Int] {
            made.withLock { $0.append((appID, names)) }
            try await Task.sleep(for: .milliseconds(20))
            if appID == 13 { throw StoreError(.unavailable, "app 13 cannot be read") }
            return Dictionary(uniqueKeysWithValues: names.filter { $0 != "nobody" }.map { ($0, $0.count) })
        }
    }

    func callAtOnce(_ reads: NameReadsTogether<Int>) async -> [Int: Result<[String: Int], any Error>] {
        await withTaskGroup(of: (Int, Result<[String: Int], any Error>).self) { group in
            for n in 0..<30 {
                group.addTask {
                    let app: Int64 = n % 10 == 7 ? 13 : Int64(n % 2)
                    do {
                        return (n, .success(try await reads.values(appID: app, names: ["u\(n)", "nobody", "x"])))
                    } catch {
                        return (n, .failure(error))
                    }
                }
            }
            var results: [Int: Result<[String: Int], any Error>] = [:]
            for await (n, result) in group { results[n] = result }
            return results
        }
    }

    @Test func callsMadeAtOnceAreReadTogetherAndAnsweredEachWithItsOwnNames() async throws {
        let reads = Reads()
        let together = NameReadsTogether<Int>(Database(statementsAreRoundTrips: true)) { try await reads.read($0, $1) }
        let results = await callAtOnce(together)
        for n in 0..<30 {
            if n % 10 == 7 {
                #expect(throws: StoreError.self) { try results[n]?.get() }
            } else {
                #expect(try results[n]?.get() == ["u\(n)": "u\(n)".count, "x": 1], "call \(n)")
            }
        }
        let made = reads.made.withLock { $0 }
        #expect(made.count < 30, "\(made.count) reads for 30 calls")
        #expect(made.allSatisfy { Set($0.names).count == $0.names.count }, "each name once a read")
        #expect(!made.contains { read in read.app != 13 && read.names.contains { $0 == "u7" || $0 == "u17" } })

        // A long list reads alone; nothing to read, no read.
        let long = (0...NameReadsTogether<Int>.longList).map { "n\($0)" }
        #expect(try await together.values(appID: 1, names: long).count == long.count)
        #expect(try await together.values(appID: 1, names: []) == [:])
        #expect(reads.made.withLock { $0.count } == made.count + 1)
    }

    @Test func whereReadsAreNotRoundTripsEachCallReadsAlone() async throws {
        let reads = Reads()
        let alone = NameReadsTogether<Int>(Database(statementsAreRoundTrips: false)) { try await reads.read($0, $1) }
        let results = await callAtOnce(alone)
        #expect(try results[4]?.get() == ["u4": 2, "x": 1])
        #expect(reads.made.withLock { $0.count } == 30)
    }
}
