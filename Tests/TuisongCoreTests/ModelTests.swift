import Testing

@testable import TuisongCore

@Suite struct DeviceTokenTests {
    @Test func acceptsHexAndLowercases() throws {
        let raw = String(repeating: "AB", count: 32)
        let token = try #require(DeviceToken(raw))
        #expect(token.hex == String(repeating: "ab", count: 32))
    }

    @Test(arguments: [
        "", String(repeating: "a", count: 62), String(repeating: "a", count: 65),
        String(repeating: "a", count: 202), String(repeating: "g", count: 64),
        String(repeating: "a", count: 63) + " ",
    ])
    func rejects(_ raw: String) {
        #expect(DeviceToken(raw) == nil)
    }

    @Test func acceptsBounds() {
        #expect(DeviceToken(String(repeating: "0", count: 64)) != nil)
        #expect(DeviceToken(String(repeating: "f", count: 200)) != nil)
    }
}

@Suite struct TagNameTests {
    @Test(arguments: ["a", "vip_2024", "beta-users.cn", "北京", "用户-组_1", String(repeating: "x", count: 128)])
    func accepts(_ raw: String) {
        #expect(TagName(raw) != nil)
    }

    @Test(arguments: ["", "has space", "semi;colon", "slash/", String(repeating: "x", count: 129), "emoji😀"])
    func rejects(_ raw: String) {
        #expect(TagName(raw) == nil)
    }
}
