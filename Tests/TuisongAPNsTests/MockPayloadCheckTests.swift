import Testing

@testable import TuisongAPNsLookAlike
@testable import TuisongLookAlikeKit

@Suite("APNs mock request checks without sockets")
struct MockPayloadCheckTests {
    @Test(
        "JSON objects are accepted",
        arguments: [
            "{}", #"{"aps":{"alert":"hi"}}"#, " \n{\"a\":[1,-2.5e+3,0.1,true,false,null,{}],\"b\":\"\\u00e9\\n\"} \t",
            #"{"emoji":"推送 🚀"}"#, #"{"n":0,"m":-0,"e":1E9}"#,
        ])
    func acceptsObjects(_ text: String) {
        #expect(JSONObjectValidator.isJSONObject(Array(text.utf8)))
    }

    @Test(
        "anything else is refused",
        arguments: [
            "", "[]", "\"text\"", "42", "null", "{", #"{"a":}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{a:1}"#,
            #"{"a":01}"#, #"{"a":1.}"#, #"{"a":tru}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "{}{}", "{} x",
            "{\"a\":\"\u{01}\"}",
        ])
    func refusesOthers(_ text: String) {
        #expect(!JSONObjectValidator.isJSONObject(Array(text.utf8)))
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(!JSONObjectValidator.isJSONObject(Array(#"{"a":""#.utf8) + [0xC3] + Array(#""}"#.utf8)))
        #expect(!JSONObjectValidator.isJSONObject(Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8)))
    }

    @Test("nesting deeper than the limit is refused instead of exhausting the stack")
    func deepNesting() {
        let deep = #"{"a":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        #expect(!JSONObjectValidator.isJSONObject(Array(deep.utf8)))
        let fine = #"{"a":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(JSONObjectValidator.isJSONObject(Array(fine.utf8)))
    }

    @Test("generated apns-ids are canonical lower-case version 4 UUIDs, and unique")
    func generatedUUIDs() {
        var generator = APNsIDGenerator()
        let ids = (0..<1000).map { _ in APNsRequestValidator.makeUUID(using: &generator) }
        #expect(Set(ids).count == 1000)
        for id in ids {
            #expect(APNsRequestValidator.isCanonicalLowercaseUUID(id))
            #expect(Array(id)[14] == "4")
        }
        #expect(!APNsRequestValidator.isCanonicalLowercaseUUID("123e4567e89b12d3a456426614174000"))
        #expect(!APNsRequestValidator.isCanonicalLowercaseUUID("123e4567-e89b-12d3-a456-42661417400g"))
    }

    @Test("the longest matching token prefix wins")
    func longestPrefix() {
        let faults = TokenPrefixFaults([
            "4": .init(status: 500, reason: "InternalServerError"),
            "400BAD": .init(status: 400, reason: "BadDeviceToken"),
            "410": .init(status: 410, reason: "Unregistered"),
        ])
        #expect(faults.fault(forDeviceToken: "400bad00")?.reason == "BadDeviceToken")
        #expect(faults.fault(forDeviceToken: "410000")?.reason == "Unregistered")
        #expect(faults.fault(forDeviceToken: "4abc")?.reason == "InternalServerError")
        #expect(faults.fault(forDeviceToken: "ABCD") == nil)
    }

    @Test("latency timers fire in deadline order, ties in insertion order")
    func timerOrder() {
        var heap = TimerHeap()
        let deadlines: [UInt64] = [50, 10, 40, 10, 30, 20, 60, 0]
        for (index, deadline) in deadlines.enumerated() {
            heap.insert(deadline: deadline, connectionID: UInt64(index), streamID: 1)
        }
        #expect(heap.popDue(now: 5).map(\.connectionID) == 7)
        #expect(heap.popDue(now: 5) == nil)
        var order: [UInt64] = []
        while let entry = heap.popDue(now: 100) { order.append(entry.connectionID) }
        #expect(order == [1, 3, 5, 4, 2, 0, 6])
        #expect(heap.isEmpty)
    }

    @Test("the output queue keeps bytes in order across growth and partial consumption")
    func byteQueue() {
        let queue = ByteQueue(capacity: 8)
        var expected: [UInt8] = []
        var next: UInt8 = 0
        for round in 0..<50 {
            let chunk = (0..<(round % 13 + 1)).map { _ in
                next &+= 1
                return next
            }
            chunk.withUnsafeBufferPointer { queue.append($0.baseAddress!, count: $0.count) }
            expected += chunk
            let take = min(queue.count, round % 7)
            #expect(Array(UnsafeBufferPointer(start: queue.readable, count: take)) == Array(expected.prefix(take)))
            queue.consume(take)
            expected.removeFirst(take)
            #expect(queue.count == expected.count)
        }
        #expect(Array(UnsafeBufferPointer(start: queue.readable, count: queue.count)) == expected)
    }
}
