import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongFCM
@testable import TuisongHarmony
@testable import TuisongHuawei

/// The Android services' own size limits (docs/reference/android.md §12): each transport skips
/// what its service would refuse for its size as `payload_too_large`, and never sends it; the
/// look-alikes (which refuse it as the services do) see no request.
@Suite struct ServiceLimitTests {
    /// An alert whose custom data alone is `bytes` long.
    static func alert(dataBytes bytes: Int) -> PushContent {
        PushContent(title: "Hi", body: "Hello", data: ["blob": .string(String(repeating: "a", count: bytes))])
    }

    @Test func fcmHuaweiHonorOPPOAndHarmonySkipWhatTheirServiceWouldRefuse() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let big = Self.alert(dataBytes: 5000)
        #expect(SendReason.payloadTooLarge.description == "payload_too_large")

        let fcm = harness.fcm(credential: harness.fcmCredential())
        #expect(
            await fcm.outcomes(of: harness.batch(["f-1", "f-2"], content: big)) == [
                .skipped(.payloadTooLarge), .skipped(.payloadTooLarge),
            ])
        #expect(harness.server.androidStatistics[.fcm].sendRequests == 0)
        #expect(await fcm.outcomes(of: harness.batch(["f-3"])).allSatisfy(\.isDelivered))

        let huawei = harness.huawei(credential: harness.huaweiCredential(), tokensPerRequest: 100)
        #expect(await huawei.outcomes(of: harness.batch(["h-1"], content: big)) == [.skipped(.payloadTooLarge)])
        #expect(harness.server.androidStatistics[.huawei].sendRequests == 0)
        #expect(await huawei.outcomes(of: harness.batch(["h-2"])).allSatisfy(\.isDelivered))

        let honor = harness.honor(credential: harness.honorCredential())
        #expect(await honor.outcomes(of: harness.batch(["o-1"], content: big)) == [.skipped(.payloadTooLarge)])
        #expect(harness.server.androidStatistics[.honor].sendRequests == 0)

        let oppo = harness.oppo(credential: harness.oppoCredential())
        #expect(await oppo.outcomes(of: harness.batch(["op-1"], content: big)) == [.skipped(.payloadTooLarge)])
        #expect(harness.server.androidStatistics[.oppo].sendRequests == 0)
        #expect(await oppo.outcomes(of: harness.batch(["op-2"])).allSatisfy(\.isDelivered))

        let harmony = harness.harmony(credential: harness.harmonyCredential(try harness.trustedHarmonyAccount()))
        #expect(
            await harmony.outcomes(of: harness.batch(["MAMzLg-1"], content: big)) == [.skipped(.payloadTooLarge)])
        #expect(harness.server.androidStatistics.harmony.sendRequests == 0)
        #expect(await harmony.outcomes(of: harness.batch(["MAMzLg-2"])).allSatisfy(\.isDelivered))
    }

    /// The limit is the service's, to the byte: the look-alike (Huawei's 4,096 bytes without the
    /// tokens, FCM's 4,096 of data and texts) takes the largest message the transport sends.
    @Test func theLargestMessageSentIsOneTheServiceTakes() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let service = HuaweiService(baseURL: harness.baseURL, tokenURL: harness.baseURL + "/oauth2/v3/token")
        let credential = ChannelCredential(
            id: 1, channel: .huawei, vendorAppID: "1", clientID: "c", secret: [])
        func size(_ content: PushContent) -> Int {
            service.body(
                service.template(
                    content: content, headers: PushHeaders(), environment: .production, credential: credential,
                    now: Date()),
                tokens: []
            ).count - 1
        }
        let base = size(Self.alert(dataBytes: 0))
        let atLimit = Self.alert(dataBytes: pushKitBodyLimit - base)
        #expect(size(atLimit) == pushKitBodyLimit)
        let huawei = harness.huawei(credential: harness.huaweiCredential(), tokensPerRequest: 100)
        #expect(await huawei.outcomes(of: harness.batch(["h-1", "h-2"], content: atLimit)).allSatisfy(\.isDelivered))
        #expect(
            await huawei.outcomes(
                of: harness.batch(["h-3"], content: Self.alert(dataBytes: pushKitBodyLimit - base + 1)))
                == [.skipped(.payloadTooLarge)])

        // FCM: the data's keys and values with the notification's texts.
        func fcmBytes(_ content: PushContent) -> Int {
            FCMMessage.Template(content: content, headers: PushHeaders(), now: Date()).payloadBytes
        }
        let fcmBase = fcmBytes(Self.alert(dataBytes: 0))
        #expect(fcmBase == "Hi".utf8.count + "Hello".utf8.count + "blob".utf8.count)
        let fcmAtLimit = Self.alert(dataBytes: FCMMessage.payloadLimit - fcmBase)
        #expect(fcmBytes(fcmAtLimit) == FCMMessage.payloadLimit)
        let fcm = harness.fcm(credential: harness.fcmCredential())
        #expect(await fcm.outcomes(of: harness.batch(["f-1"], content: fcmAtLimit)).allSatisfy(\.isDelivered))
        #expect(
            await fcm.outcomes(
                of: harness.batch(["f-2"], content: Self.alert(dataBytes: FCMMessage.payloadLimit - fcmBase + 1)))
                == [.skipped(.payloadTooLarge)])
    }
}
