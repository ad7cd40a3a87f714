import Foundation
import TuisongCore

/// The pages of the two list audiences (device ids, tokens), written once: which ids or tokens
/// a page asks for, and its entries with their skip reasons from the rows the backend read for
/// them. Only the read is each backend's: a list goes in SQLite's `IN (…)` and PostgreSQL's one
/// array parameter, and each decodes its own rows on the fan-out's hot path (`decode` answers
/// the entry and whether the device is invalidated).
package enum AudienceLists {
    /// The ids of a `.devices` page: distinct, after the cursor, in order, at most `limit`.
    package static func wantedDevices(_ ids: [Int64], after cursor: Int64, limit: Int) -> [Int64] {
        Array(Set(ids).filter { $0 > cursor }.sorted().prefix(limit))
    }

    /// A `.devices` page, in id order (an id is its position): an id no row answers is skipped
    /// `UnknownDevice`, an invalidated device `DeviceInvalidated`, a device of another
    /// environment than the push's (any channel) `other_environment`.
    package static func devicePage<Row>(
        _ wanted: [Int64], found: [Int64: Row], environment: PushEnvironment?,
        decode: (Row) throws -> (entry: AudienceEntry, invalidated: Bool)
    ) rethrows -> [AudienceEntry] {
        let unregistered = ChannelCatalog.shared.unregisteredChannel
        return try wanted.map { id in
            guard let row = found[id] else {
                return AudienceEntry(
                    position: id, deviceID: nil, token: "", environment: environment ?? .production,
                    skipReason: "UnknownDevice", channel: unregistered)
            }
            var (entry, invalidated) = try decode(row)
            if invalidated { entry.skipReason = "DeviceInvalidated" }
            entry.skipUnless(in: environment)
            return entry
        }
    }

    /// A page of a query audience (a tag, all devices, accounts) read without an environment
    /// filter: its devices of the other environment are skipped `other_environment`, so a
    /// sandbox push counts the production devices it left out rather than losing them.
    package static func environmentPage(_ entries: [AudienceEntry], environment: PushEnvironment?)
        -> [AudienceEntry]
    {
        guard environment != nil else { return entries }
        return entries.map { entry in
            var entry = entry
            entry.skipUnless(in: environment)
            return entry
        }
    }

    /// The tokens of a `.tokens` page: after the cursor (a token's position is its 1-based
    /// index in the list), at most `limit`, and the index of the first.
    package static func tokenSlice(_ tokens: [String], after cursor: Int64, limit: Int) -> (
        start: Int, tokens: [String]
    ) {
        let start = Int(min(max(cursor, 0), Int64(tokens.count)))
        return (start, Array(tokens[start..<min(tokens.count, start + limit)]))
    }

    /// A `.tokens` page, in list order. An unregistered token goes to the channel that takes
    /// bare tokens when its rule accepts it (`ChannelCatalog.bareTokenChannel`: the service whose
    /// tokens name it by their shape), in the page's environment, production when it has none;
    /// any other token must be registered for its channel to be known (`UnknownDevice`). A
    /// registered device is what it registered as: skipped `DeviceInvalidated` when
    /// invalidated, `other_environment` when the push's environment is not its own.
    package static func tokenPage<Row>(
        _ slice: [String], start: Int, registered: [String: Row], environment: PushEnvironment?,
        decode: (Row) throws -> (entry: AudienceEntry, invalidated: Bool)
    ) rethrows -> [AudienceEntry] {
        let bareTokenChannel = ChannelCatalog.shared.bareTokenChannel
        let unregistered = bareTokenChannel?.channel ?? .unregistered
        return try slice.enumerated().map { offset, token in
            let position = Int64(start + offset + 1)
            guard let row = registered[token] else {
                var entry = AudienceEntry(
                    position: position, deviceID: nil, token: token, environment: environment ?? .production,
                    channel: unregistered)
                if bareTokenChannel?.tokenRule.validate(token) == nil { entry.skipReason = "UnknownDevice" }
                return entry
            }
            var (entry, invalidated) = try decode(row)
            entry.position = position
            if invalidated { entry.skipReason = "DeviceInvalidated" }
            entry.skipUnless(in: environment)
            return entry
        }
    }
}
