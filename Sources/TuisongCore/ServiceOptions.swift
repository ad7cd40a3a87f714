import Foundation

/// How a transport checks and normalises its own entry of a message's per-service options
/// (`PushOptions.services[<channel name>]`): the native API's object under the transport's
/// name (`"<name>": {…}`), or what a vendor plugin builds from its own dialect. Declared by
/// the transport (`ChannelDeclaration.options`), so the gateway and the plugins check an entry
/// without knowing its keys; the transport reads the entry back when it renders a push.
public struct ServiceOptionsRule: Sendable {
    /// The entry as stored, or nil when it asks for nothing (the message then has no entry);
    /// throws one sentence about the first thing wrong.
    public let normalise: @Sendable (JSONValue) throws(ServiceOptionsError) -> JSONValue?

    public init(normalise: @escaping @Sendable (JSONValue) throws(ServiceOptionsError) -> JSONValue?) {
        self.normalise = normalise
    }
}

/// What is wrong with a per-service options object, worded so that each caller can put its own
/// path in front: the native API says `"<name>.category" must be one of IM, …`, a vendor
/// plugin its own field's name.
public struct ServiceOptionsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key of the object the problem is about; nil: the object itself.
    public var field: String?
    /// What is wrong, after the field's name: `must be true or false`. Empty for an unknown key.
    public var problem: String

    public init(field: String?, _ problem: String) {
        self.field = field
        self.problem = problem
    }

    /// A key the transport does not take.
    public static func unknown(_ field: String) -> ServiceOptionsError { ServiceOptionsError(field: field, "") }

    public var isUnknownField: Bool { problem.isEmpty }

    /// The sentence with the object's path in front: `"<name>.category" must be one of …`,
    /// `unknown field "<name>.sound"`, `"<name>" must be an object`.
    public func sentence(at path: String) -> String {
        let full = field.map { "\(path).\($0)" } ?? path
        return isUnknownField ? "unknown field \"\(full)\"" : "\"\(full)\" \(problem)"
    }

    public var description: String { sentence(at: "options") }
}

/// Reads an options object of known keys, for a transport's `ServiceOptionsRule`: an object,
/// no key it does not know, each value of its type.
public struct ServiceOptionsReader: Sendable {
    public let members: [String: JSONValue]

    public init(_ value: JSONValue, known: Set<String>) throws(ServiceOptionsError) {
        guard case .object(let members) = value else { throw ServiceOptionsError(field: nil, "must be an object") }
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) { throw .unknown(unknown) }
        self.members = members
    }

    /// A string of 1…`limit` UTF-8 bytes; nil when absent.
    public func string(_ key: String, limit: Int) throws(ServiceOptionsError) -> String? {
        guard let raw = members[key] else { return nil }
        guard case .string(let value) = raw, !value.isEmpty, value.utf8.count <= limit else {
            throw ServiceOptionsError(field: key, "must be a string of 1–\(limit) bytes")
        }
        return value
    }

    /// A JSON integer within `range`; nil when absent.
    public func integer(_ key: String, in range: ClosedRange<Int64>) throws(ServiceOptionsError) -> Int64? {
        guard let raw = members[key] else { return nil }
        guard let value = raw.intValue, range.contains(value) else {
            throw ServiceOptionsError(field: key, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `true` or `false`; false when absent.
    public func bool(_ key: String) throws(ServiceOptionsError) -> Bool {
        guard let raw = members[key] else { return false }
        guard case .bool(let value) = raw else { throw ServiceOptionsError(field: key, "must be true or false") }
        return value
    }
}

extension PushChannel {
    /// Checks and normalises `entry` by the rule this channel's transport declared in this
    /// process (`ChannelCatalog`), for a vendor plugin building a transport's entry from its
    /// own dialect; the entry as given when no transport of this build declares a rule (nothing
    /// here reads it).
    public func normaliseOptions(_ entry: JSONValue) throws(ServiceOptionsError) -> JSONValue? {
        guard let rule = declaration.options else { return entry }
        return try rule.normalise(entry)
    }
}
