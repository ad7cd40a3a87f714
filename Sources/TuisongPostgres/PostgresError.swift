/// A PostgreSQL failure with what the server or libpq said.
///
/// `sqlState` is the server's five-character SQLSTATE (`"23505"` unique violation, `"42601"`
/// syntax error, `"40001"` serialization failure, `"57P01"` backend terminated…) when the server
/// answered; nil for failures on the client side (connecting, a lost connection, misuse).
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure; a struct over a private enum so kinds can be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Hashable {
            case connect, server, connectionLost, usage, closed
        }

        private let base: Base

        /// The connection could not be established (bad URL, no server, authentication).
        public static let connect = Kind(base: .connect)
        /// The server refused a statement: see `sqlState`.
        public static let server = Kind(base: .server)
        /// The connection broke (or was never usable) while a statement was in flight.
        public static let connectionLost = Kind(base: .connectionLost)
        /// The API was used in a way libpq refuses (a statement that is not a COPY given to
        /// `copyIn`, a pipeline on a connection in a transaction that failed…).
        public static let usage = Kind(base: .usage)
        /// The pool or listener was shut down.
        public static let closed = Kind(base: .closed)

        public var description: String {
            switch base {
            case .connect: "connect"
            case .server: "server"
            case .connectionLost: "connectionLost"
            case .usage: "usage"
            case .closed: "closed"
            }
        }
    }

    public var kind: Kind
    public var sqlState: String?
    /// The primary message (the server's, or libpq's `PQerrorMessage` without its trailing newline).
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The constraint a violation names (`23505`, `23503`…), when the server says.
    public var constraint: String?

    public init(
        kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
    }

    public var description: String {
        var text = "PostgreSQL \(kind)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }

    /// 23505: a row with this key exists.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
