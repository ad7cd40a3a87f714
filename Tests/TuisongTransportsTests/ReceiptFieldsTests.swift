import Foundation
import Testing
import TuisongCore
import TuisongHTTPClient
import TuisongTransportKit

@testable import TuisongOPPO
@testable import TuisongVivo
@testable import TuisongXiaomi

/// The receipt fields Xiaomi, OPPO and vivo share (`ReceiptFields`): comma-separated targets and
/// numbers given as JSON numbers or numeric strings, read once in the kit for all three.
@Suite struct ReceiptFieldsTests {
    static let moment = Date(timeIntervalSince1970: 1_750_000_000.5)

    @Test func aNumberMayComeAsANumberOrANumericString() {
        #expect(ReceiptFields.integer(.int(16)) == 16)
        #expect(ReceiptFields.integer(.string("16")) == 16)
        #expect(ReceiptFields.integer(.string("16a")) == nil)
        #expect(ReceiptFields.integer(.string("")) == nil)
        #expect(ReceiptFields.integer(.bool(true)) == nil)
        #expect(ReceiptFields.integer(nil) == nil)
        #expect(ReceiptFields.milliseconds(.int(1_750_000_000_500)) == Self.moment)
        #expect(ReceiptFields.milliseconds(.string("1750000000500")) == Self.moment)
        #expect(ReceiptFields.milliseconds(.string("yesterday")) == nil)
    }

    @Test func eachTargetOfTheListIsAReceiptBlanksAndEmptiesDropped() {
        let receipts = ReceiptFields.receipts(
            targets: "regid1, regid2,,regid3 ,", tag: "t42.abc", outcome: .arrived, at: Self.moment)
        #expect(receipts.map(\.token) == ["regid1", "regid2", "regid3"])
        #expect(receipts.allSatisfy { $0.tag == "t42.abc" && $0.outcome == .arrived && $0.at == Self.moment })
        #expect(ReceiptFields.receipts(targets: " , ", tag: "x", outcome: .clicked, at: nil).isEmpty)
    }

    @Test func xiaomiReadsItsFormsDataWithEitherNumberForm() throws {
        let data = #"""
            {"msg1":{"param":"s7.mac","type":1,"targets":"a,b","timestamp":1750000000500},
             "msg2":{"param":"t8.mac","type":"16","targets":"c","timestamp":"1750000000500"}}
            """#
        let receipts = try XiaomiReceipts.parse(FormEncoding.encode([("data", data)]))
            .sorted { $0.token < $1.token }
        #expect(receipts.map(\.token) == ["a", "b", "c"])
        #expect(receipts.map(\.tag) == ["s7.mac", "s7.mac", "t8.mac"])
        #expect(receipts[0].outcome == .arrived)
        #expect(receipts[2].outcome == .notShown(reason: "invalid_target", invalidatesDevice: true))
        #expect(receipts.allSatisfy { $0.at == Self.moment })
        #expect(throws: ReceiptFormatError.self) {
            try XiaomiReceipts.parse(FormEncoding.encode([("data", #"{"m":{"type":"one","targets":"a"}}"#)]))
        }
    }

    @Test func oppoReadsItsEventsWithEitherTimeForm() throws {
        let body = #"""
            [{"param":"t9.mac","eventType":"push_arrive","registrationIds":"r1,r2","eventTime":"1750000000500"},
             {"param":"t9.mac","eventType":"click","registrationIds":"r3","eventTime":1750000000500},
             {"param":"t9.mac","eventType":"regid_invalid","registrationIds":"r4"}]
            """#
        let receipts = try OPPOReceipts.parse(Array(body.utf8))
        #expect(receipts.map(\.token) == ["r1", "r2", "r3", "r4"])
        #expect(receipts.map(\.outcome.name) == ["arrived", "arrived", "clicked", "invalid_target"])
        #expect(receipts.map(\.at) == [Self.moment, Self.moment, Self.moment, nil])
    }

    @Test func vivoReadsItsTasksWithEitherNumberForm() throws {
        let body = #"""
            {"task1":{"param":"s3.mac","targets":"v1,v2","ackTime":1750000000500,"ackType":"2"},
             "task2":{"param":"s3.mac","targets":"v3","ackTime":"1750000000500","ackType":1}}
            """#
        let receipts = try VivoReceipts.parse(Array(body.utf8)).sorted { $0.token < $1.token }
        #expect(receipts.map(\.token) == ["v1", "v2", "v3"])
        #expect(receipts.map(\.outcome) == [.clicked, .clicked, .arrived])
        #expect(receipts.allSatisfy { $0.at == Self.moment && $0.tag == "s3.mac" })
        #expect(throws: ReceiptFormatError.self) {
            try VivoReceipts.parse(Array(#"{"task":{"targets":"v1","ackType":"x"}}"#.utf8))
        }
    }
}
