import BaiduProvider
import Foundation
import Testing
import TuisongCore
import TuisongPlugin
import TuisongPluginTestKit

@testable import TuisongGateway

/// Every list of push services people read (the CLI's help, a vendor's setting, the metrics'
/// help) comes from `PushChannel.allCases`: a new transport appears in all of them at once.
@Suite(.serialized) struct ChannelListTests {
    /// The lists are the declared channels': declared before any test reads them.
    init() { TransportRegistry.install() }

    static let everyService = "APNs, FCM, Huawei, Honor, Xiaomi, OPPO, vivo and HarmonyOS"
    static let androidNames = "fcm, huawei, honor, xiaomi, oppo, vivo or harmony"

    @Test func theListIsPushChannelsOwn() {
        #expect(PushChannel.list() == Self.everyService)
        #expect(PushChannel.list(PushChannel.android, \.rawValue, "or") == Self.androidNames)
        #expect(PushChannel.list([.apns]) == "APNs")
        #expect(PushChannel.android == PushChannel.allCases.filter { $0 != .apns })
    }

    @Test func theCLIHelpNamesEveryService() throws {
        func help(_ arguments: [String]) throws -> String {
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: CrashRecoveryTests.binary)
            process.arguments = arguments + ["--help"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            // ArgumentParser wraps long lines: compare the words, not the line breaks.
            return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        #expect(try help([]).contains("delivering through \(Self.everyService)."))
        #expect(try help(["credential"]).contains("Manage push credentials (\(Self.everyService))"))
        #expect(try help(["credential", "add"]).contains("apns (default), \(Self.androidNames)."))
        #expect(try help(["device", "import"]).contains("apns (hex tokens, the default), \(Self.androidNames)."))
        #expect(try help(["apns-mock"]).contains("Run the bundled \(Self.everyService) look-alikes"))
    }

    @Test func baiduAndroidSettingNamesEveryAndroidService() throws {
        let setting = try #require(BaiduProvider.settings.first { $0.key == "android_channel" })
        // Every Android phone service; not HarmonyOS NEXT, whose phones run no Android app.
        let baiduNames = "fcm, huawei, honor, xiaomi, oppo or vivo"
        #expect(setting.label.en == "Android push service (\(baiduNames))")
        #expect(setting.label.zh == "Android 推送通道（fcm、huawei、honor、xiaomi、oppo、vivo）")
        #expect(setting.problem("vivo") == nil)
        #expect(setting.problem("harmony") == "must be \(baiduNames)")
        #expect(setting.problem("apns") == "must be \(baiduNames)")
    }

    @Test func theHeldDeliveriesHelpNamesEveryService() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let metrics = String(decoding: try await http("GET", "\(gw.baseURL)/metrics").body, as: UTF8.self)
        #expect(
            metrics.contains(
                "# HELP tuisong_held_deliveries Deliveries held until their app has a working credential for their service (APNs, FCM, Huawei, Honor, Xiaomi, OPPO, vivo or HarmonyOS)."
            ))
        #expect(metrics.contains("push service (apns, fcm, huawei, honor, xiaomi, oppo, vivo, harmony)"))
    }
}
