import Foundation
import Testing
import TuisongGatewayTestKit

@testable import TuisongGateway

/// `data/` as earlier versions left it (0755) is tightened on start when it holds only
/// Tuisong's files, and left alone (with a warning) when it holds anything else.
@Suite(.serialized) struct DataDirectoryTests {
    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }

    /// Starts a gateway whose database lives in `data/` under its directory, created 0755 with
    /// `extraFile` in it first.
    func start(extraFile: String?) async throws -> (RunningGateway, String) {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-gw-\(UUID().uuidString)")
        let dataDirectory = directory.appending(path: "data").path
        try? FileManager.default.createDirectory(
            atPath: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(dataDirectory, 0o755)
        _ = FileManager.default.createFile(atPath: dataDirectory + "/tuisong.db", contents: nil)
        chmod(dataDirectory + "/tuisong.db", 0o644)
        if let extraFile {
            _ = FileManager.default.createFile(atPath: dataDirectory + "/" + extraFile, contents: nil)
        }
        let gateway = try await TestGateway.start(
            environment: [
                "TUISONG_DATABASE_PATH": dataDirectory + "/tuisong.db",
                "TUISONG_SECURITY_MASTER_KEY_FILE": dataDirectory + "/master.key",
                "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": dataDirectory + "/initial-admin-password",
            ], directory: directory)
        return (gateway, dataDirectory)
    }

    @Test func anOpenDataDirectoryOfTuisongFilesIsTightenedOnStart() async throws {
        let (gateway, data) = try await start(extraFile: nil)
        #expect(mode(data) == 0o700)
        #expect(mode(data + "/tuisong.db") == 0o600)
        #expect(mode(data + "/tuisong.db-wal") == 0o600)
        #expect(mode(data + "/tuisong.db-shm") == 0o600)
        #expect(mode(data + "/master.key") == 0o600)
        await gateway.stop()
    }

    /// The look-alike command's files (named as the port's default look-alike declares:
    /// `apns-mock-setup.json`) are Tuisong's too.
    @Test func theLookAlikeCommandsFilesAreTuisongs() async throws {
        let (gateway, data) = try await start(extraFile: "apns-mock-setup.json")
        #expect(mode(data) == 0o700)
        await gateway.stop()
    }

    @Test func aSharedDirectoryIsLeftAlone() async throws {
        let (gateway, data) = try await start(extraFile: "someone-elses-file")
        #expect(mode(data) == 0o755)
        #expect(mode(data + "/tuisong.db") == 0o600)  // the files are still made private
        await gateway.stop()
    }
}
