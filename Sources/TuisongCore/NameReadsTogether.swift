/// A plugin's per-message lookup by name (does the receiver exist, what is the sender's nick),
/// sent together for the messages that ask while others are being read, where each read is a
/// round trip (`SharedDatabase.statementsAreRoundTrips`): one read of the names of every
/// waiting call of an app, each call then answered with its own names' values. Elsewhere, and
/// for long lists, each call reads alone, as it would without this. A chat load's lookups were
/// a round trip a message each on PostgreSQL (issue #47).
public final class NameReadsTogether<Value: Sendable>: Sendable {
    /// Reads the values of those of `names` that have one, in the app.
    public typealias Read = @Sendable (_ appID: Int64, _ names: [String]) async throws -> [String: Value]

    struct Request: Sendable {
        var appID: Int64
        var names: [String]
    }

    /// Calls naming more than this read alone.
    public static var longList: Int { 64 }

    private let read: Read
    private let together: StoreBatcher<Request, [String: Value]>?

    public init(_ database: any SharedDatabase, read: @escaping Read) {
        self.read = read
        together =
            database.statementsAreRoundTrips
            ? StoreBatcher(concurrency: 2, maxBatch: 256) { requests in await Self.readTogether(requests, read) }
            : nil
    }

    /// The values of those of `names` that have one.
    public func values(appID: Int64, names: [String]) async throws -> [String: Value] {
        guard !names.isEmpty else { return [:] }
        guard let together, names.count <= Self.longList else { return try await read(appID, names) }
        return try await together.submit(Request(appID: appID, names: names))
    }

    private static func readTogether(_ requests: [Request], _ read: Read) async -> [Result<[String: Value], any Error>]
    {
        var byApp: [Int64: [Int]] = [:]
        for (index, request) in requests.enumerated() { byApp[request.appID, default: []].append(index) }
        var results = [Result<[String: Value], any Error>?](repeating: nil, count: requests.count)
        for (appID, indexes) in byApp {
            var names: [String] = []
            var seen: Set<String> = []
            for index in indexes {
                for name in requests[index].names where seen.insert(name).inserted { names.append(name) }
            }
            do {
                let values = try await read(appID, names)
                for index in indexes {
                    var own: [String: Value] = [:]
                    for name in requests[index].names { own[name] = values[name] }
                    results[index] = .success(own)
                }
            } catch {
                for index in indexes { results[index] = .failure(error) }
            }
        }
        return results.map { $0 ?? .failure(StoreError(.unavailable, "a name read was not answered")) }
    }
}
