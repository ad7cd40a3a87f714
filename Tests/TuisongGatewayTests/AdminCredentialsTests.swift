import Foundation
import Testing
@testable import TuisongGateway
import TuisongCore

@Suite struct AdminCredentialUploadParsingTests {
    private func parse(_ object: [String: Any]) throws -> AdminCredentialUpload {
        try AdminCredentialsAPI.upload(appID: 7, AdminBody(object: object))
    }

    private func field(_ object: [String: Any]) -> String? {
        do {
            _ = try parse(object)
            return nil
        } catch let error as AdminError {
            return error.field
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func p8NeedsKeyAndTeamIdsAndDropsAnyPassword() throws {
        let file = Data("-----BEGIN PRIVATE KEY-----\nMIG...\n-----END PRIVATE KEY-----\n".utf8).base64EncodedString()
        let upload = try parse([
            "kind": "p8", "environment": "sandbox", "file": file, "key_id": " abc123defg ", "team_id": "TEAM123456",
            "password": "ignored",
        ])
        #expect(upload.appID == 7)
        #expect(upload.kind == .p8)
        #expect(upload.environment == .sandbox)
        #expect(upload.keyID == "ABC123DEFG")
        #expect(upload.teamID == "TEAM123456")
        #expect(upload.password == nil)
        #expect(String(decoding: upload.file, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))

        #expect(field(["kind": "p8", "environment": "sandbox", "file": file, "team_id": "TEAM123456"]) == "key_id")
        #expect(field(["kind": "p8", "environment": "sandbox", "file": file, "key_id": "ABC123DEFG", "team_id": "TEAM-12345"]) == "team_id")
    }

    @Test func p12KeepsItsPasswordEvenWhenEmpty() throws {
        let file = Data([0x30, 0x82, 0x01, 0x00]).base64EncodedString()
        #expect(try parse(["kind": "p12", "environment": "production", "file": file, "password": "pw"]).password == "pw")
        #expect(try parse(["kind": "p12", "environment": "production", "file": file]).password == "")
        #expect(try parse(["kind": "pem", "environment": "production", "file": file]).password == nil)
    }

    @Test func refusesWhatIsNotACredentialUpload() {
        let file = Data("x".utf8).base64EncodedString()
        #expect(field(["kind": "jks", "environment": "sandbox", "file": file]) == "kind")
        #expect(field(["kind": "p12", "environment": "staging", "file": file]) == "environment")
        #expect(field(["kind": "p12", "environment": "sandbox"]) == "file")
        #expect(field(["kind": "p12", "environment": "sandbox", "file": "!!!"]) == "file")
        let huge = Data(repeating: 0x41, count: AdminCredentialsAPI.maxFileBytes + 1).base64EncodedString()
        #expect(field(["kind": "p12", "environment": "sandbox", "file": huge]) == "file")
    }
}
