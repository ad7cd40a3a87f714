import Synchronization

/// Answers one request. Handlers run as Swift tasks: the server starts each one on the
/// libmicrohttpd thread that read the request and lets it run there until its first
/// suspension point, so a handler that answers without awaiting costs no thread hop. Do
/// blocking work (file or database I/O through synchronous APIs, long computations) behind an
/// `await` that leaves the thread, never inline.
public typealias Handler = @Sendable (Request) async -> Response

/// Runs around the handler of every routed request (routes, static files, OPTIONS): it may
/// look at the request, bind task-local values for the handler, time it, and change the
/// answer. `next` is the handler. Errors the router answers itself without a handler (no route,
/// wrong method, body too large, a malformed target, a request timeout) do not pass through it.
public typealias Middleware = @Sendable (_ request: Request, _ next: Handler) async -> Response

/// Maps method + path to a handler.
///
/// Patterns are `/`-separated literal segments and `{name}` parameters:
///
///     router.add(.PUT, "/api/v1/devices/{token}") { request in
///         .json(["token": request.pathParameters["token"]!])
///     }
///     router.add(.POST, "/{org}/{app}/users") { ... }
///
/// Matching rules:
/// - A literal segment beats a parameter at the same depth (`/api/v1/devices/x` goes to the
///   native route, not to `/{org}/{app}/...`). When the literal branch cannot reach any route,
///   matching backtracks and tries the parameter.
/// - A path is matched segment by segment after percent-decoding each segment, so `%2F`
///   stays inside its segment. Empty segments are ignored: `/a/b/`, `/a//b` and `/a/b` are
///   the same path, i.e. a trailing slash never matters and a parameter never matches "".
///   `Request.path` agrees: runs of `/` are one `/` there (`//rest//x` is `/rest/x`), so the
///   error dialect chosen by prefix, and every prefix check a handler makes, see the path the
///   request was routed by.
/// - A path that reaches routes but not for this method answers 405 with `Allow`. HEAD is
///   answered by the GET route (without a body) unless a HEAD route exists; OPTIONS is
///   answered with 204 and `Allow` unless an OPTIONS route exists.
/// - A path with no route answers 404 — or, for GET and HEAD, goes to the static files.
/// - A route group (`addGroup`) owns the paths its claim accepts: its routes are matched when
///   no route outside a group matches, and its error responder renders every error there.
/// Registering the same method and pattern again replaces the earlier handler. Routes and
/// responders should be set before the server starts; later changes apply to requests that
/// arrive afterwards.
public final class Router: Sendable {
    /// Every table ever published, newest last. Changes are rare (registration at start-up);
    /// keeping the old tables alive for the router's lifetime lets a request read the
    /// newest one through `published` without taking a lock: two server threads contending
    /// for a lock per request cost tail latency whenever the holder is preempted.
    private let tables: Mutex<[RouteTableSnapshot]>
    /// The newest entry of `tables`, as an unretained object pointer.
    private let published: Atomic<UInt>

    /// - Parameters:
    ///   - defaultBodyLimit: the largest request body a route accepts unless it sets its own.
    ///   - errorResponder: renders 400/404/405/413/503... on paths no route group claims.
    public init(
        defaultBodyLimit: Int = 1 << 20,
        errorResponder: @escaping ErrorResponder = Router.nativeJSONErrors
    ) {
        let first = RouteTableSnapshot(
            RouteTable(
                root: RouteNode(), defaultBodyLimit: defaultBodyLimit,
                defaultResponder: errorResponder, groups: [], prefixGroups: [], staticFiles: nil,
                middleware: nil))
        tables = Mutex([first])
        published = Atomic(UInt(bitPattern: Unmanaged.passUnretained(first).toOpaque()))
    }

    /// The native dialect: `{"error": {"code": "not_found", "message": "..."}}`.
    public static let nativeJSONErrors: ErrorResponder = { error, _ in
        nativeErrorResponse(error)
    }

    static func nativeErrorResponse(_ error: HTTPError) -> Response {
        struct Envelope: Encodable {
            struct Detail: Encodable {
                let code: String
                let message: String
            }
            let error: Detail
        }
        return .json(
            Envelope(error: .init(code: error.code, message: error.message)), status: error.status)
    }

    /// Registers `handler` for `method` on `pattern`. `bodyLimit` overrides the router's
    /// default; a larger body answers 413 before the handler runs.
    public func add(
        _ method: HTTPMethod, _ pattern: String, bodyLimit: Int? = nil,
        handler: @escaping Handler
    ) {
        let (route, path) = Route.parse(pattern, bodyLimit: bodyLimit, handler: handler)
        update { table in
            table.root.insert(route, method: method, along: path[...])
        }
    }

    /// Mounts a group of routes that owns the paths `claims` accepts and answers every error
    /// on them in its own dialect: the 404 of a claimed path no route of the group matches,
    /// the 405 of a wrong method, a 413, and whatever its handlers return as `Response.error`.
    ///
    ///     router.addGroup(name: "acme", claims: { path in configured.contains(orgApp(path)) },
    ///                     errorResponder: AcmeError.render) { group in
    ///         group.add(.POST, "/{org}/{app}/token") { request in … }
    ///     }
    ///
    /// `claims` sees the percent-decoded path (`Request.path`) and runs on the server's
    /// threads for every request no route outside a group matches, so it must be quick and
    /// must not block (read a snapshot of the configured names, never the database).
    /// Routes outside any group win: a group cannot take over `/api/v1/...`. Groups are asked
    /// in the order they were added; adding a group again under the same `name` replaces it.
    public func addGroup(
        name: String, claims: @escaping @Sendable (String) -> Bool, errorResponder: @escaping ErrorResponder,
        _ build: (RouteGroup) -> Void
    ) {
        let group = RouteGroup(name: name)
        build(group)
        let entry = RouteGroupEntry(name: name, claims: claims, responder: errorResponder, root: group.root)
        update { table in
            if let index = table.groups.firstIndex(where: { $0.name == name }) {
                table.groups[index] = entry
            } else {
                table.groups.append(entry)
            }
        }
    }

    /// Renders errors for paths starting with `prefix` (e.g. `/rest/` for a vendor's dialect),
    /// whichever route answers them. A convenience over `addGroup` for routes added with
    /// `add`: a group with no routes of its own, claiming the prefix for its errors only
    /// (unmatched GETs still go to the static files). Groups added with `addGroup` are asked
    /// first, then prefixes, the longest matching prefix winning.
    public func setErrorResponder(forPrefix prefix: String, _ responder: @escaping ErrorResponder) {
        update { table in
            table.prefixGroups.removeAll { $0.name == prefix }
            table.prefixGroups.append(
                RouteGroupEntry(
                    name: prefix, claims: { $0.hasPrefix(prefix) }, responder: responder, root: RouteNode()))
            table.prefixGroups.sort { $0.name.utf8.count > $1.name.utf8.count }
        }
    }

    /// Wraps every routed request's handler in `middleware` (nil removes it).
    public func setMiddleware(_ middleware: Middleware?) {
        update { $0.middleware = middleware }
    }

    /// Serves `files` for GET and HEAD requests that match no route.
    public func setStaticFiles(_ files: StaticFiles) {
        update { $0.staticFiles = files }
    }

    /// The name of the route group (`addGroup`) that claims `path`, or nil: which mounted API a
    /// request belongs to, for labels. Asks the groups' claims, as routing does.
    public func groupName(claiming path: String) -> String? {
        snapshot().table.claimingGroup(path)?.name
    }

    /// Renders `error` in the dialect of `request`'s path, making sure a 405 carries `Allow`.
    public func renderError(_ error: HTTPError, for request: Request) -> Response {
        snapshot().table.renderError(error, for: request)
    }

    /// Routes and answers `request` in-process, as the server would (body limit included, but
    /// not the request timeout). For testing routes without a socket.
    public func respond(to request: Request) async -> Response {
        let table = snapshot().table
        var request = request
        switch table.resolve(method: request.method, path: request.path, segments: request.segments) {
        case .failure(let error):
            return table.renderError(error, for: request)
        case .success(let target):
            if request.body.count > target.bodyLimit {
                return table.renderError(.payloadTooLarge(limit: target.bodyLimit), for: request)
            }
            request.pathParameters = target.parameters
            var response = table.resolveError(in: await target.handler(request), for: request)
            if request.method == .HEAD {
                response.headers.replaceOrAdd(
                    name: "Content-Length", value: String(response.body.count))
                response.body = []
            }
            return response
        }
    }

    /// A consistent view of the routes for one request.
    func snapshot() -> RouteTableSnapshot {
        let address = published.load(ordering: .acquiring)
        // Safe: `tables` retains every snapshot ever published until the router is freed.
        return Unmanaged<RouteTableSnapshot>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
            .takeUnretainedValue()
    }

    private func update(_ change: (inout RouteTable) -> Void) {
        tables.withLock { tables in
            var table = tables[tables.count - 1].table
            change(&table)
            let next = RouteTableSnapshot(table)
            tables.append(next)
            published.store(
                UInt(bitPattern: Unmanaged.passUnretained(next).toOpaque()), ordering: .releasing)
        }
    }
}

final class RouteTableSnapshot: Sendable {
    let table: RouteTable

    init(_ table: RouteTable) {
        self.table = table
    }
}

/// One registered route.
struct Route: Sendable {
    let pattern: String
    let parameterNames: [String]
    let handler: Handler
    let bodyLimit: Int?

    /// The route of `pattern` and the trie steps that lead to it.
    static func parse(_ pattern: String, bodyLimit: Int?, handler: @escaping Handler) -> (Route, [RouteNode.Step]) {
        var parameterNames: [String] = []
        var path: [RouteNode.Step] = []
        for segment in pattern.split(separator: "/", omittingEmptySubsequences: true) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                parameterNames.append(String(segment.dropFirst().dropLast()))
                path.append(.parameter)
            } else {
                path.append(.literal(String(segment)))
            }
        }
        return (Route(pattern: pattern, parameterNames: parameterNames, handler: handler, bodyLimit: bodyLimit), path)
    }
}

/// The routes of one group while `Router.addGroup` builds it; patterns and matching as for
/// `Router.add`.
public final class RouteGroup {
    public let name: String
    fileprivate var root = RouteNode()

    fileprivate init(name: String) {
        self.name = name
    }

    /// Registers `handler` for `method` on `pattern` inside the group.
    public func add(_ method: HTTPMethod, _ pattern: String, bodyLimit: Int? = nil, handler: @escaping Handler) {
        let (route, path) = Route.parse(pattern, bodyLimit: bodyLimit, handler: handler)
        root.insert(route, method: method, along: path[...])
    }
}

/// A mounted group: what it claims, how it answers errors, its routes.
struct RouteGroupEntry: Sendable {
    let name: String
    let claims: @Sendable (String) -> Bool
    let responder: ErrorResponder
    let root: RouteNode
}

/// What a request resolved to: the handler to run with its body limit and parameters.
struct ResolvedRoute: Sendable {
    let handler: Handler
    let bodyLimit: Int
    let parameters: [String: String]
}

/// The routing trie. A value type so the router can hand out snapshots without locking for
/// the duration of a request.
struct RouteNode: Sendable {
    enum Step {
        case literal(String)
        case parameter
    }

    var literals: [String: RouteNode] = [:]
    /// Zero or one node: the parameter child (an array because a struct cannot contain itself).
    var parameter: [RouteNode] = []
    var routes: [HTTPMethod: Route] = [:]

    mutating func insert(_ route: Route, method: HTTPMethod, along path: ArraySlice<Step>) {
        guard let step = path.first else {
            routes[method] = route
            return
        }
        switch step {
        case .literal(let name):
            literals[name, default: RouteNode()].insert(
                route, method: method, along: path.dropFirst())
        case .parameter:
            if parameter.isEmpty { parameter.append(RouteNode()) }
            parameter[0].insert(route, method: method, along: path.dropFirst())
        }
    }

    /// The deepest-literal-first node that has routes for exactly these segments, collecting
    /// the segments consumed by parameters.
    func match(_ segments: [String], from index: Int, captured: inout [String]) -> RouteNode? {
        if index == segments.count {
            return routes.isEmpty ? nil : self
        }
        if let child = literals[segments[index]],
            let found = child.match(segments, from: index + 1, captured: &captured)
        {
            return found
        }
        if let child = parameter.first {
            captured.append(segments[index])
            if let found = child.match(segments, from: index + 1, captured: &captured) {
                return found
            }
            captured.removeLast()
        }
        return nil
    }

    /// Methods this node answers, as sent in `Allow`.
    var allowedMethods: [HTTPMethod] {
        var methods = Set(routes.keys)
        if methods.contains(.GET) { methods.insert(.HEAD) }
        methods.insert(.OPTIONS)
        return methods.sorted { $0.rawValue < $1.rawValue }
    }
}

/// Everything the router knows, copied out under its lock once per request.
struct RouteTable: Sendable {
    var root: RouteNode
    var defaultBodyLimit: Int
    var defaultResponder: ErrorResponder
    /// `Router.addGroup`, in the order added.
    var groups: [RouteGroupEntry]
    /// `Router.setErrorResponder(forPrefix:)`, longest prefix first; no routes of their own.
    var prefixGroups: [RouteGroupEntry]
    var staticFiles: StaticFiles?
    var middleware: Middleware?

    func resolve(method: HTTPMethod, path: String, segments: [String]) -> Result<ResolvedRoute, HTTPError> {
        guard let middleware else { return resolveHandler(method: method, path: path, segments: segments) }
        return resolveHandler(method: method, path: path, segments: segments).map { route in
            let inner = route.handler
            return ResolvedRoute(
                handler: { request in await middleware(request, inner) }, bodyLimit: route.bodyLimit,
                parameters: route.parameters)
        }
    }

    private func resolveHandler(method: HTTPMethod, path: String, segments: [String]) -> Result<
        ResolvedRoute, HTTPError
    > {
        var captured: [String] = []
        if let node = root.match(segments, from: 0, captured: &captured) {
            return resolve(method: method, node: node, captured: captured)
        }
        if let group = claimingGroup(path) {
            captured.removeAll()
            guard let node = group.root.match(segments, from: 0, captured: &captured) else {
                return .failure(.notFound("no route for this path"))
            }
            return resolve(method: method, node: node, captured: captured)
        }
        if let staticFiles, method == .GET || method == .HEAD {
            let handler: Handler = { [self] request in
                do throws(HTTPError) {
                    return try await staticFiles.serve(request)
                } catch {
                    return renderError(error, for: request)
                }
            }
            return .success(ResolvedRoute(handler: handler, bodyLimit: defaultBodyLimit, parameters: [:]))
        }
        return .failure(.notFound("no route for this path"))
    }

    /// The route of `method` at `node`, or the 405 (OPTIONS answered with `Allow`).
    private func resolve(method: HTTPMethod, node: RouteNode, captured: [String]) -> Result<ResolvedRoute, HTTPError> {
        guard let route = node.routes[method] ?? (method == .HEAD ? node.routes[.GET] : nil) else {
            let allow = node.allowedMethods
            if method == .OPTIONS {
                let allowValue = allow.map(\.rawValue).joined(separator: ", ")
                return .success(
                    ResolvedRoute(
                        handler: { _ in Response(status: 204, headers: ["Allow": allowValue]) },
                        bodyLimit: defaultBodyLimit, parameters: [:]))
            }
            return .failure(.methodNotAllowed(allow: allow, method: method))
        }
        var parameters: [String: String] = [:]
        if !captured.isEmpty {
            parameters.reserveCapacity(captured.count)
            for (name, value) in zip(route.parameterNames, captured) {
                parameters[name] = value
            }
        }
        return .success(
            ResolvedRoute(
                handler: route.handler, bodyLimit: route.bodyLimit ?? defaultBodyLimit,
                parameters: parameters))
    }

    /// The first group (not prefix) that claims `path`.
    func claimingGroup(_ path: String) -> RouteGroupEntry? {
        for group in groups where group.claims(path) {
            return group
        }
        return nil
    }

    func errorResponder(forPath path: String) -> ErrorResponder {
        if let group = claimingGroup(path) { return group.responder }
        for group in prefixGroups where group.claims(path) {
            return group.responder
        }
        return defaultResponder
    }

    /// `response` itself, or the error it carries (`Response.error`) rendered for `request`.
    func resolveError(in response: Response, for request: Request) -> Response {
        guard let error = response.error else { return response }
        return renderError(error, for: request)
    }

    func renderError(_ error: HTTPError, for request: Request) -> Response {
        var response = errorResponder(forPath: request.path)(error, request)
        if response.error != nil {
            // A dialect that answers with `Response.error` would loop; use the native one.
            response = Router.nativeErrorResponse(error)
        }
        // Only on the 405 itself: a dialect that answers it otherwise (the admin API's 401
        // without a session) must not list the path's methods.
        if !error.allow.isEmpty && response.status == 405 && !response.headers.contains(name: "Allow") {
            response.headers.add(
                name: "Allow", value: error.allow.map(\.rawValue).joined(separator: ", "))
        }
        return response
    }
}
