import Foundation

/// A notification template of one app: a title and a body with numbered placeholders
/// (`{0}`, `{1}`, …) filled from arguments at send time.
///
///     let t = PushTemplate(id: 1, appID: 1, name: "shipped", titlePattern: "订单 {0}",
///                          bodyPattern: "{1} 已发货")
///     t.render(arguments: ["A-17", "小米手环"])  // ("订单 A-17", "小米手环 已发货")
public struct PushTemplate: Sendable, Hashable, Codable {
    public var id: Int64
    public var appID: Int64
    /// Unique within the app; what callers pick a template by.
    public var name: String
    public var titlePattern: String
    public var bodyPattern: String

    public init(id: Int64, appID: Int64, name: String, titlePattern: String, bodyPattern: String) {
        self.id = id
        self.appID = appID
        self.name = name
        self.titlePattern = titlePattern
        self.bodyPattern = bodyPattern
    }

    /// Title and body with the placeholders filled (see `TemplatePattern.render`).
    public func render(arguments: [String]) -> (title: String, body: String) {
        (
            TemplatePattern.render(titlePattern, arguments: arguments),
            TemplatePattern.render(bodyPattern, arguments: arguments)
        )
    }

    /// The highest placeholder index used in title or body plus one: how many arguments
    /// the template wants.
    public var argumentCount: Int {
        max(TemplatePattern.argumentCount(titlePattern), TemplatePattern.argumentCount(bodyPattern))
    }
}

/// The placeholder syntax of templates, kept in one place so the console's live preview
/// (`web/js/template.js`) can follow the same rules:
/// - `{n}` (n = decimal digits) is replaced by argument n, counting from 0;
/// - a placeholder without an argument is left as written, so a missing value shows;
/// - `{{` and `}}` stand for literal braces;
/// - any other brace is literal.
public enum TemplatePattern {
    public static func render(_ pattern: String, arguments: [String]) -> String {
        var output = ""
        forEachPart(of: pattern) { part in
            switch part {
            case .text(let text): output += text
            case .placeholder(let index, let written):
                output += index < arguments.count ? arguments[index] : String(written)
            }
        }
        return output
    }

    /// The highest placeholder index in `pattern` plus one (0 without placeholders).
    public static func argumentCount(_ pattern: String) -> Int {
        var count = 0
        forEachPart(of: pattern) { part in
            if case .placeholder(let index, _) = part { count = max(count, index + 1) }
        }
        return count
    }

    enum Part {
        case text(Substring)
        case placeholder(index: Int, written: Substring)
    }

    static func forEachPart(of pattern: String, _ body: (Part) -> Void) {
        var index = pattern.startIndex
        var textStart = index
        func flushText(upTo end: String.Index) {
            if textStart < end { body(.text(pattern[textStart..<end])) }
        }
        while index < pattern.endIndex {
            let character = pattern[index]
            let next = pattern.index(after: index)
            if character == "{" || character == "}", next < pattern.endIndex, pattern[next] == character {
                // An escaped brace: emit the text so far plus one brace, skip the pair.
                flushText(upTo: next)
                index = pattern.index(after: next)
                textStart = index
                continue
            }
            if character == "{" {
                var digitsEnd = next
                while digitsEnd < pattern.endIndex, pattern[digitsEnd].isASCII, pattern[digitsEnd].isNumber {
                    digitsEnd = pattern.index(after: digitsEnd)
                }
                // At most 4 digits: `{99999999999999999999}` is text, not an index to overflow on.
                let digitCount = pattern.distance(from: next, to: digitsEnd)
                if digitCount > 0, digitCount <= 4, digitsEnd < pattern.endIndex, pattern[digitsEnd] == "}",
                    let number = Int(pattern[next..<digitsEnd])
                {
                    flushText(upTo: index)
                    let end = pattern.index(after: digitsEnd)
                    body(.placeholder(index: number, written: pattern[index..<end]))
                    index = end
                    textStart = index
                    continue
                }
            }
            index = next
        }
        flushText(upTo: pattern.endIndex)
    }
}

/// Templates, scoped to an app.
public protocol TemplateStore: Sendable {
    /// The app's templates ordered by name.
    func templates(appID: Int64) async throws -> [PushTemplate]
    func template(id: Int64) async throws -> PushTemplate?
    func template(appID: Int64, name: String) async throws -> PushTemplate?
    /// Throws `StoreError.conflict` when the app already has a template of that name and
    /// `.notFound` for an unknown app.
    func createTemplate(appID: Int64, name: String, titlePattern: String, bodyPattern: String) async throws
        -> PushTemplate
    /// Replaces name and patterns (the app stays). `.notFound` for an unknown id, `.conflict`
    /// when the new name is taken.
    func updateTemplate(_ template: PushTemplate) async throws
    /// `false` when there was none.
    func deleteTemplate(id: Int64) async throws -> Bool
}
