import Foundation
import Testing

@testable import TuisongHTTP

/// A web root with one file per content type, a sub-folder, a hidden file and symlinks
/// leading inside and outside, next to a secret outside the root.
struct WebRoot {
    let base: URL
    var root: URL { base.appendingPathComponent("web") }

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tuisong-web-\(UUID().uuidString)")
        let files = FileManager.default
        try files.createDirectory(
            at: base.appendingPathComponent("web/sub"), withIntermediateDirectories: true)
        try files.createDirectory(
            at: base.appendingPathComponent("outside"), withIntermediateDirectories: true)
        let contents: [String: String] = [
            "web/index.html": "<h1>console</h1>",
            "web/app.js": "console.log('hi')",
            "web/style.css": "body{}",
            "web/data.json": #"{"a":1}"#,
            "web/logo.svg": "<svg/>",
            "web/img.png": "PNG",
            "web/favicon.ico": "ICO",
            "web/font.woff2": "WOFF2",
            "web/notes.txt": "notes",
            "web/sub/index.html": "<h1>sub</h1>",
            "web/.hidden": "hidden",
            "outside/secret.txt": "secret",
        ]
        for (path, text) in contents {
            try text.write(to: base.appendingPathComponent(path), atomically: true, encoding: .utf8)
        }
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("link-out").path,
            withDestinationPath: "../outside/secret.txt")
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("dir-out").path, withDestinationPath: "../outside")
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("link-in.js").path, withDestinationPath: "app.js")
    }

    func remove() {
        try? FileManager.default.removeItem(at: base)
    }
}

@Suite("Static files")
struct StaticFilesTests {
    func withStaticServer(_ body: (Int, WebRoot) async throws -> Void) async throws {
        let web = try WebRoot()
        defer { web.remove() }
        let router = Router()
        router.add(.GET, "/healthz") { _ in .text("ok") }
        router.setStaticFiles(try StaticFiles(root: web.root.path))
        try await withServer(router: router) { server in try await body(server.port, web) }
    }

    @Test("content types, index.html, caching headers")
    func contentTypes() async throws {
        try await withStaticServer { port, _ in
            let expected: [(String, String, String)] = [
                ("/", "text/html; charset=utf-8", "<h1>console</h1>"),
                ("/index.html", "text/html; charset=utf-8", "<h1>console</h1>"),
                ("/app.js", "text/javascript; charset=utf-8", "console.log('hi')"),
                ("/style.css", "text/css; charset=utf-8", "body{}"),
                ("/data.json", "application/json", #"{"a":1}"#),
                ("/logo.svg", "image/svg+xml", "<svg/>"),
                ("/img.png", "image/png", "PNG"),
                ("/favicon.ico", "image/x-icon", "ICO"),
                ("/font.woff2", "font/woff2", "WOFF2"),
                ("/notes.txt", "text/plain; charset=utf-8", "notes"),
                ("/sub", "text/html; charset=utf-8", "<h1>sub</h1>"),
                ("/sub/", "text/html; charset=utf-8", "<h1>sub</h1>"),
                ("/link-in.js", "text/javascript; charset=utf-8", "console.log('hi')"),
            ]
            for (path, type, body) in expected {
                let response = try await fetch(port: port, "GET", path)
                #expect(response.status == 200, "\(path)")
                #expect(response.header("Content-Type") == type, "\(path)")
                #expect(response.text == body, "\(path)")
                #expect(response.header("Cache-Control") == "no-cache", "\(path)")
                #expect(response.header("ETag")?.hasPrefix("\"") == true, "\(path)")
                #expect(response.header("Last-Modified")?.hasSuffix(" GMT") == true, "\(path)")
                #expect(response.header("X-Content-Type-Options") == "nosniff", "\(path)")
                #expect(response.header("X-Frame-Options") == "DENY", "\(path)")
                #expect(response.header("Content-Security-Policy") == "frame-ancestors 'none'", "\(path)")
            }
            // Routes still win over files.
            #expect(try await fetch(port: port, "GET", "/healthz").text == "ok")
            let head = try await fetch(port: port, "HEAD", "/app.js")
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "17")
            #expect(try await fetch(port: port, "POST", "/app.js").status == 404)
        }
    }

    @Test("If-None-Match and If-Modified-Since answer 304; a changed file a new ETag")
    func conditionalRequests() async throws {
        try await withStaticServer { port, web in
            let first = try await fetch(port: port, "GET", "/notes.txt")
            let etag = try #require(first.header("ETag"))
            let lastModified = try #require(first.header("Last-Modified"))

            let matched = try await fetch(
                port: port, "GET", "/notes.txt", headers: [("If-None-Match", etag)])
            #expect(matched.status == 304)
            #expect(matched.body.isEmpty)
            #expect(matched.header("ETag") == etag)
            let listed = try await fetch(
                port: port, "GET", "/notes.txt", headers: [("If-None-Match", "\"x\", W/\(etag)")])
            #expect(listed.status == 304)
            let other = try await fetch(
                port: port, "GET", "/notes.txt", headers: [("If-None-Match", "\"other\"")])
            #expect(other.status == 200)
            let since = try await fetch(
                port: port, "GET", "/notes.txt", headers: [("If-Modified-Since", lastModified)])
            #expect(since.status == 304)
            let older = try await fetch(
                port: port, "GET", "/notes.txt",
                headers: [("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")])
            #expect(older.status == 200)
            #expect(older.text == "notes")

            let notes = web.root.appendingPathComponent("notes.txt")
            try "changed notes".write(to: notes, atomically: false, encoding: .utf8)
            // A later modification time, as a change shows, without waiting for the clock to move.
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: notes.path)
            let changed = try await fetch(
                port: port, "GET", "/notes.txt", headers: [("If-None-Match", etag)])
            #expect(changed.status == 200)
            #expect(changed.text == "changed notes")
            #expect(changed.header("ETag") != etag)
        }
    }

    @Test("no way out of the root")
    func traversal() async throws {
        try await withStaticServer { port, _ in
            let attempts = [
                "/../outside/secret.txt",
                "/sub/../../outside/secret.txt",
                "/%2e%2e/outside/secret.txt",
                "/%2E%2E/outside/secret.txt",
                "/sub/%2e%2e/%2e%2e/outside/secret.txt",
                "/..%2foutside%2fsecret.txt",
                "/sub%2f..%2f..%2foutside%2fsecret.txt",
                "/%2foutside/secret.txt",
                "/app.js%00.html",
                "/app.js%00",
                "/link-out",
                "/dir-out/secret.txt",
                "/.hidden",
                "/./app.js",
                "/sub/..",
                "/missing.txt",
                "/..%5coutside%5csecret.txt",
            ]
            for path in attempts {
                let response = try await fetch(port: port, "GET", path)
                #expect(response.status == 404, "\(path) → \(response.status)")
                #expect(
                    !response.text.contains("secret") || response.text.contains("not_found"),
                    "\(path)")
            }
            // curl's own path normalisation is switched off so the dots reach the server.
            let raw = try await curl([
                "--path-as-is", "http://127.0.0.1:\(port)/../../outside/secret.txt",
            ])
            #expect(!raw.output.contains("secret\n") && raw.output != "secret")
        }
    }

    @Test("a missing or non-directory root is refused")
    func badRoot() throws {
        #expect(throws: HTTPServerError.self) { try StaticFiles(root: "/nonexistent/tuisong") }
        #expect(throws: HTTPServerError.self) { try StaticFiles(root: "/etc/hostname") }
        #expect(try StaticFiles(root: "/tmp/../tmp").root == "/tmp")
    }

    @Test("dates round-trip in IMF-fixdate")
    func httpDates() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
    }
}
