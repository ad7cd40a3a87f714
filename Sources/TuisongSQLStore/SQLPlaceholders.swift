import TuisongCore

/// SQL written with `?` placeholders (a plugin's, `SharedDatabase`) in another dialect's
/// placeholders: the same lexing for every database, the placeholder the dialect's.
package enum SQLPlaceholders {
    /// `sql` with each `?` outside quotes (`'…'`, `"…"`, `E'…'`) and comments (`-- …`, `/* … */`)
    /// replaced by `dialect`'s placeholder of its position (PostgreSQL's `$1`, `$2`, … in order;
    /// SQLite's `?` again).
    package static func numbered(_ sql: String, for dialect: any SQLDialect) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 16)
        var scalars = sql.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        var number = 0
        func next() -> Unicode.Scalar? {
            if let scalar = pending {
                pending = nil
                return scalar
            }
            return scalars.next()
        }
        while let scalar = next() {
            switch scalar {
            case "?":
                number += 1
                output += dialect.placeholder(number)
            case "'", "\"":
                // Up to the closing quote; a doubled quote is one quote inside. Backslashes in
                // E'…' strings escape a quote too.
                let escapes = scalar == "'" && output.unicodeScalars.last.map { $0 == "E" || $0 == "e" } == true
                output.unicodeScalars.append(scalar)
                while let inside = next() {
                    output.unicodeScalars.append(inside)
                    if escapes && inside == "\\" {
                        if let escaped = next() { output.unicodeScalars.append(escaped) }
                    } else if inside == scalar {
                        guard let following = next() else { break }
                        if following == scalar {
                            output.unicodeScalars.append(following)
                        } else {
                            pending = following
                            break
                        }
                    }
                }
            case "-", "/":
                // A comment (`--` to the line's end, `/* … */`) is copied as it stands: a `?` in it
                // is no placeholder.
                let (opens, closes): (Unicode.Scalar, (Unicode.Scalar, Unicode.Scalar) -> Bool) =
                    scalar == "-"
                    ? ("-", { _, inside in inside == "\n" })
                    : (
                        "*",
                        { previous, inside in
                            previous == "*" && inside == "/"
                        }
                    )
                output.unicodeScalars.append(scalar)
                guard let following = next() else { break }
                guard following == opens else {
                    pending = following
                    break
                }
                output.unicodeScalars.append(following)
                var previous: Unicode.Scalar = " "
                while let inside = next() {
                    output.unicodeScalars.append(inside)
                    if closes(previous, inside) { break }
                    previous = inside
                }
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
